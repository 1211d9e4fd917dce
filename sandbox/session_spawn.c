#define _GNU_SOURCE
/* The holder's set-up (session_int.h), in the grandchild that
 * brig_session_start forked: cut loose from its caller (signals, fds,
 * stdio, cwd), a subreaper so that its process becomes its child, its
 * socket bound in the session's dir, the process started on a pty, the
 * info file written, and one word to the starter before the loop. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/signals.h"
#include "base/utils.h"
#include "sandbox/exec.h"
#include "sandbox/layout.h"
#include "sandbox/session_int.h"
#include "selfexe/selfexe.h"
#include "spec/spec.h"

#define WHAT "sandbox session"

/* No rc file and no line editing: the pty's own line discipline echoes
 * what comes in, as it came, with no redrawing around long lines. */
static char *const default_argv[] = { "bash", "--norc", "--noediting", "-i", NULL };
/* A terminal that draws nothing: no colours or cursor moves, a bare
 * prompt, no pager waiting for a key. The caller's env comes over it. */
static char *const default_env[] = { "TERM=dumb", "PS1=$ ", "PS2=> ", "PAGER=cat", NULL };
/* Wide, so that programs with line editing (python3) redraw no line
 * shorter than that. */
#define PTY_ROWS 50
#define PTY_COLUMNS 500

/* Signals as a fresh process has them, but SIGCHLD held for the loop's
 * signalfd and SIGPIPE held (a client may leave: EPIPE) rather than
 * ignored, which the process would inherit; only the lock and the report
 * pipe kept of the caller's fds, as 3 and 4; stdio /dev/null; cwd /. */
static int detach(int *lock_fd, int *report_fd)
{
    brig_signals_default_all();
    sigset_t held;
    sigemptyset(&held);
    sigaddset(&held, SIGCHLD);
    sigaddset(&held, SIGPIPE);
    sigprocmask(SIG_SETMASK, &held, NULL);
    /* Above 4 first, so that neither lands on the other's new place. */
    int lock = fcntl(*lock_fd, F_DUPFD_CLOEXEC, 10);
    int report = fcntl(*report_fd, F_DUPFD_CLOEXEC, 10);
    if (lock < 0 || report < 0 || dup3(lock, 3, O_CLOEXEC) < 0 || dup3(report, 4, O_CLOEXEC) < 0)
        return -1;
    *lock_fd = 3;
    *report_fd = 4;
    if (syscall(SYS_close_range, 5U, ~0U, 0U) < 0)
        return -1;
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        return -1;
    for (int fd = 0; fd < 3; fd++)
        if (fd != null && dup2(null, fd) < 0)
            return -1;
    if (null > 2)
        close(null);
    umask(077);
    if (chdir("/") < 0)
        return -1;
    prctl(PR_SET_NAME, "brig-session");
    return prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* The sandbox's dir (watched: it goes when the sandbox does), its
 * sessions' and the session's own. */
static int open_dirs(const char *id, struct brig_session_held *h, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    h->sandbox_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h->sandbox_fd < 0)
        return brig_error_set(err, errno, "open `%s`", dir);
    h->sessions_fd = openat(h->sandbox_fd, BRIG_SESSION_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h->sessions_fd < 0)
        return brig_error_set(err, errno, "open `%s/%s`", dir, BRIG_SESSION_DIR);
    h->dir_fd = openat(h->sessions_fd, h->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (h->dir_fd < 0)
        return brig_error_set(err, errno, "open `%s/%s/%s`", dir, BRIG_SESSION_DIR, h->name);
    return 0;
}

/* The socket, bound through the dir's fd: the home's path may be longer
 * than a socket address holds. */
static int listen_in(struct brig_session_held *h, brig_error_t *err)
{
    if (unlinkat(h->dir_fd, BRIG_SESSION_SOCK, 0) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "remove the old socket");
    h->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (h->listen_fd < 0)
        return brig_error_set(err, errno, "socket");
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", h->dir_fd,
             BRIG_SESSION_SOCK);
    if (bind(h->listen_fd, (struct sockaddr *) &addr, sizeof addr) < 0)
        return brig_error_set(err, errno, "bind its socket");
    if (listen(h->listen_fd, 64) < 0)
        return brig_error_set(err, errno, "listen");
    return 0;
}

/* The master never blocks the loop. (No CR before each LF, and the size:
 * set on the pty before the process runs, by the exec's options.) */
static int set_up_pty(int master, brig_error_t *err)
{
    int flags = fcntl(master, F_GETFL);
    if (flags < 0 || fcntl(master, F_SETFL, flags | O_NONBLOCK) < 0)
        return brig_error_set(err, errno, "make the pty non-blocking");
    return 0;
}

/* argv joined by spaces. */
/* argv packed as its words each ended by a NUL, as the holder's replies
 * carry it (session_int.h); its length in *len. */
