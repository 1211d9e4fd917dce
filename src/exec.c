#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "container/container.h"
#include "spec/spec.h"
#include "process/terminal.h"
#include "base/utils.h"
#include "wait.h"

static const char usage[] =
    "Usage: brig exec [options] ID COMMAND [ARG...]\n"
    "       brig exec [options] --process FILE ID\n\n"
    "Run a new process in a running container: in all its namespaces, its\n"
    "cgroup, with the identity and limits of the container's process unless\n"
    "the options say otherwise. Exits with the process's status (128+N for\n"
    "signal N, 124 when --timeout killed it).\n\n"
    "Options:\n"
    "  -p, --process FILE        an OCI process JSON (other process options are ignored)\n"
    "  -t, --tty                 give the process a terminal\n"
    "      --console-socket S    send the terminal's master to the unix socket S\n"
    "      --cwd DIR             working directory inside the container\n"
    "  -e, --env NAME=VALUE      set an environment variable (repeatable)\n"
    "  -u, --user UID[:GID]      run as this user\n"
    "  -g, --additional-gids GID the supplementary groups, instead of the config's (repeatable)\n"
    "  -c, --cap CAP             add a capability (repeatable)\n"
    "      --no-new-privs        set no_new_privs for the process\n"
    "  -d, --detach              return once the process has started\n"
    "      --pid-file FILE       write the process's pid to FILE\n"
    "      --preserve-fds N      pass N extra fds (from 3) to the process\n"
    "      --cgroup [C,...:]PATH run in this sub-cgroup of the container's cgroup; on v1,\n"
    "                            C:PATH for controller C's hierarchy alone (repeatable)\n"
    "      --ignore-paused       exec even if the container is paused\n"
    "      --timeout DURATION    kill the process group after DURATION (5s, 500ms, 2m);\n"
    "                            exec then exits 124\n"
    "  -h, --help                print this help\n";

enum {
    OPT_CONSOLE_SOCKET = 500,
    OPT_CWD,
    OPT_NO_NEW_PRIVS,
    OPT_PID_FILE,
    OPT_PRESERVE_FDS,
    OPT_CGROUP,
    OPT_IGNORE_PAUSED,
    OPT_TIMEOUT,
    OPT_IGNORED,
};

struct exec_flags {
    const char *process_file, *cwd, *user, *pid_file;
    bool tty, no_new_privs, detach;
    int timeout_ms;
    char **env; /* NULL-terminated lists of the repeatable flags */
    size_t n_env;
    char **caps;
    size_t n_caps;
    uint32_t *gids;
    size_t n_gids;
    char **cgroups;
    size_t n_cgroups;
};

static void flags_free(struct exec_flags *f)
{
    free(f->env);
    free(f->caps);
    free(f->gids);
    free(f->cgroups);
}

static int push(char ***list, size_t *n, char *item)
{
    char **bigger = realloc(*list, (*n + 2) * sizeof **list);
    if (bigger == NULL)
        return brig_fail_msg("exec: out of memory");
    bigger[(*n)++] = item;
    bigger[*n] = NULL;
    *list = bigger;
    return 0;
}

static int parse_id(const char *flag, const char *text, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno || end == text || *end || v > UINT32_MAX || text[0] == '-')
        return brig_fail_msg("exec: invalid %s `%s`", flag, text);
    *out = (uint32_t) v;
    return 0;
}

/* A capability set plus the --cap names, as a new (shallow) strv. */
static struct brig_strv add_caps(const struct brig_strv *set, char **caps, size_t n_caps)
{
    struct brig_strv out = { calloc(set->n + n_caps + 1, sizeof(char *)), 0 };
    if (out.v == NULL)
        return out;
    for (size_t i = 0; i < set->n; i++)
        out.v[out.n++] = set->v[i];
    for (size_t i = 0; i < n_caps; i++)
        out.v[out.n++] = caps[i];
    return out;
}

/* The container's own process, with what the flags change. */
static int build_process(const struct brig_process *base, const struct exec_flags *f, char **args,
                         int n_args, struct brig_process *p, struct brig_capabilities *caps)
{
    static const struct brig_process empty;
    *p = base ? *base : empty;
    p->args.v = args;
    p->args.n = (size_t) n_args;
    p->terminal = f->tty;
    p->has_console_size = false;
    p->env.v = brig_env_overlay(&p->env, f->env, f->n_env, &p->env.n);
    if (p->env.v == NULL)
        return brig_fail_msg("exec: out of memory");
    if (f->cwd)
        p->cwd = (char *) f->cwd;
    if (f->user) {
        char *copy = strdup(f->user), *colon = copy ? strchr(copy, ':') : NULL;
        if (colon)
            *colon = '\0';
        int r = copy == NULL || parse_id("user", copy, &p->user.uid)
                || (colon && parse_id("group", colon + 1, &p->user.gid));
        free(copy);
        if (r)
            return 1;
        p->user.username = NULL;
    }
    if (f->n_gids) {
        p->user.additional_gids = f->gids;
        p->user.n_additional_gids = f->n_gids;
    }
    if (f->no_new_privs)
        p->no_new_privileges = true;
    if (f->n_caps) {
        static const struct brig_capabilities none;
        const struct brig_capabilities *from = p->capabilities ? p->capabilities : &none;
        caps->bounding = add_caps(&from->bounding, f->caps, f->n_caps);
        caps->effective = add_caps(&from->effective, f->caps, f->n_caps);
        caps->permitted = add_caps(&from->permitted, f->caps, f->n_caps);
        caps->inheritable = from->inheritable;
        caps->ambient = from->ambient;
        if (!caps->bounding.v || !caps->effective.v || !caps->permitted.v)
            return brig_fail_msg("exec: out of memory");
        p->capabilities = caps;
    }
    return 0;
}

