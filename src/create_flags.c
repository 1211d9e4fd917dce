#define _GNU_SOURCE
#include "create_flags.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "container/state.h"
#include "sandbox/sandbox.h"

static const struct option create_flag_options[] = {
    { "bundle", required_argument, NULL, 'b' },
    { "pid-file", required_argument, NULL, CREATE_OPT_PID_FILE },
    { "console-socket", required_argument, NULL, CREATE_OPT_CONSOLE_SOCKET },
    { "no-pivot", no_argument, NULL, CREATE_OPT_NO_PIVOT },
    { "no-new-keyring", no_argument, NULL, CREATE_OPT_NO_NEW_KEYRING },
    { "preserve-fds", required_argument, NULL, CREATE_OPT_PRESERVE_FDS },
    { "detach", no_argument, NULL, 'd' },
    { "keep", no_argument, NULL, CREATE_OPT_KEEP },
    { "no-subreaper", no_argument, NULL, CREATE_OPT_NO_SUBREAPER },
    { "tty", no_argument, NULL, 't' },
    { "profile", required_argument, NULL, CREATE_OPT_PROFILE },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};

/* Parser: one flag of the loop below. */
static int create_flag_apply(int c, char **argv, struct brig_create_options *o,
                             struct create_flags *extra)
{
    switch (c) {
    case 'b':
        o->bundle = optarg;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_PID_FILE:
        o->pid_file = optarg;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_CONSOLE_SOCKET:
        extra->console_socket = optarg;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_NO_PIVOT:
        o->no_pivot = true;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_NO_NEW_KEYRING:
        o->no_new_keyring = true;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_PRESERVE_FDS:
        return brig_parse_flag_uint("--preserve-fds", optarg, &o->preserve_fds);
    case 'd':
        extra->detach = true;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_KEEP:
        extra->keep = true;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_NO_SUBREAPER:
        extra->no_subreaper = true;
        return BRIG_CLI_GO_ON;
    case 't':
        o->terminal = true;
        return BRIG_CLI_GO_ON;
    case CREATE_OPT_PROFILE:
        extra->profile = optarg;
        return BRIG_CLI_GO_ON;
    default:
        return brig_bad_option(argv);
    }
}

/* systemd's socket activation: LISTEN_FDS=N for us (LISTEN_PID is our
 * pid) means fds 3..3+N-1 are sockets to hand on to the container. */
static int listen_fds_from_env(void)
{
    const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
    if (fds == NULL || pid == NULL || atol(pid) != (long) getpid())
        return 0;
    long n = atol(fds);
    return n > 0 && n < 1024 ? (int) n : 0;
}

int create_flags_parse(int argc, char **argv, const char *shortopts, const char *usage,
                       struct brig_create_options *o, struct create_flags *extra)
{
    *o = (struct brig_create_options){ .root = brig_globals.root,
                                       .no_cgroup = brig_globals.no_cgroup,
                                       .systemd_cgroup = brig_globals.systemd_cgroup };
    *extra = (struct create_flags){ 0 };
    int c;
    while ((c = getopt_long(argc, argv, shortopts, create_flag_options, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(usage);
        int done = create_flag_apply(c, argv, o, extra);
        if (done != BRIG_CLI_GO_ON)
            return done;
    }
    int done = brig_parse_args(argc, argv, 1, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    o->id = argv[optind];
    o->console_socket = extra->console_socket;
    o->listen_fds = listen_fds_from_env();
    return BRIG_CLI_GO_ON;
}

int create_prepare(struct brig_create_options *o, const struct create_flags *extra,
                   struct create_bundle *cb)
{
    brig_error_t err = NULL;
    *cb = (struct create_bundle){ 0 };
    if (brig_bundle_load(o->bundle, &cb->bundle, &err) < 0)
        return brig_fail(&err);
    o->config = &cb->bundle;
    const struct brig_process *p = cb->bundle.spec->process;
    bool terminal = p && (p->terminal || o->terminal);
    /* The flags' part of what create checks, said in the flags' words. */
    if (p && terminal && !o->console_socket && !o->pty_master)
        return brig_fail_msg("%s: process.terminal is true: give --console-socket to receive it",
                             cb->bundle.config_path);
    if (p && !terminal && o->console_socket)
        return brig_fail_msg("--console-socket needs process.terminal to be true in %s",
                             cb->bundle.config_path);
    if (extra->profile && strcmp(extra->profile, BRIG_PROFILE_SANDBOX) != 0)
        return brig_fail_msg("--profile: unknown profile `%s` (known: %s)", extra->profile,
                             BRIG_PROFILE_SANDBOX);
    if (brig_sandbox_prepare(o, extra->profile, NULL, &cb->sandbox, &err) < 0)
        return brig_fail(&err);
    if (cb->sandbox.notice) {
        brig_error_t notice = NULL;
        brig_error_set(&notice, 0, "%s", cb->sandbox.notice);
        brig_warn(&notice);
    }
    return BRIG_CLI_GO_ON;
}

void create_bundle_clear(struct create_bundle *cb)
{
    brig_bundle_clear(&cb->bundle);
    brig_profile_settings_clear(&cb->sandbox);
}
