#define _GNU_SOURCE
/* The holder's loop (session_int.h): one poll over the pty's master, the
 * listening socket, a signalfd for SIGCHLD and every client. The
 * process's output always goes into the session's bounded buffer, read or
 * not; a client's input goes to the master as it takes it; a client
 * waiting for output (quiet, a match, the process's end, its cap) holds
 * up no other, since each is a state here and not a call. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/session_int.h"

#define MAX_CLIENTS 64
#define CHECK_MS 1000      /* how often the dirs are looked at */
#define DRAIN_MS 200       /* output still awaited after the process exited */
#define UNTIL_EVERY_MS 20  /* an `until` is tried at most this often */
#define KILL_WAIT_MS 5000  /* for a killed process to go */
#define FIRST_WORD_MS 1000 /* input held back for the process's first output */
#define FLUSH_MS 2000      /* for the last replies to leave */
#define READ_CHUNK 65536   /* bytes of output per read */
#define READ_PER_TURN (4 * READ_CHUNK)

struct client {
    int fd;
    struct brig_session_request rq;
    char *body;                  /* chars, then until */
    size_t got;                  /* bytes of the request read */
    bool done;                   /* answered, kept open until the holder's end */
    bool waiting;                /* an input's wait */
    bool kill;                   /* a kill, answered once the process is gone */
    int64_t since_ms, cap_ms;    /* the wait's start and its end at the latest */
    bool has_until, until_stale; /* new output since the regex was tried */
    int64_t until_at;
    regex_t until;
    char *reply;
    size_t reply_len, sent;
};

struct holder {
    const struct brig_session_held *s;
    struct brig_session_buf out;
    int sig_fd;
    bool master_open; /* the slave side still has a user */
    int64_t started_ms, last_output_ms, last_input_ms;
    /* Input waits for the process's first output (its prompt, mostly):
     * typed earlier, the pty would echo it before the prompt. */
    bool spoke;
    char *input; /* on its way to the master */
    size_t input_len, input_off;
    bool reaped, ended, ending, orphaned;
    int status;
    int64_t reaped_ms, kill_by, end_by, next_check_ms;
    struct client c[MAX_CLIENTS];
    size_t n;
};

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

char *brig_session_reply_pack(const struct brig_session_reply *r, const char *data, size_t *len)
{
    *len = sizeof *r + r->n_data;
    char *block = malloc(*len);
    if (block) {
        memcpy(block, r, sizeof *r);
        memcpy(block + sizeof *r, data, r->n_data);
    }
    return block;
}

/* ---- answers ---- */

static void end_wait(struct client *c)
{
    if (c->has_until)
        regfree(&c->until);
    c->has_until = c->waiting = c->kill = false;
}

static void queue_reply(struct client *c, const struct brig_session_reply *r, const char *data)
{
    end_wait(c);
    free(c->reply);
    c->sent = 0;
    c->reply = brig_session_reply_pack(r, data, &c->reply_len);
    if (c->reply == NULL)
        c->done = true; /* out of memory: the client hears nothing and goes */
}

