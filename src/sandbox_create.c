#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
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
    "      --ttl DURATION     remove it DURATION after its create (30s, 5m, 2h)\n"
    "      --idle-timeout DURATION  remove it DURATION after its last exec,\n"
    "                         session input or file copied in or out\n"
    "      --exec-timeout DURATION  the default --timeout of its execs\n"
    "  -h, --help             print this help\n\n"
    "A sandbox with --ttl or --idle-timeout is removed by brig-reaper(8),\n"
    "which brig starts and which outlives this command.\n";

enum {
    OPT_DATA_SIZE = 600,
    OPT_MEMORY,
    OPT_PIDS,
    OPT_CPUS,
    OPT_NETWORK,
    OPT_ROOTFS,
    OPT_SERVICES,
    OPT_MALLOC_CONF,
    OPT_USERNS,
    OPT_TTL,
    OPT_IDLE_TIMEOUT,
    OPT_EXEC_TIMEOUT
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

/* --ttl, --idle-timeout, --exec-timeout: durations as `brig exec
 * --timeout` takes them. A sandbox's limits are a second at least: a
 * reaper could otherwise remove it while it is being made. */
static int apply_lifetime(int c, struct brig_sandbox_create_options *o)
{
    static const char *const flags[] = { "--ttl", "--idle-timeout", "--exec-timeout" };
    int64_t *fields[] = { &o->ttl_ms, &o->idle_ms, &o->exec_timeout_ms };
    int i = c - OPT_TTL, ms;
    int least = c == OPT_EXEC_TIMEOUT ? 1 : 1000;
    if (brig_parse_duration_ms(optarg, &ms) < 0 || ms < least)
        return brig_fail_msg("sandbox create: invalid %s `%s` (%s to 24h, e.g. 30s, 5m, 2h)",
                             flags[i], optarg, least == 1 ? "1ms" : "1s");
    *fields[i] = ms;
    return BRIG_CLI_GO_ON;
}

static int parse_create(int argc, char **argv, struct brig_profile_settings *s,
                        struct brig_sandbox_create_options *o)
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
        { "ttl", required_argument, NULL, OPT_TTL },
        { "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
        { "exec-timeout", required_argument, NULL, OPT_EXEC_TIMEOUT },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(create_usage);
        bool lifetime = c >= OPT_TTL && c <= OPT_EXEC_TIMEOUT;
        int done = lifetime ? apply_lifetime(c, o) : apply_flag(c, argv, s);
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

/* ---- exec ---- */

static const char exec_usage[] =
    "Usage: brig sandbox exec [options] ID [--] COMMAND [ARG...]\n\n"
    "Run a command in the sandbox as its user (uid 1000) in /mnt/data, with\n"
    "the sandbox's environment (LD_PRELOAD, MALLOC_CONF). Output streams as\n"
    "it comes. Exits with the command's status, 124 after --timeout.\n\n"
    "Options:\n"
    "      --timeout DURATION  kill the command's process group after DURATION\n"
    "                          (5s, 500ms, 2m)\n"
    "      --cwd DIR           working directory (default /mnt/data)\n"
    "  -e, --env NAME=VALUE    set an environment variable (repeatable)\n"
    "  -u, --user UID[:GID]    only 1000:1000, the sandbox's user, which every\n"
    "                          process in a sandbox runs as\n"
    "  -t, --tty               give the command a terminal\n"
    "  -h, --help              print this help\n";

int sandbox_cmd_exec(int argc, char **argv)
{
    enum { OPT_TIMEOUT = 700, OPT_CWD };
    static const struct option opts[] = {
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "cwd", required_argument, NULL, OPT_CWD },
        { "env", required_argument, NULL, 'e' },
        { "user", required_argument, NULL, 'u' },
        { "tty", no_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    /* The checked flags go on to `brig exec`, which does the work. */
    cleanup_free char **args = calloc(2 * (size_t) argc + 2, sizeof *args);
    if (args == NULL)
        return brig_fail_msg("sandbox exec: out of memory");
    int n = 0, c;
    args[n++] = (char *) "exec";
    while ((c = getopt_long(argc, argv, "+e:u:th", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TIMEOUT:
            args[n++] = (char *) "--timeout";
            args[n++] = optarg;
            break;
        case OPT_CWD:
            args[n++] = (char *) "--cwd";
            args[n++] = optarg;
            break;
        case 'e':
            args[n++] = (char *) "--env";
            args[n++] = optarg;
            break;
        case 'u':
            /* Every process in a sandbox runs as its user, whoever asks. */
            if (strcmp(optarg, "1000") != 0 && strcmp(optarg, "1000:1000") != 0)
                return brig_fail_msg("sandbox exec: --user `%s`: a sandbox runs every process as "
                                     "its user sandbox (1000:1000)",
                                     optarg);
            break;
        case 't':
            args[n++] = (char *) "--tty";
            break;
        case 'h':
            return brig_usage(exec_usage);
        default:
            return brig_bad_option(argv);
        }
    }
    if (optind >= argc)
        return brig_fail_msg(
            "sandbox exec: missing the sandbox id (see `brig sandbox exec --help`)");
    /* An id no sandbox can have fails here, as in every subcommand. */
    brig_error_t err = NULL;
    if (brig_sandbox_id_validate(argv[optind], &err) < 0)
        return brig_error_wrap(&err, "sandbox"), brig_fail(&err);
    args[n++] = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return brig_fail_msg("sandbox exec: missing the command to run");
    while (optind < argc)
        args[n++] = argv[optind++];
    args[n] = NULL;
    optind = 0;
    return brig_cmd_exec(n, args);
}
