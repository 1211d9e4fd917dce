#define _GNU_SOURCE
/* POST /v1/sandboxes/ID/exec: the process starts in a job (worker.c;
 * jobs.c runs sandbox/exec.h, as `brig sandbox exec` does) with pipes for
 * its stdio, and its output streams back as newline-delimited JSON
 * events while it runs: {"stdout": ...}, {"stderr": ...}, and last
 * {"exit": N} (with "timeout": true when its time ran out). The job
 * reports on a pipe of its own: its start (or why it failed), then the
 * exit. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api.h"
#include "base/cleanup.h"
#include "base/utils.h"

#define CHUNK 65536

struct exec_stream {
    pid_t worker, pid; /* the worker, and the process it started */
    int client;        /* the connection's socket: its hangup ends the exec */
    bool gone;         /* ... which it did */
    int out, err, rep; /* read ends; -1 once closed */
    char *pending;     /* events made, not yet given to the server */
    size_t pending_len, pending_off;
    char tail[2][4]; /* an incomplete UTF-8 sequence held per stream */
    size_t tail_len[2];
    bool exited, done;
    struct api_exec_report last;
};

/* stdin's bytes, written by a thread of their own so that a process
 * that writes before it reads can't stall the stream. */
struct feeder {
    int fd;
    char *data;
    size_t len;
};

static void *feed(void *arg)
{
    struct feeder *f = arg;
    brig_write_all(f->fd, f->data, f->len);
    close(f->fd);
    free(f->data);
    free(f);
    return NULL;
}

static int start_feeder(int fd, const char *data, brig_error_t *err)
{
    struct feeder *f = malloc(sizeof *f);
    if (f == NULL || (f->data = strdup(data)) == NULL) {
        free(f);
        close(fd);
        return brig_error_set(err, ENOMEM, "exec: stdin");
    }
    f->fd = fd;
    f->len = strlen(data);
    pthread_t t;
    int e = pthread_create(&t, NULL, feed, f);
    if (e != 0) {
        close(fd);
        free(f->data);
        free(f);
        return brig_error_set(err, e, "exec: stdin");
    }
    pthread_detach(t);
    return 0;
}

/* ---- events ---- */

static void add_event(struct exec_stream *s, yajl_gen g)
{
    const unsigned char *buf;
    size_t len;
    if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
        return;
    char *bigger = realloc(s->pending, s->pending_len + len + 1);
    if (bigger == NULL)
        return;
    memcpy(bigger + s->pending_len, buf, len);
    bigger[s->pending_len + len] = '\n';
    s->pending = bigger;
    s->pending_len += len + 1;
}

static void output_event(struct exec_stream *s, int which, const char *data, size_t len)
{
    if (len == 0)
        return;
    yajl_gen g = api_gen();
    if (g == NULL)
        return;
    yajl_gen_map_open(g);
    api_gen_key(g, which == 0 ? "stdout" : "stderr");
    api_gen_bytes(g, data, len);
    yajl_gen_map_close(g);
    add_event(s, g);
    yajl_gen_free(g);
}

static void exit_event(struct exec_stream *s)
{
    yajl_gen g = api_gen();
    if (g == NULL)
        return;
    yajl_gen_map_open(g);
    api_gen_key(g, "exit");
    yajl_gen_integer(g, s->last.value);
    if (s->last.timed_out) {
        api_gen_key(g, "timeout");
        yajl_gen_bool(g, 1);
    }
    yajl_gen_map_close(g);
    add_event(s, g);
    yajl_gen_free(g);
}

/* Reads what one pipe has; an event for it, an incomplete character kept
 * for the next read. */
static void read_stream(struct exec_stream *s, int which, int *fd, bool drain)
{
    char buf[CHUNK + 4];
    size_t have = s->tail_len[which];
    memcpy(buf, s->tail[which], have);
    ssize_t n = read(*fd, buf + have, CHUNK);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        output_event(s, which, buf, have); /* the last bytes, whole or not */
        s->tail_len[which] = 0;
        return;
    }
    size_t len = have + (size_t) n;
    size_t keep = drain ? 0 : api_utf8_incomplete_tail(buf, len);
    output_event(s, which, buf, len - keep);
    memcpy(s->tail[which], buf + len - keep, keep);
    s->tail_len[which] = keep;
}