static const struct option exec_options[] = {
    { "process", required_argument, NULL, 'p' },
    { "tty", no_argument, NULL, 't' },
    { "console-socket", required_argument, NULL, OPT_CONSOLE_SOCKET },
    { "cwd", required_argument, NULL, OPT_CWD },
    { "env", required_argument, NULL, 'e' },
    { "user", required_argument, NULL, 'u' },
    { "additional-gids", required_argument, NULL, 'g' },
    { "cap", required_argument, NULL, 'c' },
    { "no-new-privs", no_argument, NULL, OPT_NO_NEW_PRIVS },
    { "detach", no_argument, NULL, 'd' },
    { "pid-file", required_argument, NULL, OPT_PID_FILE },
    { "preserve-fds", required_argument, NULL, OPT_PRESERVE_FDS },
    { "cgroup", required_argument, NULL, OPT_CGROUP },
    { "ignore-paused", no_argument, NULL, OPT_IGNORE_PAUSED },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "process-label", required_argument, NULL, OPT_IGNORED },
    { "apparmor", required_argument, NULL, OPT_IGNORED },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};

/* One flag of exec: BRIG_CLI_GO_ON, or the exit status. */
static int apply_flag(int c, char **argv, struct exec_flags *f, struct brig_exec_options *o)
{
    uint32_t gid;
    int done;
    switch (c) {
    case 'p':
        f->process_file = optarg;
        break;
    case 't':
        f->tty = true;
        break;
    case OPT_CONSOLE_SOCKET:
        o->console_socket = optarg;
        break;
    case OPT_CWD:
        f->cwd = optarg;
        break;
    case 'e':
        if (strchr(optarg, '=') == NULL)
            return brig_fail_msg("exec: --env wants NAME=VALUE, not `%s`", optarg);
        if (push(&f->env, &f->n_env, optarg))
            return 1;
        break;
    case 'u':
        f->user = optarg;
        break;
    case 'g': {
        if (parse_id("additional gid", optarg, &gid))
            return 1;
        uint32_t *bigger = realloc(f->gids, (f->n_gids + 1) * sizeof *bigger);
        if (bigger == NULL)
            return brig_fail_msg("exec: out of memory");
        bigger[f->n_gids++] = gid;
        f->gids = bigger;
        break;
    }
    case 'c':
        if (push(&f->caps, &f->n_caps, optarg))
            return 1;
        break;
    case OPT_NO_NEW_PRIVS:
        f->no_new_privs = true;
        break;
    case 'd':
        f->detach = true;
        break;
    case OPT_PID_FILE:
        f->pid_file = optarg;
        break;
    case OPT_PRESERVE_FDS:
        if ((done = brig_parse_flag_uint("--preserve-fds", optarg, &o->preserve_fds))
            != BRIG_CLI_GO_ON)
            return done;
        break;
    case OPT_CGROUP:
        if (push(&f->cgroups, &f->n_cgroups, optarg))
            return 1;
        break;
    case OPT_IGNORE_PAUSED:
        o->ignore_paused = true;
        break;
    case OPT_TIMEOUT:
        if (brig_parse_duration_ms(optarg, &f->timeout_ms) < 0)
            return brig_fail_msg("exec: invalid --timeout `%s`", optarg);
        break;
    case OPT_IGNORED:
        break;
    case 'h':
        return brig_usage(usage);
    default:
        return brig_bad_option(argv);
    }
    return BRIG_CLI_GO_ON;
}

static int parse_flags(int argc, char **argv, struct exec_flags *f, struct brig_exec_options *o)
{
    int c, done;
    while ((c = getopt_long(argc, argv, "+p:te:u:g:c:dh", exec_options, NULL)) != -1)
        if ((done = apply_flag(c, argv, f, o)) != BRIG_CLI_GO_ON)
            return done;
    return BRIG_CLI_GO_ON;
}

/* Closes what load_process kept open (the lock goes with the dir fd). */
static void close_opened(struct brig_opened_container *opened, int *root_fd)
{
    if (opened->dir_fd >= 0)
        close(brig_steal_fd(opened->dir_fd));
    if (*root_fd >= 0)
        close(brig_steal_fd(*root_fd));
    brig_state_free(opened->state);
    opened->state = NULL;
}

