#define _GNU_SOURCE
/* `brig sandbox session`: named, long-lived processes in a sandbox that
 * take input and keep their output. The flags read here; the sessions
 * themselves are sandbox/session.h's. */
#include <ctype.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "brig.h"
#include "cli.h"
#include "base/utils.h"
#include "sandbox/lifetime.h"
#include "sandbox/session.h"
#include "sandbox_cmd.h"

static const char session_usage[] =
    "Usage: brig sandbox session COMMAND ...\n\n"
    "Sessions: named processes on a pty in a sandbox (an interactive bash by\n"
    "default) that outlive the command that started them, take input and keep\n"
    "their output (the last 1 MiB unread) until it is read.\n\n"
    "Commands:\n"
    "  start ID NAME [options] [-- CMD...]   start one (prints nothing)\n"
    "  input ID NAME [options] CHARS         send CHARS, print what it wrote\n"
    "  read ID NAME [options]                print what it wrote since the last read\n"
    "  ls ID                                 its sessions\n"
    "  kill ID NAME                          kill its process and end it\n\n"
    "See `brig sandbox session COMMAND --help` and brig-sandbox(8).\n";

static const char start_usage[] =
    "Usage: brig sandbox session start ID NAME [options] [-- CMD [ARG...]]\n\n"
    "Start the session NAME in the sandbox: CMD on a pty, as the sandbox user\n"
    "in /mnt/data, with TERM=dumb; without CMD, `bash --norc --noediting -i`\n"
    "with the prompt `$ `. NAME is [A-Za-z0-9_.-], at most 64, not starting\n"
    "with `.`; a name in use is refused, the remains of an exited session are\n"
    "replaced. Prints nothing; `session ls` shows its pid.\n\n"
    "Options:\n"
    "      --cwd DIR           working directory (default /mnt/data)\n"
    "  -e, --env NAME=VALUE    set an environment variable (repeatable)\n"
    "  -u, --user UID[:GID]    only 1000:1000, the sandbox's user\n"
    "  -h, --help              print this help\n";

static const char input_usage[] =
    "Usage: brig sandbox session input ID NAME [options] [--] CHARS\n"
    "       brig sandbox session read ID NAME [options]\n\n"
    "input sends CHARS to the session as typed (C escapes: \\n \\t \\r \\\\ \\e\n"
    "\\a \\b \\0 \\xHH \\NNN; \\x03 is Ctrl-C, \\x04 Ctrl-D), then both wait and\n"
    "print what the session wrote since the last read, raw. They wait until\n"
    "the output has been quiet for --wait, or what is unread matches --until,\n"
    "or the process exited, and at most --timeout. Bytes the bounded buffer\n"
    "dropped are counted on stderr. When the process has exited, its last\n"
    "output is printed, stderr says its status, the session is gone, and the\n"
    "exit status is still 0.\n\n"
    "Options:\n"
    "      --wait DURATION     quiet period (default 500ms; none with --until\n"
    "                          unless given)\n"
    "      --until REGEX       POSIX extended regex over the unread output as\n"
    "                          one text (`$` is its end): `'>>> $'`, `'\\$ $'`\n"
    "      --timeout DURATION  the longest wait (default 5m)\n"
    "  -h, --help              print this help\n";

static const char ls_usage[] =
    "Usage: brig sandbox session ls ID\n\n"
    "The sandbox's sessions: NAME, PID (of its process, as the host sees\n"
    "it), STATE (running, or exited(N) with output left to read), UNREAD\n"
    "(bytes), AGE and CMD.\n";

static const char kill_usage[] = "Usage: brig sandbox session kill ID NAME\n\n"
                                 "Kill the session's process (every process of its terminal) with\n"
                                 "SIGKILL and end the session; its unread output goes too.\n";

/* ---- start ---- */

