#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
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
    "      --rootfs DIR       the tree (default /var/lib/brig/rootfs)\n"
    "      --services FILE    brig-init config with [program:NAME] services\n"
    "      --malloc-conf CONF jemalloc's MALLOC_CONF for every process\n"
    "      --userns auto|host a user namespace with a host id range of its own\n"
    "                         (default), or the host's ids\n"
    "  -h, --help             print this help\n";

/* The flags, each a knob of brig_sandbox_setting by its own name. */
static const struct option create_opts[] = {
    { "data-size", required_argument, NULL, 0 },
    { "memory", required_argument, NULL, 0 },
    { "pids", required_argument, NULL, 0 },
    { "cpus", required_argument, NULL, 0 },
    { "network", required_argument, NULL, 0 },
    { "rootfs", required_argument, NULL, 0 },
    { "services", required_argument, NULL, 0 },
    { "malloc-conf", required_argument, NULL, 0 },
    { "userns", required_argument, NULL, 0 },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};

static int parse_create(int argc, char **argv, struct brig_profile_settings *s)
{
    int c, index;
    while ((c = getopt_long(argc, argv, "+h", create_opts, &index)) != -1) {
        if (c == 'h')
            return brig_usage(create_usage);
        if (c != 0)
            return brig_bad_option(argv);
        const char *key = create_opts[index].name;
        char shown[32];
        snprintf(shown, sizeof shown, "--%s", key);
        brig_error_t err = NULL;
        if (brig_sandbox_setting(s, key, shown, optarg, true, &err) < 0)
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
    int r = parse_create(argc, argv, &s);
    if (r == BRIG_CLI_GO_ON) {
        struct brig_sandbox_create_options o = {
            .root = brig_globals.root,
            .id = argv[optind],
            .no_cgroup = brig_globals.no_cgroup,
            .settings = &s,
        };
        r = brig_sandbox_create(&o, &warning, &err) < 0 ? brig_fail(&err) : 0;
        /* A failed poststart hook; after a failure, what its undo could
         * not remove. */
        brig_warn(&warning);
    }
    brig_profile_settings_clear(&s);
    return r;
}