static void reply_error(struct client *c, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reply_error(struct client *c, int errnum, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct brig_session_reply r = { .errnum = errnum, .n_data = (uint32_t) strlen(msg) };
    queue_reply(c, &r, msg);
}

/* The reply's figures for the session as it stands. */
static struct brig_session_reply state_of(const struct holder *h)
{
    return (struct brig_session_reply){
        .alive = !h->ended,
        .exit_status = h->ended ? h->status : 0,
        .pid = h->s->pid,
        .unread = h->out.len,
        .started_ms = h->s->started_ms,
    };
}

static void begin_end(struct holder *h, int64_t now);

/* What the session wrote since the last read; with its end, the holder's
 * too. */
static void answer_output(struct holder *h, struct client *c, int64_t now)
{
    char *data;
    size_t len;
    uint64_t dropped;
    brig_error_t err = NULL;
    if (brig_session_buf_take(&h->out, &data, &len, &dropped, &err) < 0) {
        reply_error(c, ENOMEM, "%s", err->msg);
        brig_error_release(&err);
        return;
    }
    struct brig_session_reply r = state_of(h);
    r.dropped = dropped;
    r.n_data = (uint32_t) len;
    queue_reply(c, &r, data);
    free(data);
    if (h->ended)
        begin_end(h, now);
}

static void answer_info(struct holder *h, struct client *c)
{
    struct brig_session_reply r = state_of(h);
    r.n_data = (uint32_t) h->s->cmd_len;
    queue_reply(c, &r, h->s->cmd);
}

/* ---- the process ---- */

/* Every process of the session, as the host's /proc numbers them: the
 * pty's jobs each have a group of their own. */
static void kill_members(pid_t sid)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char path[64], stat[512], *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "re");
        size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
        if (f)
            fclose(f);
        stat[n] = '\0';
        /* After the command's name, which may hold anything but ends at
         * the last ')': state, ppid, pgrp, session. */
        char *p = strrchr(stat, ')');
        int session = 0;
        if (p && sscanf(p + 1, " %*c %*d %*d %d", &session) == 1 && session == sid)
            kill((pid_t) pid, SIGKILL);
    }
    if (d)
        closedir(d);
}

static void kill_session(struct holder *h, int64_t now)
{
    pid_t fg = h->master_open ? tcgetpgrp(h->s->master) : -1;
    kill(-h->s->pid, SIGKILL);
    if (fg > 0)
        kill(-fg, SIGKILL);
    kill_members(h->s->pid);
    if (h->kill_by == 0)
        h->kill_by = now + KILL_WAIT_MS;
}

static void reap(struct holder *h, int64_t now)
{
    struct signalfd_siginfo si;
    while (read(h->sig_fd, &si, sizeof si) > 0)
        ;
    int w;
    pid_t pid;
    /* Orphans of the library's own steps are ours to reap too. */
    while ((pid = waitpid(-1, &w, WNOHANG)) > 0) {
        if (pid != h->s->pid || h->reaped)
            continue;
        h->reaped = true;
        h->reaped_ms = now;
        h->status = WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
    }
}

static void read_output(struct holder *h, int64_t now)
{
    char buf[READ_CHUNK];
    for (size_t total = 0; total < READ_PER_TURN;) {
        ssize_t n = read(h->s->master, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            /* EIO: nothing holds the slave any more, and its output was
             * all read. */
            h->master_open = false;
            h->input_off = h->input_len = 0;
            return;
        }
        brig_session_buf_append(&h->out, buf, (size_t) n);
        total += (size_t) n;
        h->last_output_ms = now;
        h->spoke = true;
        for (size_t i = 0; i < h->n; i++)
            h->c[i].until_stale = true;
    }
}

static void write_input(struct holder *h, int64_t now)
{
    h->last_input_ms = now;
    while (h->input_off < h->input_len) {
        ssize_t n = write(h->s->master, h->input + h->input_off, h->input_len - h->input_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0) {
            h->input_off = h->input_len; /* the slave is gone: nobody to read it */
            break;
        }
        h->input_off += (size_t) n;
    }
    h->input_off = h->input_len = 0;
}

static int queue_input(struct holder *h, const char *chars, size_t n)
{
    if (n == 0 || h->reaped || !h->master_open)
        return 0;
    char *more = realloc(h->input, h->input_len + n);
    if (more == NULL)
        return -1;
    memcpy(more + h->input_len, chars, n);
    h->input = more;
    h->input_len += n;
    return 0;
}

/* ---- requests ---- */

