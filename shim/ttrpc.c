#define _GNU_SOURCE
#include "ttrpc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "ttrpc.pb-c.h"

struct ttrpc_service {
    char *name;
    const struct ttrpc_method *methods;
    size_t n;
    void *data;
};

struct ttrpc_conn {
    struct ttrpc_server *srv;
    int fd;
    uint8_t *rbuf;
    size_t rlen, rcap;
    uint8_t *wbuf;
    size_t wlen, wcap;
    /* Left of a frame too large to hold: its bytes are skipped. */
    size_t discard;
    uint32_t last_stream;
    bool want_out;
    /* Set while a callback of this connection runs: a failure inside it
     * only marks the connection dead, and the callback frees it. */
    int busy;
    bool dead;
    struct ttrpc_call *calls; /* open calls, detached when the conn goes */
    struct ttrpc_conn *next;
};

struct ttrpc_call {
    struct ttrpc_conn *conn; /* NULL once the client has gone */
    uint32_t stream;
    char *method;
    struct ttrpc_call *prev, *next;
};

struct ttrpc_server {
    struct shim_loop *loop;
    int listen_fd;
    struct ttrpc_service *services;
    size_t n_services;
    struct ttrpc_conn *conns;
};

void ttrpc_header_put(uint8_t out[TTRPC_HEADER_LEN], const struct ttrpc_frame *f)
{
    out[0] = f->len >> 24;
    out[1] = f->len >> 16;
    out[2] = f->len >> 8;
    out[3] = f->len;
    out[4] = f->stream >> 24;
    out[5] = f->stream >> 16;
    out[6] = f->stream >> 8;
    out[7] = f->stream;
    out[8] = f->type;
    out[9] = f->flags;
}

void ttrpc_header_get(const uint8_t in[TTRPC_HEADER_LEN], struct ttrpc_frame *f)
{
    f->len = (uint32_t) in[0] << 24 | (uint32_t) in[1] << 16 | (uint32_t) in[2] << 8 | in[3];
    f->stream = (uint32_t) in[4] << 24 | (uint32_t) in[5] << 16 | (uint32_t) in[6] << 8 | in[7];
    f->type = in[8];
    f->flags = in[9];
}

/* Packs msg (NULL: nothing) into a malloc'd buffer; *len may be 0. */
static int pack_message(const ProtobufCMessage *msg, uint8_t **out, size_t *len, brig_error_t *err)
{
    size_t n = msg ? protobuf_c_message_get_packed_size(msg) : 0;
    *out = malloc(n ? n : 1);
    if (!*out)
        return brig_error_set(err, ENOMEM, "encode message");
    *len = n ? protobuf_c_message_pack(msg, *out) : 0;
    return 0;
}

/* Header + packed msg as one malloc'd frame. */
static int frame_of(uint32_t stream, uint8_t type, const ProtobufCMessage *msg, uint8_t **out,
                    size_t *len, brig_error_t *err)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (n > TTRPC_MAX_DATA)
        return brig_error_set(err, EMSGSIZE, "ttrpc frame of %zu bytes", n);
    uint8_t *buf = malloc(TTRPC_HEADER_LEN + n);
    if (!buf)
        return brig_error_set(err, ENOMEM, "ttrpc frame");
    struct ttrpc_frame f = { .len = n, .stream = stream, .type = type, .flags = 0 };
    ttrpc_header_put(buf, &f);
    protobuf_c_message_pack(msg, buf + TTRPC_HEADER_LEN);
    *out = buf;
    *len = TTRPC_HEADER_LEN + n;
    return 0;
}

int ttrpc_request_frame(uint32_t stream, const char *service, const char *method,
                        const uint8_t *payload, size_t plen, int64_t timeout_ns,
                        const char *const *md, size_t n_md, uint8_t **out, size_t *len,
                        brig_error_t *err)
{
    Shimpb__KeyValue kv[8];
    Shimpb__KeyValue *kvp[8];
    if (n_md > 8)
        return brig_error_set(err, E2BIG, "ttrpc: %zu metadata pairs", n_md);
    for (size_t i = 0; i < n_md; i++) {
        shimpb__key_value__init(&kv[i]);
        kv[i].key = (char *) md[2 * i];
        kv[i].value = (char *) md[2 * i + 1];
        kvp[i] = &kv[i];
    }
    Shimpb__Request req = SHIMPB__REQUEST__INIT;
    req.service = (char *) service;
    req.method = (char *) method;
    req.payload.data = (uint8_t *) payload;
    req.payload.len = plen;
    req.timeout_nano = timeout_ns;
    req.n_metadata = n_md;
    req.metadata = kvp;
    return frame_of(stream, TTRPC_REQUEST, &req.base, out, len, err);
}

