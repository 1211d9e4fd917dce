#define _GNU_SOURCE
/* Sessions as their callers see them (session.h): the session's dir and
 * its lock, the start that forks the holder and waits for its word, and
 * the requests on its socket. The holder's side is session_spawn.c and
 * session_hold.c. */
#include "sandbox/session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "container/container.h"
#include "sandbox/layout.h"
#include "sandbox/lifetime.h"
#include "sandbox/session_int.h"

#define WHAT "sandbox session"

void brig_session_info_clear(struct brig_session_info *info)
{
    free(info->name);
    for (size_t i = 0; info->argv && info->argv[i]; i++)
        free(info->argv[i]);
    free(info->argv);
    *info = (struct brig_session_info){ 0 };
}

void brig_session_output_clear(struct brig_session_output *out)
{
    free(out->data);
    *out = (struct brig_session_output){ 0 };
}

void brig_session_list_free(struct brig_session_info *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        brig_session_info_clear(&list[i]);
    free(list);
}

/* ---- the dir ---- */

/* HOME/ID/sessions, opened; `make` creates it (and not the sandbox's). A
 * sandbox without a dir is ENOENT in the user's words. */
static int open_sessions(const char *id, bool make, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return brig_error_wrap(err, WHAT);
    cleanup_close int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0 && errno == ENOENT)
        return brig_error_kind(err, ENOENT, WHAT ": no sandbox `%s`", id);
    if (top < 0)
        return brig_error_set(err, errno, WHAT ": open `%s`", dir);
    if (make && mkdirat(top, BRIG_SESSION_DIR, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, WHAT ": mkdir `%s/%s`", dir, BRIG_SESSION_DIR);
    int fd = openat(top, BRIG_SESSION_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENOENT)
        return brig_error_set(err, errno, WHAT ": open `%s/%s`", dir, BRIG_SESSION_DIR);
    return fd < 0 ? -2 : fd; /* -2: no session was ever started */
}

static int no_session(const char *id, const char *name, brig_error_t *err)
{
    return brig_error_kind(err, ENOENT, WHAT " `%s`: no such session in sandbox `%s`", name, id);
}

/* A connection to the session's holder. */
static int connect_holder(const char *id, const char *name, brig_error_t *err)
{
    if (brig_session_name_validate(name, err) < 0)
        return brig_error_wrap(err, WHAT);
    cleanup_close int sessions = open_sessions(id, false, err);
    if (sessions == -2)
        return no_session(id, name, err);
    if (sessions < 0)
        return -1;
    cleanup_close int dir = openat(sessions, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir < 0)
        return errno == ENOENT ? no_session(id, name, err)
                               : brig_error_set(err, errno, WHAT " `%s`: open its dir", name);
    /* Through the dir's fd: the home's path may be longer than a socket
     * address holds. */
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", dir, BRIG_SESSION_SOCK);
    cleanup_close int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return brig_error_set(err, errno, WHAT ": socket");
    if (connect(s, (struct sockaddr *) &addr, sizeof addr) < 0) {
        /* No socket, or nobody behind it: the holder is gone. */
        if (errno == ENOENT || errno == ECONNREFUSED)
            return no_session(id, name, err);
        return brig_error_set(err, errno, WHAT " `%s`: connect", name);
    }
    return brig_steal_fd(s);
}

/* ---- a request ---- */

static int send_all(int fd, const void *p, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = send(fd, (const char *) p + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        off += (size_t) w;
    }
    return 0;
}

/* The reply's header and data; an error reply becomes *err. -2 when the
 * holder closed without a word: it ended meanwhile (ENOENT). */
static int receive_reply(int fd, const char *name, struct brig_session_reply *rp, char **data,
                         brig_error_t *err)
{
    *data = NULL;
    ssize_t n = brig_read_all(fd, rp, sizeof *rp);
    if (n < 0)
        return brig_error_set(err, errno, WHAT " `%s`: read its answer", name);
    if (n == 0)
        return brig_error_kind(err, ENOENT, WHAT " `%s`: it ended before it answered", name), -2;
    if ((size_t) n < sizeof *rp || rp->n_data > 2 * BRIG_SESSION_BUFFER)
        return brig_error_set(err, EPROTO, WHAT " `%s`: its holder gave no answer", name);
    *data = malloc((size_t) rp->n_data + 1);
    if (*data == NULL)
        return brig_error_set(err, ENOMEM, WHAT);
    if (brig_read_all(fd, *data, rp->n_data) != (ssize_t) rp->n_data)
        return brig_error_set(err, EPROTO, WHAT " `%s`: its answer was cut short", name);
    (*data)[rp->n_data] = '\0';
    if (rp->errnum != 0)
        return brig_error_kind(err, rp->errnum, WHAT " `%s`: %s", name, *data);
    return 0;
}

