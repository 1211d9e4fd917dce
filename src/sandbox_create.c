#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "sandbox/layout.h"
#include "sandbox/manage.h"
#include "sandbox/profile.h"
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

enum {
    OPT_DATA_SIZE = 600,
    OPT_MEMORY,
    OPT_PIDS,
    OPT_CPUS,
    OPT_NETWORK,
    OPT_ROOTFS,
    OPT_SERVICES,
    OPT_MALLOC_CONF,
    OPT_USERNS
};

static int set_path(char **field, const char *flag, const char *value)
{
    char *abs = realpath(value, NULL);
    if (abs == NULL)
        return brig_fail_msg("sandbox create: %s `%s`: %s", flag, value, strerror(errno));
    free(*field);
    *field = abs;
    return BRIG_CLI_GO_ON;
}

static int apply_flag(int c, char **argv, struct brig_profile_settings *s)
{
    int n;
    switch (c) {
    case OPT_DATA_SIZE:
        if (brig_profile_parse_size(optarg, &s->data_size) < 0 || s->data_size < (INT64_C(4) << 20))
            return brig_fail_msg("sandbox create: invalid --data-size `%s` (at least 4M)", optarg);
        return BRIG_CLI_GO_ON;
    case OPT_MEMORY:
        if (brig_profile_parse_size(optarg, &s->memory) < 0 || s->memory < (INT64_C(16) << 20))
            return brig_fail_msg("sandbox create: invalid --memory `%s` (at least 16M)", optarg);
        return BRIG_CLI_GO_ON;
    case OPT_PIDS:
        if (brig_parse_flag_uint("--pids", optarg, &n) != BRIG_CLI_GO_ON || n < 8)
            return brig_fail_msg("sandbox create: invalid --pids `%s` (at least 8)", optarg);
        s->pids = n;
        return BRIG_CLI_GO_ON;
    case OPT_CPUS:
        if (brig_profile_parse_cpus(optarg, &s->cpus_milli) < 0)
            return brig_fail_msg("sandbox create: invalid --cpus `%s`", optarg);
        return BRIG_CLI_GO_ON;
    case OPT_NETWORK:
        free(s->network);
        s->network = NULL;
        free(s->netns);
        s->netns = NULL;
        if (strcmp(optarg, BRIG_NETWORK_PACKAGES) == 0)
            return (s->network = strdup(optarg)) ? BRIG_CLI_GO_ON
                                                 : brig_fail_msg("sandbox create: out of memory");
        if (strcmp(optarg, BRIG_NETWORK_NONE) == 0)
            return BRIG_CLI_GO_ON;
        return set_path(&s->netns, "--network", optarg);
    case OPT_ROOTFS:
        return set_path(&s->rootfs, "--rootfs", optarg);
    case OPT_SERVICES:
        return set_path(&s->init_config, "--services", optarg);
    case OPT_MALLOC_CONF:
        free(s->malloc_conf);
        return (s->malloc_conf = strdup(optarg)) ? BRIG_CLI_GO_ON
                                                 : brig_fail_msg("sandbox create: out of memory");
    case OPT_USERNS:
        if (strcmp(optarg, BRIG_USERNS_AUTO) != 0 && strcmp(optarg, BRIG_USERNS_HOST) != 0)
            return brig_fail_msg("sandbox create: invalid --userns `%s` (auto or host)", optarg);
        free(s->userns);
        return (s->userns = strdup(optarg)) ? BRIG_CLI_GO_ON
                                            : brig_fail_msg("sandbox create: out of memory");
    default:
        return brig_bad_option(argv);
    }
}

static int parse_create(int argc, char **argv, struct brig_profile_settings *s)
{
    static const struct option opts[] = {
        { "data-size", required_argument, NULL, OPT_DATA_SIZE },
        { "memory", required_argument, NULL, OPT_MEMORY },
        { "pids", required_argument, NULL, OPT_PIDS },
        { "cpus", required_argument, NULL, OPT_CPUS },
        { "network", required_argument, NULL, OPT_NETWORK },
        { "rootfs", required_argument, NULL, OPT_ROOTFS },
        { "services", required_argument, NULL, OPT_SERVICES },
        { "malloc-conf", required_argument, NULL, OPT_MALLOC_CONF },
        { "userns", required_argument, NULL, OPT_USERNS },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(create_usage);
        int done = apply_flag(c, argv, s);
        if (done != BRIG_CLI_GO_ON)
            return done;
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