static void start_input(struct holder *h, struct client *c, int64_t now)
{
    const struct brig_session_request *rq = &c->rq;
    if (rq->n_until > 0) {
        const char *until = c->body + rq->n_chars; /* NUL-terminated by read_request */
        int r = regcomp(&c->until, until, REG_EXTENDED | REG_NEWLINE);
        if (r != 0) {
            char why[256];
            regerror(r, &c->until, why, sizeof why);
            reply_error(c, BRIG_E_INPUT, "invalid `until` regex `%s`: %s", until, why);
            return;
        }
        c->has_until = c->until_stale = true;
    }
    if (h->input_len - h->input_off + rq->n_chars > 4 * (size_t) BRIG_SESSION_MAX_CHARS) {
        reply_error(c, BRIG_E_STATE, "its process is not reading its input");
        return;
    }
    if (queue_input(h, c->body, rq->n_chars) < 0) {
        reply_error(c, ENOMEM, "input: out of memory");
        return;
    }
    c->waiting = true;
    c->since_ms = now;
    c->cap_ms = now + (rq->max_ms > 0 ? rq->max_ms : BRIG_SESSION_DEFAULT_MAX_MS);
}

static void start_request(struct holder *h, struct client *c, int64_t now)
{
    switch (c->rq.op) {
    case BRIG_SESSION_OP_INPUT:
        start_input(h, c, now);
        break;
    case BRIG_SESSION_OP_INFO:
        answer_info(h, c);
        break;
    case BRIG_SESSION_OP_KILL:
        c->kill = true; /* answered once the process is gone (settle) */
        if (!h->reaped)
            kill_session(h, now);
        break;
    }
}

static bool request_valid(const struct brig_session_request *rq)
{
    return rq->magic == BRIG_SESSION_MAGIC && rq->op >= BRIG_SESSION_OP_INPUT
           && rq->op <= BRIG_SESSION_OP_KILL && rq->n_chars <= BRIG_SESSION_MAX_CHARS
           && rq->n_until <= BRIG_SESSION_MAX_UNTIL;
}

/* Reads what the client sent: its header, then its body, then the
 * request starts. -1: the client left, or broke the protocol. */
static int read_request(struct holder *h, struct client *c, int64_t now)
{
    size_t head = sizeof c->rq;
    size_t whole = head + (c->got >= head ? c->rq.n_chars + c->rq.n_until : 0);
    char *to = c->got < head ? (char *) &c->rq + c->got : c->body + (c->got - head);
    size_t want = c->got < head ? head - c->got : whole - c->got;
    if (c->waiting || c->kill || c->reply) {
        /* Nothing more is expected: a read only sees it leave. */
        char probe;
        to = &probe;
        want = 1;
    }
    ssize_t n = recv(c->fd, to, want, MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0 || c->waiting || c->kill || c->reply)
        return -1;
    c->got += (size_t) n;
    if (c->got == head) {
        if (!request_valid(&c->rq)) {
            reply_error(c, BRIG_E_INPUT, "not a request of this brig (magic %#x)", c->rq.magic);
            return 0;
        }
        c->body = calloc(1, (size_t) c->rq.n_chars + c->rq.n_until + 1);
        if (c->body == NULL)
            return -1;
        whole = head + c->rq.n_chars + c->rq.n_until;
    }
    if (c->got >= head && c->got == whole)
        start_request(h, c, now);
    return 0;
}

/* Sends what is left of the reply. -1: the client is gone (or, before the
 * end, done with: a connection carries one request). */
static int flush_reply(struct holder *h, struct client *c)
{
    while (c->sent < c->reply_len) {
        ssize_t n = send(c->fd, c->reply + c->sent, c->reply_len - c->sent,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n < 0)
            return -1;
        c->sent += (size_t) n;
    }
    free(c->reply);
    c->reply = NULL;
    c->done = true;
    /* At the end, the connection stays open until the holder exits: the
     * client's EOF says that it did. */
    return h->ending ? 0 : -1;
}

static void drop_client(struct holder *h, size_t i)
{
    struct client *c = &h->c[i];
    end_wait(c);
    close(c->fd);
    free(c->body);
    free(c->reply);
    h->c[i] = h->c[--h->n];
}