/* Until the holder closes: it has ended when it closes early. */
static void wait_closed(int fd)
{
    char c;
    while (read(fd, &c, 1) > 0 || errno == EINTR)
        ;
}

/* One request on a fresh connection. A reply that ends the holder (the
 * process's last output, a kill) is waited out until the holder is gone,
 * so its dir is too when this returns. */
static int request(const char *id, const char *name, const struct brig_session_request *rq,
                   const char *chars, const char *until, struct brig_session_reply *rp, char **data,
                   brig_error_t *err)
{
    *data = NULL;
    cleanup_close int s = connect_holder(id, name, err);
    if (s < 0)
        return -1;
    if (send_all(s, rq, sizeof *rq) < 0 || send_all(s, chars, rq->n_chars) < 0
        || send_all(s, until, rq->n_until) < 0)
        return brig_error_set(err, errno, WHAT " `%s`: send the request", name);
    if (receive_reply(s, name, rp, data, err) < 0)
        return -1;
    if (!rp->alive || rq->op == BRIG_SESSION_OP_KILL)
        wait_closed(s);
    return 0;
}

int brig_session_input(const char *id, const char *name, const char *chars, size_t n, int wait_ms,
                       const char *until, int max_ms, struct brig_session_output *out,
                       brig_error_t *err)
{
    *out = (struct brig_session_output){ 0 };
    size_t n_until = until ? strlen(until) : 0;
    if (n > BRIG_SESSION_MAX_CHARS)
        return brig_error_kind(err, BRIG_E_INPUT, WHAT " `%s`: input over %u bytes", name,
                               BRIG_SESSION_MAX_CHARS);
    if (n_until > BRIG_SESSION_MAX_UNTIL)
        return brig_error_kind(err, BRIG_E_INPUT, WHAT " `%s`: an `until` over %u bytes", name,
                               BRIG_SESSION_MAX_UNTIL);
    struct brig_session_request rq = {
        .magic = BRIG_SESSION_MAGIC,
        .op = BRIG_SESSION_OP_INPUT,
        .wait_ms = wait_ms,
        .max_ms = max_ms,
        .n_chars = (uint32_t) n,
        .n_until = (uint32_t) n_until,
    };
    struct brig_session_reply rp;
    char *data;
    /* Typing is activity; a read is only looking. */
    if (n > 0)
        brig_sandbox_mark_active(id);
    if (request(id, name, &rq, chars, until, &rp, &data, err) < 0) {
        free(data);
        return -1;
    }
    *out = (struct brig_session_output){
        .data = data,
        .len = rp.n_data,
        .dropped = rp.dropped,
        .alive = rp.alive,
        .exit_status = rp.exit_status,
    };
    return 0;
}

int brig_session_kill(const char *id, const char *name, brig_error_t *err)
{
    struct brig_session_request rq = { .magic = BRIG_SESSION_MAGIC, .op = BRIG_SESSION_OP_KILL };
    struct brig_session_reply rp;
    cleanup_free char *data = NULL;
    brig_sandbox_mark_active(id);
    return request(id, name, &rq, NULL, NULL, &rp, &data, err);
}

/* The pid a host process has in its innermost pid namespace (the
 * sandbox's): the last of /proc/PID/status's NSpid; the host's when that
 * can't be read. */
static pid_t pid_inside(pid_t host)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int) host);
    cleanup_file FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        char *last = strrchr(line, '\t');
        long v = last ? strtol(last + 1, NULL, 10) : 0;
        return v > 0 ? (pid_t) v : host;
    }
    return host;
}

/* A command as the holder sends it, words ended by NULs, as an argv;
 * NULL when memory ran out. */
static char **unpack_argv(const char *data, size_t n)
{
    size_t words = 0;
    for (size_t i = 0; i < n; i++)
        words += data[i] == '\0';
    char **argv = calloc(words + 1, sizeof *argv);
    for (size_t i = 0, w = 0; argv && i < n && w < words; w++) {
        if ((argv[w] = strdup(data + i)) == NULL) {
            for (size_t k = 0; k < w; k++)
                free(argv[k]);
            free(argv);
            return NULL;
        }
        i += strlen(data + i) + 1;
    }
    return argv;
}

/* What the holder says of its session. */
static int info(const char *id, const char *name, struct brig_session_info *out, brig_error_t *err)
{
    struct brig_session_request rq = { .magic = BRIG_SESSION_MAGIC, .op = BRIG_SESSION_OP_INFO };
    struct brig_session_reply rp;
    cleanup_free char *cmd = NULL;
    if (request(id, name, &rq, NULL, NULL, &rp, &cmd, err) < 0)
        return -1;
    *out = (struct brig_session_info){
        .name = strdup(name),
        .pid = pid_inside(rp.pid),
        .host_pid = rp.pid,
        .argv = unpack_argv(cmd, rp.n_data),
        .alive = rp.alive,
        .exit_status = rp.exit_status,
        .unread = rp.unread,
        .started_ms = rp.started_ms,
    };
    if (out->name == NULL || out->argv == NULL)
        return brig_session_info_clear(out), brig_error_set(err, ENOMEM, WHAT);
    return 0;
}

