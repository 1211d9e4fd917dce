#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "container/container.h"
#include "sandbox/profile.h"
#include "sandbox/sandbox.h"
#include "sandbox_cmd.h"
#include "spec/spec.h"
#include "base/utils.h"

static const char create_usage[] =
    "Usage: brig sandbox create [options] ID\n\n"
    "Start a sandbox: brig-init as PID 1 on the shared read-only tree, with a\n"
    "/mnt/data workspace of its own.\n\n"
    "Options:\n"
    "      --data-size SIZE   quota of /mnt/data (default 8G; K, M, G, T suffixes)\n"
    "      --memory SIZE      memory limit (default 4G)\n"
    "      --pids N           process limit (default 1024)\n"
    "      --cpus N           CPU quota in CPUs, e.g. 1.5 (default 2)\n"
    "      --network none|PATH  loopback only (default), or join the network\n"
    "                         namespace at PATH\n"
    "      --rootfs DIR       the tree (default /var/lib/brig/rootfs)\n"
    "      --services FILE    brig-init config with [program:NAME] services\n"
    "      --malloc-conf CONF jemalloc's MALLOC_CONF for every process\n"
    "  -h, --help             print this help\n";

enum { OPT_DATA_SIZE = 600, OPT_MEMORY, OPT_PIDS, OPT_CPUS, OPT_NETWORK, OPT_ROOTFS, OPT_SERVICES,
       OPT_MALLOC_CONF };

static int set_path(char **field, const char *flag, const char *value)
{
    char *abs = realpath(value, NULL);
    if (abs == NULL)
        return brig_fail_msg("sandbox create: %s `%s`: %s", flag, value, strerror(errno));
    free(*field);
    *field = abs;
    return 0;
}

static int apply_flag(int c, struct brig_profile_settings *s)
{
    int n;
    switch (c) {
    case OPT_DATA_SIZE:
        if (brig_profile_parse_size(optarg, &s->data_size) < 0 || s->data_size < (INT64_C(4) << 20))
            return brig_fail_msg("sandbox create: invalid --data-size `%s` (at least 4M)", optarg);
        return 0;
    case OPT_MEMORY:
        if (brig_profile_parse_size(optarg, &s->memory) < 0 || s->memory < (INT64_C(16) << 20))
            return brig_fail_msg("sandbox create: invalid --memory `%s` (at least 16M)", optarg);
        return 0;
    case OPT_PIDS:
        if (brig_parse_uint("--pids", optarg, &n) || n < 8)
            return brig_fail_msg("sandbox create: invalid --pids `%s` (at least 8)", optarg);
        s->pids = n;
        return 0;
    case OPT_CPUS:
        if (brig_profile_parse_cpus(optarg, &s->cpus_milli) < 0)
            return brig_fail_msg("sandbox create: invalid --cpus `%s`", optarg);
        return 0;
    case OPT_NETWORK:
        if (strcmp(optarg, "none") == 0) {
            free(s->netns);
            s->netns = NULL;
            return 0;
        }
        return set_path(&s->netns, "--network", optarg);
    case OPT_ROOTFS: return set_path(&s->rootfs, "--rootfs", optarg);
    case OPT_SERVICES: return set_path(&s->init_config, "--services", optarg);
    case OPT_MALLOC_CONF:
        free(s->malloc_conf);
        return (s->malloc_conf = strdup(optarg)) ? 0 : brig_fail_msg("sandbox create: out of memory");
    default: return -1;
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
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(create_usage) - 1;
        int r = apply_flag(c, s);
        if (r != 0)
            return r < 0 ? brig_bad_option(argv) : r;
    }
    return brig_expect_args(argc, argv, 1, "sandbox id");
}

/* The bundle: brig's default spec, without a terminal (the init is
 * detached). The profile rewrites the rest. */
static int write_bundle(const char *dir, char **bundle)
{
    brig_error_t err = NULL;
    cleanup_free char *json = NULL;
    if (asprintf(bundle, "%s/bundle", dir) < 0)
        return brig_fail_msg("sandbox create: out of memory");
    if (mkdir(*bundle, 0700) < 0 && errno != EEXIST)
        return brig_fail_msg("sandbox create: mkdir `%s`: %s", *bundle, strerror(errno));
    if (brig_spec_default_json(false, &json, &err) < 0)
        return brig_fail(&err);
    /* Same length, so an in-place edit of the generated text. */
    char *t = strstr(json, "\"terminal\": true");
    if (t)
        memcpy(t, "\"terminal\":false", 16);
    cleanup_close int fd = open(*bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || brig_write_file_atomic_at(fd, "config.json", json, strlen(json), 0600, &err) < 0)
        return err ? brig_fail(&err) : brig_fail_msg("sandbox create: open `%s`: %s", *bundle, strerror(errno));
    return 0;
}

