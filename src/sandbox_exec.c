#define _GNU_SOURCE
/* `brig sandbox exec`: the flags read, sandbox/exec.h runs the process,
 * and the foreground wait of `brig exec` forwards signals and relays the
 * terminal. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "base/utils.h"
#include "sandbox/exec.h"
#include "sandbox/layout.h"
#include "sandbox_cmd.h"
#include "wait.h"

static const char exec_usage[] =
    "Usage: brig sandbox exec [options] ID [--] COMMAND [ARG...]\n\n"
    "Run a command in the sandbox as its user (uid 1000) in /mnt/data, with\n"
    "the sandbox's environment (LD_PRELOAD, MALLOC_CONF). Output streams as\n"
    "it comes. Exits with the command's status, 124 after the timeout.\n\n"
    "Options:\n"
    "      --timeout DURATION  kill the command's process group after DURATION\n"
    "                          (5s, 500ms, 2m; default: the sandbox's\n"
    "                          --exec-timeout, if it was given one)\n"
    "      --cwd DIR           working directory (default /mnt/data)\n"
    "  -e, --env NAME=VALUE    set an environment variable (repeatable)\n"
    "  -u, --user UID[:GID]    only 1000:1000, the sandbox's user, which every\n"
    "                          process in a sandbox runs as\n"
    "  -t, --tty               give the command a terminal\n"
    "  -h, --help              print this help\n";

static int parse_exec(int argc, char **argv, struct brig_sandbox_exec_options *o, char **env,
                      size_t *n_env)
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
    int c;
    while ((c = getopt_long(argc, argv, "+e:u:th", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TIMEOUT:
            if (brig_parse_duration_ms(optarg, &o->timeout_ms) < 0 || o->timeout_ms <= 0)
                return brig_fail_msg("sandbox exec: invalid --timeout `%s`", optarg);
            break;
        case OPT_CWD:
            o->cwd = optarg;
            break;
        case 'e':
            if (strchr(optarg, '=') == NULL)
                return brig_fail_msg("sandbox exec: --env wants NAME=VALUE, not `%s`", optarg);
            env[(*n_env)++] = optarg;
            break;
        case 'u':
            o->user = optarg;
            break;
        case 't':
            o->tty = true;
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
    o->id = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return brig_fail_msg("sandbox exec: missing the command to run");
    o->argv = argv + optind;
    return BRIG_CLI_GO_ON;
}

/* A process the sandbox's init started: the signals brig gets go to it,
 * its status comes from the init. */
static int wait_at_port(const struct brig_sandbox_exec *ex)
{
    sigset_t forwarded;
    brig_forwarded_signals(&forwarded);
    cleanup_close int sfd = signalfd(-1, &forwarded, SFD_CLOEXEC);
    if (sfd < 0)
        return brig_fail_msg("sandbox exec: signalfd: %s", strerror(errno));
    struct timespec deadline;
    brig_deadline_in(&deadline, ex->timeout_ms);
    bool timed_out = false;
    for (;;) {
        struct pollfd p[2] = { { .fd = ex->port, .events = POLLIN },
                               { .fd = sfd, .events = POLLIN } };
        int r = poll(p, 2, ex->timeout_ms > 0 && !timed_out ? brig_ms_until(&deadline) : -1);
        if (r < 0 && errno != EINTR)
            return brig_fail_msg("sandbox exec: poll: %s", strerror(errno));
        if (r == 0) {
            brig_sandbox_exec_kill_group(ex);
            timed_out = true;
        }
        if (r <= 0)
            continue;
        if (p[0].revents)
            break;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) == (ssize_t) sizeof si && si.ssi_signo != SIGCHLD)
            brig_sandbox_exec_signal(ex, (int) si.ssi_signo);
    }
    brig_error_t err = NULL;
    int status = brig_sandbox_exec_port_status(ex, &err);
    if (status < 0)
        return brig_fail(&err);
    return timed_out ? 124 : status;
}

int sandbox_cmd_exec(int argc, char **argv)
{
    cleanup_free char **env = calloc((size_t) argc + 1, sizeof *env);
    if (env == NULL)
        return brig_fail_msg("sandbox exec: out of memory");
    size_t n_env = 0;
    int master = -1;
    struct brig_sandbox_exec_options o = { .root = brig_globals.root, .env = env };
    int done = parse_exec(argc, argv, &o, env, &n_env);
    if (done != BRIG_CLI_GO_ON)
        return done;
    o.pty_master = &master;
    /* Blocked before the process exists, so none is lost; the process is
     * our grandchild, adopted to be waited for. */
    sigset_t forwarded;
    brig_forwarded_signals(&forwarded);
    sigprocmask(SIG_BLOCK, &forwarded, NULL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct brig_sandbox_exec ex;
    brig_error_t err = NULL;
    if (brig_sandbox_exec_start(&o, &ex, &err) < 0)
        return brig_fail(&err);
    int status = ex.port >= 0 ? wait_at_port(&ex)
                              : brig_wait_foreground(ex.pid, master, ex.timeout_ms, NULL);
    brig_sandbox_exec_release(&ex);
    if (master >= 0)
        close(master);
    return status;
}