/* ---- connections ---- */

static void conn_io(struct shim_loop *loop, int fd, uint32_t events, void *data);

static void conn_free(struct ttrpc_conn *c)
{
    struct ttrpc_server *s = c->srv;
    for (struct ttrpc_conn **p = &s->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    for (struct ttrpc_call *call = c->calls; call; call = call->next)
        call->conn = NULL;
    shim_loop_del(s->loop, c->fd);
    close(c->fd);
    free(c->rbuf);
    free(c->wbuf);
    free(c);
}

/* Drops the connection now, or when its callback returns. */
static void conn_close(struct ttrpc_conn *c)
{
    if (c->busy)
        c->dead = true;
    else
        conn_free(c);
}

static void conn_want_out(struct ttrpc_conn *c, bool on)
{
    if (c->want_out == on)
        return;
    brig_error_t err = NULL;
    if (shim_loop_mod(c->srv->loop, c->fd, EPOLLIN | (on ? EPOLLOUT : 0), &err) < 0) {
        brig_error_release(&err);
        conn_close(c);
        return;
    }
    c->want_out = on;
}

/* Writes what the socket takes now; the rest waits for EPOLLOUT. */
static void conn_write(struct ttrpc_conn *c)
{
    size_t off = 0;
    while (off < c->wlen) {
        ssize_t n = send(c->fd, c->wbuf + off, c->wlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            c->wlen = 0;
            conn_close(c);
            return;
        }
        off += n;
    }
    memmove(c->wbuf, c->wbuf + off, c->wlen - off);
    c->wlen -= off;
    conn_want_out(c, c->wlen > 0);
}

/* Queues a whole frame, so frames of different streams never interleave. */
static void conn_send(struct ttrpc_conn *c, const uint8_t *frame, size_t len)
{
    if (c->dead)
        return;
    if (c->wlen + len > c->wcap) {
        size_t cap = c->wcap ? c->wcap : 4096;
        while (cap < c->wlen + len)
            cap *= 2;
        uint8_t *nb = realloc(c->wbuf, cap);
        if (!nb) {
            conn_close(c);
            return;
        }
        c->wbuf = nb;
        c->wcap = cap;
    }
    memcpy(c->wbuf + c->wlen, frame, len);
    c->wlen += len;
    conn_write(c);
}

static void send_response(struct ttrpc_conn *c, uint32_t stream, const Shimpb__Response *resp)
{
    brig_error_t err = NULL;
    cleanup_free uint8_t *frame = NULL;
    size_t len;
    if (frame_of(stream, TTRPC_RESPONSE, &resp->base, &frame, &len, &err) < 0) {
        /* Too large or no memory: the caller still gets an answer. */
        Shimpb__RpcStatus st = SHIMPB__RPC_STATUS__INIT;
        st.code = TTRPC_RESOURCE_EXHAUSTED;
        st.message = err->msg;
        Shimpb__Response small = SHIMPB__RESPONSE__INIT;
        small.status = &st;
        int r = frame_of(stream, TTRPC_RESPONSE, &small.base, &frame, &len, NULL);
        brig_error_release(&err);
        if (r < 0)
            return;
    }
    conn_send(c, frame, len);
}

static void send_status(struct ttrpc_conn *c, uint32_t stream, int code, const char *msg)
{
    Shimpb__RpcStatus st = SHIMPB__RPC_STATUS__INIT;
    st.code = code;
    st.message = (char *) msg;
    Shimpb__Response resp = SHIMPB__RESPONSE__INIT;
    resp.status = &st;
    send_response(c, stream, &resp);
}

static const struct ttrpc_method *find_method(struct ttrpc_server *s, const char *service,
                                              const char *method, void **data, bool *known)
{
    *known = false;
    for (size_t i = 0; i < s->n_services; i++) {
        if (strcmp(s->services[i].name, service) != 0)
            continue;
        *known = true;
        *data = s->services[i].data;
        for (size_t j = 0; j < s->services[i].n; j++)
            if (strcmp(s->services[i].methods[j].name, method) == 0)
                return &s->services[i].methods[j];
    }
    return NULL;
}

static void handle_request(struct ttrpc_conn *c, const struct ttrpc_frame *f, const uint8_t *data)
{
    char msg[256];
    if (f->stream % 2 == 0 || f->stream <= c->last_stream) {
        snprintf(msg, sizeof(msg), "ttrpc: invalid stream id %u", f->stream);
        send_status(c, f->stream, TTRPC_INVALID_ARGUMENT, msg);
        return;
    }
    c->last_stream = f->stream;
    Shimpb__Request *req = shimpb__request__unpack(NULL, f->len, data);
    if (!req) {
        send_status(c, f->stream, TTRPC_INVALID_ARGUMENT, "ttrpc: malformed request");
        return;
    }
    void *hdata = NULL;
    bool known;
    const struct ttrpc_method *m = find_method(c->srv, req->service, req->method, &hdata, &known);
    if (!m) {
        snprintf(msg, sizeof(msg), known ? "method %s" : "service %s",
                 known ? req->method : req->service);
        send_status(c, f->stream, TTRPC_UNIMPLEMENTED, msg);
        shimpb__request__free_unpacked(req, NULL);
        return;
    }
    struct ttrpc_call *call = calloc(1, sizeof(*call));
    if (call)
        call->method = strdup(req->method);
    if (!call || !call->method) {
        free(call);
        send_status(c, f->stream, TTRPC_RESOURCE_EXHAUSTED, "ttrpc: out of memory");
        shimpb__request__free_unpacked(req, NULL);
        return;
    }
    call->conn = c;
    call->stream = f->stream;
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    m->fn(call, req->payload.data, req->payload.len, hdata);
    shimpb__request__free_unpacked(req, NULL);
}

/* Handles every whole frame in the read buffer. */
static void conn_frames(struct ttrpc_conn *c)
{
    size_t off = 0;
    while (!c->dead) {
        if (c->discard) {
            size_t n = c->rlen - off < c->discard ? c->rlen - off : c->discard;
            off += n;
            c->discard -= n;
            if (c->discard)
                break;
            continue;
        }
        if (c->rlen - off < TTRPC_HEADER_LEN)
            break;
        struct ttrpc_frame f;
        ttrpc_header_get(c->rbuf + off, &f);
        if (f.len > TTRPC_MAX_DATA) {
            off += TTRPC_HEADER_LEN;
            c->discard = f.len;
            if (f.type == TTRPC_REQUEST)
                send_status(c, f.stream, TTRPC_RESOURCE_EXHAUSTED,
                            "ttrpc: message larger than 4 MiB");
            continue;
        }
        if (c->rlen - off < TTRPC_HEADER_LEN + f.len)
            break;
        if (f.type == TTRPC_REQUEST)
            handle_request(c, &f, c->rbuf + off + TTRPC_HEADER_LEN);
        /* Data frames have no place in the unary task API; responses are
         * not for a server. Both are skipped. */
        off += TTRPC_HEADER_LEN + f.len;
    }
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
}

static bool conn_read(struct ttrpc_conn *c)
{
    for (;;) {
        if (c->rcap - c->rlen < 16384) {
            size_t cap = c->rcap ? c->rcap * 2 : 65536;
            if (cap > TTRPC_MAX_DATA + 2 * TTRPC_HEADER_LEN + 65536)
                cap = TTRPC_MAX_DATA + 2 * TTRPC_HEADER_LEN + 65536;
            if (cap > c->rcap) {
                uint8_t *nb = realloc(c->rbuf, cap);
                if (!nb)
                    return false;
                c->rbuf = nb;
                c->rcap = cap;
            }
        }
        ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        c->rlen += n;
        conn_frames(c);
        if (c->dead)
            return false;
        /* A buffer full of one partial frame bigger than the limit can't
         * happen (those are discarded), so a full buffer always shrinks. */
    }
}

static void conn_io(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    struct ttrpc_conn *c = data;
    c->busy++;
    bool ok = true;
    if (events & EPOLLOUT)
        conn_write(c);
    if (!c->dead && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        ok = conn_read(c);
    c->busy--;
    if (!ok || c->dead)
        conn_free(c);
}

static void server_accept(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    struct ttrpc_server *s = data;
    for (;;) {
        cleanup_close int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
            return;
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != geteuid()
            || cred.gid != getegid())
            continue;
        struct ttrpc_conn *c = calloc(1, sizeof(*c));
        if (!c)
            continue;
        c->srv = s;
        c->fd = cfd;
        brig_error_t err = NULL;
        if (shim_loop_add(s->loop, cfd, EPOLLIN, conn_io, c, &err) < 0) {
            brig_error_release(&err);
            free(c);
            continue;
        }
        c->fd = brig_steal_fd(cfd);
        c->next = s->conns;
        s->conns = c;
    }
}

int ttrpc_server_new(struct shim_loop *loop, struct ttrpc_server **out, brig_error_t *err)
{
    struct ttrpc_server *s = calloc(1, sizeof(*s));
    if (!s)
        return brig_error_set(err, ENOMEM, "ttrpc server");
    s->loop = loop;
    s->listen_fd = -1;
    *out = s;
    return 0;
}

int ttrpc_server_listen(struct ttrpc_server *s, int fd, brig_error_t *err)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return brig_error_set(err, errno, "ttrpc socket fd %d", fd);
    if (shim_loop_add(s->loop, fd, EPOLLIN, server_accept, s, err) < 0)
        return -1;
    s->listen_fd = fd;
    return 0;
}