static void accept_clients(struct holder *h)
{
    for (;;) {
        int fd = accept4(h->s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (h->n == MAX_CLIENTS) {
            close(fd); /* it hears EOF and may try again */
            continue;
        }
        h->c[h->n++] = (struct client){ .fd = fd };
    }
}

/* ---- waits and the end ---- */

static bool until_matches(struct holder *h, struct client *c, int64_t now)
{
    c->until_stale = false;
    c->until_at = now;
    regmatch_t m = { .rm_so = 0, .rm_eo = (regoff_t) h->out.len };
    const char *text = brig_session_buf_linear(&h->out);
    return regexec(&c->until, text, 1, &m, REG_STARTEND) == 0;
}

/* When the wait's output is quiet: wait_ms after the latest of its start,
 * the last output and the last input written; INT64_MAX while input is on
 * its way, or without a quiet period. */
static int64_t quiet_at(const struct holder *h, const struct client *c)
{
    if (c->rq.wait_ms <= 0 || h->input_off < h->input_len)
        return INT64_MAX;
    int64_t from = c->since_ms > h->last_output_ms ? c->since_ms : h->last_output_ms;
    from = from > h->last_input_ms ? from : h->last_input_ms;
    return from + c->rq.wait_ms;
}

static bool wait_over(struct holder *h, struct client *c, int64_t now)
{
    if (h->ended || now >= c->cap_ms || now >= quiet_at(h, c))
        return true;
    return c->has_until && c->until_stale && now >= c->until_at + UNTIL_EVERY_MS
           && until_matches(h, c, now);
}

/* Once its last replies are queued: no new client, the dir gone (so the
 * session is gone for whoever asks next), a process still there killed. */
static void begin_end(struct holder *h, int64_t now)
{
    if (h->ending)
        return;
    h->ending = true;
    h->end_by = now + FLUSH_MS;
    close(h->s->listen_fd);
    brig_session_remove_dir(h->s->sessions_fd, h->s->dir_fd, h->s->name);
    if (!h->reaped)
        kill_session(h, now);
    for (size_t i = 0; i < h->n; i++)
        if (h->c[i].waiting)
            answer_output(h, &h->c[i], now);
}

/* The sandbox removed (or the session's own dir): nobody will ask. */
static void watch_dirs(struct holder *h, int64_t now)
{
    if (now < h->next_check_ms)
        return;
    h->next_check_ms = now + CHECK_MS;
    struct stat a, b;
    if (h->orphaned || fstat(h->s->sandbox_fd, &a) < 0 || fstat(h->s->dir_fd, &b) < 0)
        return;
    if (a.st_nlink > 0 && b.st_nlink > 0)
        return;
    h->orphaned = true;
    if (!h->reaped)
        kill_session(h, now);
}

static void settle(struct holder *h, int64_t now)
{
    if (!h->spoke && now >= h->started_ms + FIRST_WORD_MS)
        h->spoke = true; /* a silent program: typed at once */
    if (!h->ended && h->reaped && (!h->master_open || now >= h->reaped_ms + DRAIN_MS))
        h->ended = true;
    if (!h->ended && h->kill_by && now >= h->kill_by) {
        h->ended = true; /* unkillable (stuck in the kernel): given up on */
        h->status = 128 + SIGKILL;
    }
    for (size_t i = 0; i < h->n; i++) {
        struct client *c = &h->c[i];
        if (c->waiting && wait_over(h, c, now))
            answer_output(h, c, now);
        if (c->kill && h->ended) {
            struct brig_session_reply r = state_of(h);
            queue_reply(c, &r, "");
            begin_end(h, now);
        }
    }
    if (h->ended && (h->orphaned || h->kill_by || now >= h->reaped_ms + BRIG_SESSION_KEEP_MS))
        begin_end(h, now);
}

static int next_timeout(const struct holder *h, int64_t now)
{
    int64_t t = h->next_check_ms;
    if (!h->spoke)
        t = min64(t, h->started_ms + FIRST_WORD_MS);
    if (h->reaped && !h->ended)
        t = min64(t, h->reaped_ms + DRAIN_MS);
    if (h->kill_by && !h->ended)
        t = min64(t, h->kill_by);
    if (h->ended)
        t = min64(t, h->ending ? h->end_by : h->reaped_ms + BRIG_SESSION_KEEP_MS);
    for (size_t i = 0; i < h->n; i++) {
        const struct client *c = &h->c[i];
        if (!c->waiting)
            continue;
        t = min64(t, min64(c->cap_ms, quiet_at(h, c)));
        if (c->has_until && c->until_stale)
            t = min64(t, c->until_at + UNTIL_EVERY_MS);
    }
    return t <= now ? 0 : (int) min64(t - now, CHECK_MS);
}

/* ---- the loop ---- */

enum { P_SIGNAL, P_MASTER, P_LISTEN, P_CLIENTS };

static size_t poll_set(const struct holder *h, struct pollfd *p)
{
    p[P_SIGNAL] = (struct pollfd){ .fd = h->sig_fd, .events = POLLIN };
    p[P_MASTER] = (struct pollfd){ .fd = h->master_open ? h->s->master : -1, .events = POLLIN };
    if (h->input_off < h->input_len && h->spoke)
        p[P_MASTER].events |= POLLOUT;
    p[P_LISTEN] = (struct pollfd){ .fd = h->ending ? -1 : h->s->listen_fd, .events = POLLIN };
    for (size_t i = 0; i < h->n; i++) {
        const struct client *c = &h->c[i];
        short events = c->done ? 0 : POLLIN;
        if (c->reply)
            events |= POLLOUT;
        p[P_CLIENTS + i] = (struct pollfd){ .fd = c->fd, .events = events };
    }
    return P_CLIENTS + h->n;
}

/* The clients in the order poll saw them; one dropped takes the last's
 * place, which poll saw at the end: walked backwards, none is missed. */
static void serve_clients(struct holder *h, const struct pollfd *p, int64_t now)
{
    for (size_t i = h->n; i-- > 0;) {
        short ev = p[P_CLIENTS + i].revents;
        struct client *c = &h->c[i];
        int r = 0;
        if (ev & (POLLIN | POLLHUP | POLLERR) && !c->done)
            r = read_request(h, c, now);
        if (r == 0 && c->reply && ev & (POLLOUT | POLLHUP | POLLERR))
            r = flush_reply(h, c);
        if (r < 0)
            drop_client(h, i);
    }
}

static bool flushed(const struct holder *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->c[i].reply)
            return false;
    return true;
}