/* Waits for output or the worker's word; false once nothing is left. */
static void pump(struct exec_stream *s)
{
    struct pollfd p[4] = {
        { .fd = s->out, .events = POLLIN },
        { .fd = s->err, .events = POLLIN },
        { .fd = s->exited ? -1 : s->rep, .events = POLLIN },
        { .fd = s->client, .events = POLLRDHUP },
    };
    if (poll(p, 4, -1) < 0)
        return;
    /* The client hung up: no one is left to read, even a process that
     * writes nothing. */
    if (p[3].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
        s->gone = true;
        return;
    }
    if (p[0].revents)
        read_stream(s, 0, &s->out, false);
    if (p[1].revents)
        read_stream(s, 1, &s->err, false);
    if (p[2].revents) {
        if (read(s->rep, &s->last, sizeof s->last) != (ssize_t) sizeof s->last)
            s->last = (struct api_exec_report){ 'X', 255, 0, "" };
        s->exited = true;
    }
    /* Exited: what the pipes hold now is the process's last output; a
     * child it left behind may keep them open, so don't wait for EOF. */
    if (s->exited) {
        for (int i = 0; i < 2; i++) {
            int *fd = i == 0 ? &s->out : &s->err;
            while (*fd >= 0) {
                struct pollfd q = { .fd = *fd, .events = POLLIN };
                if (poll(&q, 1, 0) <= 0) {
                    read_stream(s, i, fd, true);
                    if (*fd >= 0) {
                        close(*fd);
                        *fd = -1;
                    }
                    break;
                }
                read_stream(s, i, fd, false);
            }
        }
        exit_event(s);
        s->done = true;
    }
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct exec_stream *s = cls;
    while (s->pending_off == s->pending_len) {
        s->pending_off = s->pending_len = 0;
        if (s->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (s->gone)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        pump(s);
    }
    size_t n = s->pending_len - s->pending_off;
    if (n > max)
        n = max;
    memcpy(buf, s->pending + s->pending_off, n);
    s->pending_off += n;
    return (ssize_t) n;
}

static void stream_free(void *cls)
{
    struct exec_stream *s = cls;
    if (s->out >= 0)
        close(s->out);
    if (s->err >= 0)
        close(s->err);
    /* The client went before the end: no one is left to tell. The
     * process leads a session of its own, its group with it. */
    if (!s->done && s->pid > 0) {
        kill(-s->pid, SIGKILL);
        kill(s->pid, SIGKILL);
    }
    close(s->rep);
    if (s->worker > 0)
        while (waitpid(s->worker, NULL, 0) < 0 && errno == EINTR)
            ;
    free(s->pending);
    free(s);
}

/* ---- the route ---- */

struct exec_body {
    yajl_val doc;
    char **argv, **env;
    const char *cwd, *user, *stdin_text;
    int64_t timeout_ms;
};

static void body_free(struct exec_body *b)
{
    free(b->argv);
    api_strv_free(b->env);
    yajl_tree_free(b->doc);
}

static int parse_body(const struct api_request *r, struct exec_body *b, brig_error_t *err)
{
    static const char *const allowed[] = { "cmd", "env", "cwd", "user", "timeout", "stdin", NULL };
    if (api_body_object(r, allowed, &b->doc, err) < 0)
        return -1;
    int got = api_field_strv(b->doc, "cmd", &b->argv, err);
    if (got == 0 || (got > 0 && b->argv[0] == NULL))
        return brig_error_kind(err, BRIG_E_INPUT, "body: `cmd` is required (an array of strings)");
    if (got < 0 || api_field_env(b->doc, "env", &b->env, err) < 0
        || api_field_string(b->doc, "cwd", &b->cwd, err) < 0
        || api_field_string(b->doc, "user", &b->user, err) < 0
        || api_field_string(b->doc, "stdin", &b->stdin_text, err) < 0
        || api_field_seconds_ms(b->doc, "timeout", &b->timeout_ms, err) < 0)
        return -1;
    return 0;
}

/* Pipes for stdin (or /dev/null), stdout and stderr: [i][0] read ends,
 * [i][1] write ends. */
static int make_pipes(int p[4][2], bool with_stdin, brig_error_t *err)
{
    for (int i = 0; i < 4; i++)
        p[i][0] = p[i][1] = -1;
    if (!with_stdin && (p[0][0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        return brig_error_set(err, errno, "exec: /dev/null");
    for (int i = with_stdin ? 0 : 1; i < 3; i++)
        if (pipe2(p[i], O_CLOEXEC) < 0)
            return brig_error_set(err, errno, "exec: pipe");
    return 0;
}

static void close_pipes(int p[4][2])
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            if (p[i][j] >= 0)
                close(p[i][j]);
}

/* The job's command line: exec ROOT ID TIMEOUT_MS CWD USER N ENV... ARGV... */
static int job_argv(const char *id, const struct exec_body *b, struct api_argv *a)
{
    size_t n_env = 0;
    while (b->env && b->env[n_env])
        n_env++;
    int r = api_argv_add(a, "brig-api") | api_argv_add(a, "--job") | api_argv_add(a, "exec")
            | api_argv_add(a, "%s", api_config.root) | api_argv_add(a, "%s", id)
            | api_argv_add(a, "%lld", (long long) b->timeout_ms)
            | api_argv_add(a, "%s", b->cwd ? b->cwd : "")
            | api_argv_add(a, "%s", b->user ? b->user : "") | api_argv_add(a, "%zu", n_env);
    for (size_t i = 0; r == 0 && i < n_env; i++)
        r = api_argv_add(a, "%s", b->env[i]);
    for (size_t i = 0; r == 0 && b->argv[i]; i++)
        r = api_argv_add(a, "%s", b->argv[i]);
    return r;
}

/* Starts the job; *s gets the read ends. Returns the job's first word:
 * started, or the error it failed with. */
static int spawn_worker(const char *id, const struct exec_body *b, int p[4][2],
                        struct exec_stream *s, brig_error_t *err)
{
    struct api_argv a = { 0 };
    if (job_argv(id, b, &a) != 0) {
        api_argv_free(&a);
        return brig_error_set(err, ENOMEM, "exec");
    }
    int stdio[3] = { p[0][0], p[1][1], p[2][1] };
    int r = api_job_spawn(&a, stdio, &s->worker, &s->rep, err);
    api_argv_free(&a);
    if (r < 0)
        return -1;
    /* The process has its ends of the pipes; ours would keep them open. */
    for (int i = 0; i < 3; i++) {
        close(stdio[i]);
        p[i][i == 0 ? 0 : 1] = -1;
    }
    s->out = p[1][0];
    s->err = p[2][0];
    p[1][0] = p[2][0] = -1;
    struct api_exec_report first;
    if (read(s->rep, &first, sizeof first) != (ssize_t) sizeof first)
        return brig_error_set(err, 0, "exec: its job died before the start");
    if (first.kind == 'E')
        return brig_error_kind(err, first.value, "%s", first.msg);
    s->pid = first.value;
    return 0;
}

enum MHD_Result api_exec(struct MHD_Connection *c, struct api_request *r)
{
    struct exec_body b = { 0 };
    brig_error_t err = NULL;
    int p[4][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 } };
    struct exec_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return api_reply_error(c, 500, "out of memory");
    s->out = s->err = s->rep = -1;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_CONNECTION_FD);
    s->client = ci ? ci->connect_fd : -1;
    int rc = parse_body(r, &b, &err);
    if (rc == 0)
        rc = make_pipes(p, b.stdin_text != NULL, &err);
    if (rc == 0 && b.stdin_text) {
        rc = start_feeder(p[0][1], b.stdin_text, &err); /* takes the fd, whatever the outcome */
        p[0][1] = -1;
    }
    if (b.timeout_ms > 0x7fffffff)
        b.timeout_ms = 0x7fffffff;
    if (rc == 0) {
        rc = spawn_worker(r->parts[1], &b, p, s, &err);
        if (rc < 0 && s->worker > 0)
            while (waitpid(s->worker, NULL, 0) < 0 && errno == EINTR)
                ;
    }
    close_pipes(p);
    body_free(&b);
    if (rc < 0) {
        s->worker = 0;
        s->done = true;
        stream_free(s);
        return api_reply_brig_error(c, &err);
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK,
                                                                  stream_read, s, stream_free);
    if (resp == NULL) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
    enum MHD_Result res = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return res;
}