int ttrpc_server_register(struct ttrpc_server *s, const char *service,
                          const struct ttrpc_method *methods, size_t n, void *data,
                          brig_error_t *err)
{
    struct ttrpc_service *sv = realloc(s->services, (s->n_services + 1) * sizeof(*sv));
    if (!sv)
        return brig_error_set(err, ENOMEM, "register %s", service);
    s->services = sv;
    sv = &s->services[s->n_services];
    sv->name = strdup(service);
    if (!sv->name)
        return brig_error_set(err, ENOMEM, "register %s", service);
    sv->methods = methods;
    sv->n = n;
    sv->data = data;
    s->n_services++;
    return 0;
}

long ttrpc_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ttrpc_server_flush(struct ttrpc_server *s, int timeout_ms)
{
    long deadline = ttrpc_clock_ms() + timeout_ms;
    for (struct ttrpc_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        c->busy++;
        while (c->wlen > 0 && !c->dead) {
            long left = deadline - ttrpc_clock_ms();
            struct pollfd p = { .fd = c->fd, .events = POLLOUT };
            if (left <= 0 || poll(&p, 1, (int) left) <= 0)
                break;
            size_t before = c->wlen;
            conn_write(c);
            if (c->wlen == before)
                break;
        }
        if (--c->busy == 0 && c->dead)
            conn_free(c);
    }
}