static int start_sandbox(const char *id, const char *bundle, const struct brig_profile_settings *s)
{
    struct brig_create_options o = {
        .root = brig_globals.root, .id = id, .bundle = bundle,
        .no_cgroup = brig_globals.no_cgroup,
    };
    brig_error_t err = NULL, warning = NULL;
    struct brig_bundle b;
    struct brig_profile_settings use = { 0 };
    pid_t pid;
    bool created;
    int r = brig_bundle_load(bundle, &b, &err);
    o.config = &b;
    if (r == 0)
        r = brig_sandbox_prepare(&o, BRIG_PROFILE_SANDBOX, s, &use, &err);
    if (r == 0)
        r = brig_container_create_started(&o, &pid, &created, &warning, &err);
    brig_bundle_clear(&b);
    brig_profile_settings_clear(&use);
    if (r < 0) {
        brig_error_release(&warning);
        return brig_fail(&err);
    }
    if (warning)
        brig_warn(&warning);
    return 0;
}

int sandbox_cmd_create(int argc, char **argv)
{
    struct brig_profile_settings s;
    brig_error_t err = NULL;
    if (brig_profile_settings_default(&s, &err) < 0)
        return brig_fail(&err);
    s.detached_init = 1;
    int r = parse_create(argc, argv, &s);
    const char *id = r == 0 ? argv[optind] : NULL;
    cleanup_free char *dir = NULL, *bundle = NULL;
    if (r == 0)
        r = sandbox_dir(id, &dir);
    struct brig_state *state = NULL;
    enum brig_status status;
    if (r == 0 && brig_container_state(brig_globals.root, id, &state, &status, &err) == 0)
        r = brig_fail_msg("sandbox create: sandbox `%s` exists (%s)", id, brig_status_name(status));
    brig_error_release(&err);
    brig_state_free(state);
    if (r == 0 && mkdir(sandbox_home(), 0711) < 0 && errno != EEXIST)
        r = brig_fail_msg("sandbox create: mkdir `%s`: %s", sandbox_home(), strerror(errno));
    /* An existing dir is a sandbox whose init stopped: its data is reused. */
    bool fresh = r == 0 && mkdir(dir, 0700) == 0;
    if (r == 0 && !fresh && errno != EEXIST)
        r = brig_fail_msg("sandbox create: mkdir `%s`: %s", dir, strerror(errno));
    if (r == 0 && (s.data_dir = strdup(dir)) == NULL)
        r = brig_fail_msg("sandbox create: out of memory");
    if (r == 0)
        r = write_bundle(dir, &bundle);
    if (r == 0)
        r = start_sandbox(id, bundle, &s);
    if (r > 0 && fresh) {
        if (sandbox_remove(id, &err) < 0)
            brig_warn(&err);
    }
    brig_profile_settings_clear(&s);
    return r < 0 ? 0 : r;
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
        case OPT_TIMEOUT: args[n++] = (char *) "--timeout"; args[n++] = optarg; break;
        case OPT_CWD: args[n++] = (char *) "--cwd"; args[n++] = optarg; break;
        case 'e': args[n++] = (char *) "--env"; args[n++] = optarg; break;
        case 'u':
            /* Every process in a sandbox runs as its user, whoever asks. */
            if (strcmp(optarg, "1000") != 0 && strcmp(optarg, "1000:1000") != 0)
                return brig_fail_msg("sandbox exec: --user `%s`: a sandbox runs every process as "
                                     "its user sandbox (1000:1000)", optarg);
            break;
        case 't': args[n++] = (char *) "--tty"; break;
        case 'h': return brig_usage(exec_usage);
        default: return brig_bad_option(argv);
        }
    }
    if (optind >= argc)
        return brig_fail_msg("sandbox exec: missing the sandbox id (see `brig sandbox exec --help`)");
    cleanup_free char *dir = NULL;
    if (sandbox_dir(argv[optind], &dir))
        return 1;
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