/* ---- list ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct brig_session_info *) a)->name,
                  ((const struct brig_session_info *) b)->name);
}

/* Appends the session `name` when its holder answers; one that doesn't
 * has ended (or is still starting) and is left out. */
static int list_one(const char *id, const char *name, struct brig_session_info **v, size_t *n,
                    size_t *cap, brig_error_t *err)
{
    struct brig_session_info one;
    brig_error_t why = NULL;
    if (info(id, name, &one, &why) < 0) {
        bool gone = why->errnum == ENOENT || why->errnum == EPROTO;
        if (gone)
            return brig_error_release(&why), 0;
        brig_error_release(err);
        *err = why;
        return -1;
    }
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        struct brig_session_info *bigger = realloc(*v, c * sizeof *bigger);
        if (bigger == NULL)
            return brig_session_info_clear(&one), brig_error_set(err, ENOMEM, WHAT);
        *v = bigger;
        *cap = c;
    }
    (*v)[(*n)++] = one;
    return 0;
}

int brig_session_list(const char *id, struct brig_session_info **out, size_t *n, brig_error_t *err)
{
    *out = NULL;
    *n = 0;
    int fd = open_sessions(id, false, err);
    if (fd == -2)
        return 0;
    if (fd < 0)
        return -1;
    cleanup_dir DIR *d = fdopendir(fd);
    if (d == NULL)
        return close(fd), brig_error_set(err, errno, WHAT ": read the sessions of `%s`", id);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        brig_error_t bad = NULL;
        if (brig_session_name_validate(de->d_name, &bad) < 0) {
            brig_error_release(&bad); /* `.`, `..`, or not a session's */
            continue;
        }
        if (list_one(id, de->d_name, out, n, &cap, err) < 0) {
            brig_session_list_free(*out, *n);
            *out = NULL;
            *n = 0;
            return -1;
        }
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, by_name);
    return 0;
}

/* ---- start ---- */

void brig_session_remove_dir(int sessions, int dir, const char *name)
{
    unlinkat(dir, BRIG_SESSION_SOCK, 0);
    unlinkat(dir, BRIG_SESSION_INFO, 0);
    unlinkat(dir, BRIG_SESSION_LOCK, 0);
    unlinkat(sessions, name, AT_REMOVEDIR);
}

/* A session runs in a running sandbox, one with a dir of its own. */
static int check_sandbox(const struct brig_session_start_options *o, brig_error_t *err)
{
    cleanup_state struct brig_state *st = NULL;
    enum brig_status status;
    brig_error_t why = NULL;
    if (brig_container_state(o->root, o->id, &st, &status, &why) < 0) {
        bool missing = why->errnum == ENOENT;
        brig_error_release(err);
        *err = why;
        if (missing)
            return brig_error_kind(err, ENOENT, WHAT ": no sandbox `%s`", o->id);
        return brig_error_wrap(err, WHAT);
    }
    if (status != BRIG_STATUS_RUNNING)
        return brig_error_kind(err, BRIG_E_STATE, WHAT ": sandbox `%s` is %s", o->id,
                               brig_status_name(status));
    return 0;
}

/* The session's lock, taken: 1 (its fd in *fd), 0 to try again (the dir
 * went with a holder that ended meanwhile), 2 when a holder has it. */
