#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "base/utils.h"
#include "sandbox/layout.h"
#include "sandbox/manage.h"
#include "sandbox/profile.h"
#include "sandbox/sandbox.h"
#include "sandbox_cmd.h"

static const char create_usage[] =
    "Usage: brig sandbox create [options] ID\n\n"
    "Start a sandbox: brig-init as PID 1 on the shared read-only tree, with a\n"
    "/mnt/data workspace of its own.\n\n"
    "Options:\n"
    "      --data-size SIZE   quota of /mnt/data (default 8G; K, M, G, T suffixes)\n"
    "      --memory SIZE      memory limit (default 4G)\n"
    "      --pids N           process limit (default 1024)\n"
    "      --cpus N           CPU quota in CPUs, e.g. 1.5 (default 2)\n"
    "      --network packages|none|PATH  loopback with the package proxy at\n"
    "                         127.0.0.1:3128 (default where an allow-list is set),\n"
    "                         loopback only, or the network namespace at PATH\n"
    "      --rootfs NAME|DIR the tree: `small` (the default, /var/lib/brig/rootfs),\n"
    "                         `full` (make rootfs PROFILE=full), another NAME\n"
    "                         (/var/lib/brig/rootfs-NAME), or a directory\n"
    "      --template NAME    the tree of a template (brig sandbox template), with\n"
    "                         its image's Env, WorkingDir and User as defaults\n"
    "      --services FILE    brig-init config with [program:NAME] services\n"
    "      --malloc-conf CONF jemalloc's MALLOC_CONF for every process\n"
    "      --userns auto|host a user namespace with a host id range of its own\n"
    "                         (default), or the host's ids\n"
    "      --ttl DURATION     remove it DURATION after its create (30s, 5m, 2h)\n"
    "      --idle-timeout DURATION  remove it DURATION after its last exec,\n"
    "                         session input or file copied in or out\n"
    "      --exec-timeout DURATION  the default --timeout of its execs\n"
    "  -h, --help             print this help\n\n"
    "A sandbox with --ttl or --idle-timeout is removed by brig-reaper(8),\n"
    "which brig starts and which outlives this command.\n";

/* The flags: val 0 for a knob of brig_sandbox_setting, 1 for a limit of
 * brig_sandbox_lifetime_setting, each by its own name. */
static const struct option create_opts[] = {
    { "data-size", required_argument, NULL, 0 },
    { "memory", required_argument, NULL, 0 },
    { "pids", required_argument, NULL, 0 },
    { "cpus", required_argument, NULL, 0 },
    { "network", required_argument, NULL, 0 },
    { "rootfs", required_argument, NULL, 0 },
    { "template", required_argument, NULL, 0 },
    { "services", required_argument, NULL, 0 },
    { "malloc-conf", required_argument, NULL, 0 },
    { "userns", required_argument, NULL, 0 },
    { "ttl", required_argument, NULL, 1 },
    { "idle-timeout", required_argument, NULL, 1 },
    { "exec-timeout", required_argument, NULL, 1 },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};

static int apply_flag(const char *key, struct brig_profile_settings *s,
                      struct brig_sandbox_create_options *o, bool lifetime, brig_error_t *err)
{
    char shown[32];
    snprintf(shown, sizeof shown, "--%s", key);
    if (!lifetime)
        return brig_sandbox_setting(s, key, shown, optarg, true, err);
    int ms;
    if (brig_parse_duration_ms(optarg, &ms) < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s` (30s, 5m, 2h)", shown, optarg);
    return brig_sandbox_lifetime_setting(o, key, shown, optarg, ms, err);
}

static int parse_create(int argc, char **argv, struct brig_profile_settings *s,
                        struct brig_sandbox_create_options *o)
{
    int c, index;
    unsigned trees = 0;
    while ((c = getopt_long(argc, argv, "+h", create_opts, &index)) != -1) {
        if (c == 'h')
            return brig_usage(create_usage);
        if (c != 0 && c != 1)
            return brig_bad_option(argv);
        const char *name = create_opts[index].name;
        if ((strcmp(name, "rootfs") == 0 || strcmp(name, "template") == 0) && trees++)
            return brig_fail_msg("sandbox create: --rootfs and --template name one tree: "
                                 "give one of them, once");
        brig_error_t err = NULL;
        if (apply_flag(create_opts[index].name, s, o, c == 1, &err) < 0)
            return brig_error_wrap(&err, "sandbox create"), brig_fail(&err);
    }
    return brig_parse_args(argc, argv, 1, 1, "sandbox id");
}

int sandbox_cmd_create(int argc, char **argv)
{
    struct brig_profile_settings s;
    brig_error_t err = NULL, warning = NULL;
    if (brig_profile_settings_default(&s, &err) < 0)
        return brig_fail(&err);
    struct brig_sandbox_create_options o = {
        .root = brig_globals.root,
        .no_cgroup = brig_globals.no_cgroup,
        .settings = &s,
    };
    int r = parse_create(argc, argv, &s, &o);
    if (r == BRIG_CLI_GO_ON) {
        o.id = argv[optind];
        r = brig_sandbox_create(&o, &warning, &err) < 0 ? brig_fail(&err) : 0;
        /* A failed poststart hook; after a failure, what its undo could
         * not remove. */
        brig_warn(&warning);
    }
    brig_profile_settings_clear(&s);
    return r;
}