void brig_session_serve(const struct brig_session_held *s)
{
    static struct holder h; /* the clients' table: off the stack */
    brig_error_t err = NULL;
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    h.s = s;
    h.master_open = true;
    h.started_ms = now_ms();
    h.sig_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    if (h.sig_fd < 0 || brig_session_buf_init(&h.out, BRIG_SESSION_BUFFER, &err) < 0) {
        kill(-s->pid, SIGKILL);
        brig_session_remove_dir(s->sessions_fd, s->dir_fd, s->name);
        _exit(1);
    }
    for (;;) {
        int64_t now = now_ms();
        reap(&h, now);
        watch_dirs(&h, now);
        settle(&h, now);
        if (h.ending && (flushed(&h) || now >= h.end_by))
            break;
        struct pollfd p[P_CLIENTS + MAX_CLIENTS];
        size_t n = poll_set(&h, p);
        if (poll(p, n, next_timeout(&h, now)) < 0 && errno != EINTR)
            break;
        now = now_ms();
        if (p[P_MASTER].revents & (POLLIN | POLLHUP | POLLERR))
            read_output(&h, now);
        if (p[P_MASTER].revents & POLLOUT)
            write_input(&h, now);
        /* The clients poll saw first: a new one has no entry in p. */
        serve_clients(&h, p, now);
        if (p[P_LISTEN].revents & POLLIN)
            accept_clients(&h);
    }
    begin_end(&h, now_ms()); /* when poll failed: the end all the same */
    _exit(0);
}