static int try_lock(int sessions, const char *name, int *fd, brig_error_t *err)
{
    char path[BRIG_SESSION_NAME_MAX + sizeof "/" BRIG_SESSION_LOCK];
    snprintf(path, sizeof path, "%s/%s", name, BRIG_SESSION_LOCK);
    if (mkdirat(sessions, name, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, WHAT " `%s`: mkdir", name);
    cleanup_close int l = openat(sessions, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (l < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, WHAT " `%s`: open its lock", name);
    if (flock(l, LOCK_EX | LOCK_NB) < 0)
        return errno == EWOULDBLOCK ? 2 : brig_error_set(err, errno, WHAT " `%s`: lock", name);
    /* A holder unlinks the lock as it ends, still holding it: ours must
     * be the file at the path now. */
    struct stat a, b;
    if (fstat(l, &a) < 0 || fstatat(sessions, path, &b, AT_SYMLINK_NOFOLLOW) < 0
        || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
        return 0;
    *fd = brig_steal_fd(l);
    return 1;
}

/* A held lock: a running session is EEXIST; one whose process exited is
 * ended, so that its name is free (0: try again). */
static int lock_held(const char *id, const char *name, brig_error_t *err)
{
    struct brig_session_info in;
    brig_error_t why = NULL;
    if (info(id, name, &in, &why) < 0) {
        /* Starting, or ending: not answering yet, or any more. */
        if (why->errnum == ENOENT || why->errnum == EPROTO)
            return brig_error_release(&why), 0;
        brig_error_release(err);
        *err = why;
        return -1;
    }
    if (in.alive) {
        int r = brig_error_kind(err, EEXIST, WHAT " `%s`: in use in sandbox `%s` (pid %d)", name,
                                id, (int) in.pid);
        brig_session_info_clear(&in);
        return r;
    }
    brig_session_info_clear(&in);
    return brig_session_kill(id, name, err) < 0 ? -1 : 0;
}

static int take_lock(const struct brig_session_start_options *o, int sessions, brig_error_t *err)
{
    /* A holder between its lock and its socket answers within moments;
     * one still silent after about two seconds counts as in use. */
    for (int tries = 0; tries < 100; tries++) {
        int fd = -1;
        int r = try_lock(sessions, o->name, &fd, err);
        if (r < 0 || r == 1)
            return r < 0 ? -1 : fd;
        if (r == 2 && lock_held(o->id, o->name, err) < 0)
            return -1;
        if (r == 2)
            nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
    }
    return brig_error_kind(err, EEXIST, WHAT " `%s`: being started or ended in sandbox `%s`",
                           o->name, o->id);
}

/* HOME/ID/sessions when no session is left in it: a start that failed
 * leaves nothing behind. */
static void remove_if_empty(const char *id)
{
    cleanup_free char *path = NULL;
    brig_error_t ignored = NULL;
    if (brig_sandbox_path(id, BRIG_SESSION_DIR, &path, &ignored) == 0)
        rmdir(path);
    brig_error_release(&ignored);
}

/* The holder, detached: a grandchild in a session of its own, so nothing
 * of the caller (its terminal, its process group, its wait) holds it. */
static int fork_holder(const struct brig_session_start_options *o, int lock_fd, const int report[2],
                       brig_error_t *err)
{
    pid_t child = fork();
    if (child < 0)
        return brig_error_set(err, errno, WHAT ": fork");
    if (child == 0) {
        close(report[0]);
        pid_t holder = setsid() < 0 ? -1 : fork();
        if (holder == 0)
            brig_session_hold(o, lock_fd, report[1]);
        _exit(holder < 0);
    }
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* The holder's word: its process's pid and command, or the error. */
static int read_report(const struct brig_session_start_options *o, int fd,
                       struct brig_session_info *info, brig_error_t *err)
{
    struct brig_session_reply rp;
    cleanup_free char *cmd = NULL;
    int r = receive_reply(fd, o->name, &rp, &cmd, err);
    if (r == -2 || (r < 0 && (*err)->errnum == EPROTO))
        return brig_error_kind(err, EPROTO, WHAT " `%s`: its holder died before it was ready",
                               o->name);
    if (r < 0)
        return -1;
    *info = (struct brig_session_info){
        .name = strdup(o->name),
        .pid = pid_inside(rp.pid),
        .host_pid = rp.pid,
        .argv = unpack_argv(cmd, rp.n_data),
        .alive = true,
        .started_ms = rp.started_ms,
    };
    if (info->name == NULL || info->argv == NULL)
        return brig_session_info_clear(info), brig_error_set(err, ENOMEM, WHAT);
    return 0;
}

int brig_session_start(const struct brig_session_start_options *o, struct brig_session_info *info,
                       brig_error_t *err)
{
    *info = (struct brig_session_info){ 0 };
    if (brig_session_name_validate(o->name, err) < 0 || brig_sandbox_id_validate(o->id, err) < 0)
        return brig_error_wrap(err, WHAT);
    if (check_sandbox(o, err) < 0)
        return -1;
    cleanup_close int sessions = open_sessions(o->id, true, err);
    if (sessions < 0)
        return -1;
    cleanup_close int lock = take_lock(o, sessions, err);
    if (lock < 0)
        return -1;
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, WHAT ": pipe");
    cleanup_close int from_holder = report[0];
    int r = fork_holder(o, lock, report, err);
    close(report[1]);
    if (r == 0)
        r = read_report(o, from_holder, info, err);
    if (r < 0) {
        /* The holder is gone once its end of the pipe is: what it made
         * goes, under the lock we still hold. */
        wait_closed(from_holder);
        cleanup_close int dir = openat(sessions, o->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        brig_session_remove_dir(sessions, dir, o->name);
        remove_if_empty(o->id);
        return -1;
    }
    brig_sandbox_mark_active(o->id);
    return 0;
}