/* Options of `start`, which end where `--` starts the command. */
static int parse_start(int argc, char **argv, struct brig_session_start_options *o, char **env)
{
    enum { OPT_CWD = 700 };
    static const struct option opts[] = {
        { "cwd", required_argument, NULL, OPT_CWD },
        { "env", required_argument, NULL, 'e' },
        { "user", required_argument, NULL, 'u' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    size_t n_env = 0;
    int c;
    while ((c = getopt_long(argc, argv, "e:u:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_CWD:
            o->cwd = optarg;
            break;
        case 'e':
            if (strchr(optarg, '=') == NULL)
                return brig_fail_msg("sandbox session start: --env wants NAME=VALUE, not `%s`",
                                     optarg);
            env[n_env++] = optarg;
            break;
        case 'u':
            o->user = optarg;
            break;
        case 'h':
            return brig_usage(start_usage);
        default:
            return brig_bad_option(argv);
        }
    }
    int done = brig_parse_args(argc, argv, 2, 2, "sandbox id and session name");
    if (done != BRIG_CLI_GO_ON)
        return done;
    o->id = argv[optind];
    o->name = argv[optind + 1];
    return BRIG_CLI_GO_ON;
}

/* Where `--` is (argc when there is none): the command (or CHARS) after
 * it is not for getopt. */
static int dashes(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0)
            return i;
    return argc;
}

static int cmd_start(int argc, char **argv)
{
    cleanup_free char **env = calloc((size_t) argc + 1, sizeof *env);
    if (env == NULL)
        return brig_fail_msg("sandbox session start: out of memory");
    int end = dashes(argc, argv);
    struct brig_session_start_options o = { .root = brig_globals.root, .env = env };
    int done = parse_start(end, argv, &o, env);
    if (done != BRIG_CLI_GO_ON)
        return done;
    if (end < argc && end + 1 == argc)
        return brig_fail_msg("sandbox session start: nothing after `--`");
    if (end < argc)
        o.argv = argv + end + 1;
    struct brig_session_info info;
    brig_error_t err = NULL;
    if (brig_session_start(&o, &info, &err) < 0)
        return brig_fail(&err);
    brig_session_info_clear(&info);
    return 0;
}

/* ---- input, read ---- */

struct wait_flags {
    int wait_ms, max_ms;
    const char *until;
};

static int parse_wait(int argc, char **argv, const char *what, struct wait_flags *w)
{
    enum { OPT_WAIT = 700, OPT_UNTIL, OPT_TIMEOUT };
    static const struct option opts[] = {
        { "wait", required_argument, NULL, OPT_WAIT },
        { "until", required_argument, NULL, OPT_UNTIL },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    bool wait_given = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_WAIT:
            if (brig_parse_duration_ms(optarg, &w->wait_ms) < 0)
                return brig_fail_msg("sandbox session %s: invalid --wait `%s`", what, optarg);
            wait_given = true;
            break;
        case OPT_UNTIL:
            w->until = optarg;
            break;
        case OPT_TIMEOUT:
            if (brig_parse_duration_ms(optarg, &w->max_ms) < 0)
                return brig_fail_msg("sandbox session %s: invalid --timeout `%s`", what, optarg);
            break;
        case 'h':
            return brig_usage(input_usage);
        default:
            return brig_bad_option(argv);
        }
    }
    /* With --until, the match ends the wait, not a pause in the output. */
    if (!wait_given)
        w->wait_ms = w->until ? 0 : 500;
    return BRIG_CLI_GO_ON;
}

/* The output raw on stdout; what was dropped and the process's end on
 * stderr. */
static int print_output(const char *name, const struct brig_session_output *out)
{
    fwrite(out->data, 1, out->len, stdout);
    fflush(stdout);
    if (out->dropped > 0)
        fprintf(stderr, "brig: session %s: %llu bytes of output were dropped\n", name,
                (unsigned long long) out->dropped);
    if (!out->alive)
        fprintf(stderr, "brig: session %s: exited with status %d\n", name, out->exit_status);
    return 0;
}

static int run_input(const char *what, const char *id, const char *name, const char *text,
                     const struct wait_flags *w)
{
    cleanup_free char *chars = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    if (text && brig_session_unescape(text, &chars, &n, &err) < 0)
        return brig_error_wrap(&err, "sandbox session %s: CHARS", what), brig_fail(&err);
    struct brig_session_output out;
    if (brig_session_input(id, name, chars, n, w->wait_ms, w->until, w->max_ms, &out, &err) < 0)
        return brig_fail(&err);
    print_output(name, &out);
    brig_session_output_clear(&out);
    return 0;
}

static int cmd_input(int argc, char **argv)
{
    struct wait_flags w = { 0 };
    int end = dashes(argc, argv);
    int done = parse_wait(end, argv, "input", &w);
    if (done != BRIG_CLI_GO_ON)
        return done;
    /* CHARS among the positionals, or as the one argument after `--`. */
    const char *text;
    if (end < argc) {
        if (end - optind != 2 || argc - end != 2)
            return brig_fail_msg("sandbox session input: want ID NAME -- CHARS");
        text = argv[end + 1];
    } else {
        done = brig_parse_args(argc, argv, 3, 3, "sandbox id, session name and chars");
        if (done != BRIG_CLI_GO_ON)
            return done;
        text = argv[optind + 2];
    }
    return run_input("input", argv[optind], argv[optind + 1], text, &w);
}

static int cmd_read(int argc, char **argv)
{
    struct wait_flags w = { 0 };
    int done = parse_wait(argc, argv, "read", &w);
    if (done == BRIG_CLI_GO_ON)
        done = brig_parse_args(argc, argv, 2, 2, "sandbox id and session name");
    if (done != BRIG_CLI_GO_ON)
        return done;
    return run_input("read", argv[optind], argv[optind + 1], NULL, &w);
}

/* ---- ls, kill ---- */

/* The command's words joined by spaces, with nothing that a terminal
 * would act on. */
static void print_cmd(char *const *argv)
{
    for (size_t i = 0; argv && argv[i]; i++) {
        if (i > 0)
            putchar(' ');
        for (const char *p = argv[i]; *p; p++)
            putchar(isprint((unsigned char) *p) ? *p : '?');
    }
    putchar('\n');
}

static int cmd_ls(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, ls_usage, 1, "sandbox id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    struct brig_session_info *list;
    size_t n;
    brig_error_t err = NULL;
    if (brig_session_list(argv[optind], &list, &n, &err) < 0)
        return brig_fail(&err);
    printf("%-20s %-8s %-10s %-8s %-6s %s\n", "NAME", "PID", "STATE", "UNREAD", "AGE", "CMD");
    for (size_t i = 0; i < n; i++) {
        const struct brig_session_info *s = &list[i];
        char state[24], age[32];
        if (s->alive)
            snprintf(state, sizeof state, "running");
        else
            snprintf(state, sizeof state, "exited(%d)", s->exit_status);
        brig_sandbox_span(brig_sandbox_now_ms() - s->started_ms, age, sizeof age);
        printf("%-20s %-8d %-10s %-8llu %-6s ", s->name, (int) s->pid, state,
               (unsigned long long) s->unread, age);
        print_cmd(s->argv);
    }
    brig_session_list_free(list, n);
    return 0;
}

static int cmd_kill(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, kill_usage, 2, "sandbox id and session name");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL;
    if (brig_session_kill(argv[optind], argv[optind + 1], &err) < 0)
        return brig_fail(&err);
    return 0;
}

/* ---- dispatch ---- */

int sandbox_cmd_session(int argc, char **argv)
{
    static const struct sandbox_subcommand commands[] = {
        { "start", cmd_start }, { "input", cmd_input }, { "read", cmd_read },
        { "ls", cmd_ls },       { "kill", cmd_kill },
    };
    return sandbox_dispatch(argc, argv, "sandbox session", session_usage, commands,
                            sizeof commands / sizeof *commands);
}