static char *pack_argv(char *const *argv, size_t *len)
{
    *len = 0;
    for (size_t i = 0; argv[i]; i++)
        *len += strlen(argv[i]) + 1;
    char *s = malloc(*len + 1), *p = s;
    for (size_t i = 0; s && argv[i]; i++)
        p = stpcpy(p, argv[i]) + 1;
    return s;
}

static int start_process(const struct brig_session_start_options *o, struct brig_session_held *h,
                         brig_error_t *err)
{
    char *const *argv = o->argv && o->argv[0] ? o->argv : default_argv;
    const struct brig_strv base = { (char **) default_env,
                                    sizeof default_env / sizeof(char *) - 1 };
    size_t n_asked = 0, n_env;
    while (o->env && o->env[n_asked])
        n_asked++;
    cleanup_free char **env = brig_env_overlay(&base, o->env, n_asked, &n_env);
    h->cmd = pack_argv(argv, &h->cmd_len);
    if (env == NULL || h->cmd == NULL)
        return brig_error_set(err, ENOMEM, WHAT);
    struct brig_sandbox_exec_options eo = {
        .root = o->root,
        .id = o->id,
        .argv = argv,
        .env = env,
        .cwd = o->cwd,
        .user = o->user,
        .tty = true,
        .pty_master = &h->master,
        .pty_raw_newlines = true,
        .pty_rows = PTY_ROWS,
        .pty_columns = PTY_COLUMNS,
        .timeout_ms = -1, /* a session lives as long as its sandbox */
    };
    struct brig_sandbox_exec ex;
    if (brig_sandbox_exec_start(&eo, &ex, err) < 0)
        return -1;
    h->pid = ex.pid;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h->started_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
    return set_up_pty(h->master, err);
}

/* pid=, holder=, started_ms=, cmd= lines, for whoever looks at the dir. */
static int write_info(const struct brig_session_held *h, brig_error_t *err)
{
    cleanup_free char *text = NULL;
    cleanup_free char *words = malloc(h->cmd_len + 1);
    if (words == NULL)
        return brig_error_set(err, ENOMEM, WHAT);
    /* One line: the words joined by spaces, their own newlines flattened. */
    for (size_t i = 0; i < h->cmd_len; i++)
        words[i] = h->cmd[i] == '\0' || h->cmd[i] == '\n' ? ' ' : h->cmd[i];
    words[h->cmd_len ? h->cmd_len - 1 : 0] = '\0';
    int n = asprintf(&text, "pid=%d\nholder=%d\nstarted_ms=%" PRId64 "\ncmd=%s\n", (int) h->pid,
                     (int) getpid(), h->started_ms, words);
    if (n < 0) {
        text = NULL;
        return brig_error_set(err, ENOMEM, WHAT);
    }
    return brig_write_file_atomic_at(h->dir_fd, BRIG_SESSION_INFO, text, (size_t) n, 0600, err);
}

/* The starter's one reply: the process's pid and command, or the error
 * (h NULL: before there is a holder to speak of). */
static void report(int fd, const struct brig_session_held *h, brig_error_t err)
{
    const char *data = err ? err->msg : h->cmd;
    struct brig_session_reply r = {
        .errnum = err ? (err->errnum ? err->errnum : -1) : 0,
        .alive = err == NULL,
        .pid = h ? h->pid : -1,
        .started_ms = h ? h->started_ms : 0,
        .n_data = (uint32_t) (err ? strlen(data) : h->cmd_len),
    };
    size_t len;
    cleanup_free char *block = brig_session_reply_pack(&r, data, &len);
    if (block)
        brig_write_all(fd, block, len);
}

void brig_session_hold(const struct brig_session_start_options *o, int lock_fd, int report_fd)
{
    brig_error_t err = NULL;
    /* The move onto the guard of brig's file that each exec would make
     * (selfexe.h), made once, before its fd goes with the caller's. */
    if (brig_selfexe_finish(&err) < 0) {
        report(report_fd, NULL, err);
        _exit(1);
    }
    if (detach(&lock_fd, &report_fd) < 0)
        _exit(1); /* the starter hears the pipe close unanswered */
    struct brig_session_held h = {
        .master = -1,
        .listen_fd = -1,
        .lock_fd = lock_fd,
        .sandbox_fd = -1,
        .sessions_fd = -1,
        .dir_fd = -1,
        .pid = -1,
        .name = o->name,
    };
    int r = open_dirs(o->id, &h, &err);
    if (r == 0)
        r = listen_in(&h, &err);
    if (r == 0)
        r = start_process(o, &h, &err);
    if (r == 0)
        r = write_info(&h, &err);
    report(report_fd, &h, err);
    close(report_fd);
    if (r < 0) {
        if (h.pid > 0)
            kill(-h.pid, SIGKILL);
        _exit(1);
    }
    brig_session_serve(&h);
}