void ttrpc_server_free(struct ttrpc_server *s)
{
    if (!s)
        return;
    while (s->conns)
        conn_free(s->conns);
    if (s->listen_fd >= 0) {
        shim_loop_del(s->loop, s->listen_fd);
        close(s->listen_fd);
    }
    for (size_t i = 0; i < s->n_services; i++)
        free(s->services[i].name);
    free(s->services);
    free(s);
}

/* ---- answers ---- */

static void call_finish(struct ttrpc_call *call)
{
    if (call->conn) {
        if (call->prev)
            call->prev->next = call->next;
        else
            call->conn->calls = call->next;
        if (call->next)
            call->next->prev = call->prev;
    }
    free(call->method);
    free(call);
}

void ttrpc_reply(struct ttrpc_call *call, const ProtobufCMessage *msg)
{
    if (call->conn) {
        cleanup_free uint8_t *payload = NULL;
        size_t len;
        brig_error_t err = NULL;
        if (pack_message(msg, &payload, &len, &err) < 0) {
            send_status(call->conn, call->stream, TTRPC_RESOURCE_EXHAUSTED, err->msg);
            brig_error_release(&err);
        } else {
            Shimpb__Response resp = SHIMPB__RESPONSE__INIT;
            resp.payload.data = payload;
            resp.payload.len = len;
            send_response(call->conn, call->stream, &resp);
        }
    }
    call_finish(call);
}

void ttrpc_reply_error(struct ttrpc_call *call, int code, const char *fmt, ...)
{
    if (call->conn) {
        char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
            msg = NULL;
        va_end(ap);
        send_status(call->conn, call->stream, code, msg ? msg : "error");
        free(msg);
    }
    call_finish(call);
}

const char *ttrpc_call_method(const struct ttrpc_call *call)
{
    return call->method;
}