/* Starts the process, then (unless detached) waits for it like run does:
 * signals forwarded, terminal relayed, the time limit enforced. The
 * container's state dir (o->opened, locked) is closed once the process has
 * started, so that the wait doesn't hold the lock. */
static int exec_and_wait(const struct brig_exec_options *o, bool detach, const char *pid_file,
                         int timeout_ms, int *master, struct brig_opened_container *opened,
                         int *root_fd)
{
    if (detach && timeout_ms > 0)
        return brig_fail_msg("exec: --timeout needs the foreground (no --detach)");
    sigset_t forwarded;
    brig_forwarded_signals(&forwarded);
    if (!detach) {
        sigprocmask(SIG_BLOCK, &forwarded, NULL);
        /* The process is our grandchild: adopt it to wait for it. */
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    }
    brig_error_t err = NULL;
    pid_t pid;
    /* What the flags say of the terminal, in the flags' words. */
    if (o->process->terminal && !o->console_socket && !o->pty_master)
        return brig_fail_msg("exec: a terminal needs --console-socket (or no --detach)");
    if (!o->process->terminal && o->console_socket)
        return brig_fail_msg("exec: --console-socket needs a terminal (--tty)");
    int started = brig_container_exec(o, &pid, &err);
    close_opened(opened, root_fd);
    if (started < 0 && err->errnum == BRIG_E_STATE && !o->ignore_paused) {
        int status = brig_fail_msg("%s (--ignore-paused)", err->msg);
        brig_error_release(&err);
        return status;
    }
    if (started < 0)
        return brig_fail(&err);
    if (pid_file && brig_write_pid_file(pid_file, pid, &err) < 0) {
        kill(pid, SIGKILL);
        return brig_fail(&err);
    }
    if (detach)
        return 0;
    int status = brig_wait_foreground(pid, *master, timeout_ms, NULL);
    if (*master >= 0)
        close(*master);
    return status;
}

/* The process to run: --process FILE, or the container's own process
 * with the flags applied. */
static int load_process(const struct brig_exec_options *o, const struct exec_flags *f, char **args,
                        int n_args, struct brig_spec **spec, struct brig_opened_container *opened,
                        int *root_fd, struct brig_process **from_file, struct brig_process *p,
                        struct brig_capabilities *caps)
{
    brig_error_t err = NULL;
    if (f->process_file) {
        cleanup_free char *json = NULL;
        size_t len = 0;
        if (brig_read_file(f->process_file, &json, &len, &err) < 0
            || brig_process_parse(json, len, f->process_file, from_file, &err) < 0)
            return brig_fail(&err);
        *p = **from_file;
        return 0;
    }
    if (n_args == 0)
        return brig_fail_msg("exec: missing the command to run (see `brig exec --help`)");
    /* Kept open and locked for brig_container_exec, which would otherwise
     * open, lock and read it all again. */
    opened->dir_fd = brig_container_open(o->root, o->id, root_fd, &opened->state, &err);
    if (opened->dir_fd < 0 || brig_container_load_spec(opened->dir_fd, spec, &err) < 0)
        return brig_fail(&err);
    return build_process(*spec ? (*spec)->process : NULL, f, args, n_args, p, caps);
}

int brig_cmd_exec(int argc, char **argv)
{
    struct exec_flags f = { 0 };
    struct brig_exec_options o = { .root = brig_globals.root };
    int r = parse_flags(argc, argv, &f, &o);
    if (r == BRIG_CLI_GO_ON)
        r = brig_parse_args(argc, argv, 1, argc, "container id");
    if (r != BRIG_CLI_GO_ON) {
        flags_free(&f);
        return r;
    }
    o.id = argv[optind];
    o.cgroups = (const char *const *) f.cgroups;
    o.n_cgroups = f.n_cgroups;
    char **args = argv + optind + 1;
    int n_args = argc - optind - 1;

    struct brig_spec *spec = NULL;
    struct brig_opened_container opened = { -1, NULL };
    int root_fd = -1;
    struct brig_process *from_file = NULL, p = { 0 };
    struct brig_capabilities caps = { 0 };
    r = load_process(&o, &f, args, n_args, &spec, &opened, &root_fd, &from_file, &p, &caps);
    int master = -1;
    if (r == 0) {
        o.process = &p;
        o.spec = spec;
        o.opened = opened.dir_fd >= 0 ? &opened : NULL;
        if (p.terminal && !o.console_socket && !f.detach)
            o.pty_master = &master;
        r = exec_and_wait(&o, f.detach, f.pid_file, f.timeout_ms, &master, &opened, &root_fd);
    }
    close_opened(&opened, &root_fd);
    if (!f.process_file) {
        free(p.env.v);
        free(caps.bounding.v);
        free(caps.effective.v);
        free(caps.permitted.v);
    }
    brig_process_free(from_file);
    brig_spec_free(spec);
    flags_free(&f);
    return r;
}
