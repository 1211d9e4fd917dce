/* One connection from a sandbox: its request head read and judged, the
 * destination resolved on the host's side and checked, a connection made
 * from the host's network namespace, then bytes relayed both ways until
 * both ends are done. A refusal is an HTTP answer with a one-line reason,
 * and nothing of the request reaches anyone. Every connection ends in one
 * log line. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress.h"

#define CONNECT_ATTEMPT_S 3

static const char *status_text(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 429:
        return "Too Many Requests";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 502:
        return "Bad Gateway";
    case 504:
        return "Gateway Timeout";
    default:
        return "Internal Server Error";
    }
}

/* A refusal, written at once (the socket's buffer takes a line), then the
 * connection closed and logged. */
static void refuse(struct proxy *p, struct conn *c, int status, const char *reason)
{
    char msg[512];
    int body = (int) strlen(reason) + 7;
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                     "Connection: close\r\n\r\nbrig: %s\n",
                     status, status_text(status), body, reason);
    if (n > 0 && write(c->cfd, msg, (size_t) n) < 0) {
        /* the sandbox's end is gone: nothing to tell it */
    }
    char verdict[16];
    snprintf(verdict, sizeof verdict, "%s-%d", status == 403 ? "denied" : "error", status);
    egress_conn_close(p, c, verdict, reason);
}

static void watch(struct proxy *p, int fd, struct ep *tag, unsigned events, bool add)
{
    struct epoll_event ev = { .events = events, .data.ptr = tag };
    epoll_ctl(p->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}

time_t egress_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec;
}

static double ms_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double) (now.tv_sec - t->tv_sec) * 1e3 + (double) (now.tv_nsec - t->tv_nsec) / 1e6;
}

void egress_conn_close(struct proxy *p, struct conn *c, const char *verdict, const char *reason)
{
    if (c->dead)
        return;
    egress_log(p, "sandbox=%s host=%s port=%d verdict=%s up=%llu down=%llu ms=%.0f%s%s%s",
               c->sb ? c->sb->id : "?", c->req.host[0] ? c->req.host : "-", c->req.port, verdict,
               c->bytes_up, c->bytes_down, ms_since(&c->started), reason ? " reason=\"" : "",
               reason ? reason : "", reason ? "\"" : "");
    egress_resolve_cancel(c);
    if (c->ai)
        freeaddrinfo(c->ai);
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    c->cfd = c->ufd = -1;
    if (c->sb)
        c->sb->n_conns--;
    if (c->prev)
        c->prev->next = c->next;
    else
        p->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->dead = true;
    c->next = p->dead_conns;
    p->dead_conns = c;
}

void egress_reap(struct proxy *p)
{
    for (struct conn *c = p->dead_conns, *next; c; c = next) {
        next = c->next;
        free(c->up.data);
        free(c->down.data);
        brig_egress_request_clear(&c->req);
        free(c);
    }
    p->dead_conns = NULL;
    for (struct sandbox *sb = p->dead_sandboxes, *next; sb; sb = next) {
        next = sb->next;
        free(sb);
    }
    p->dead_sandboxes = NULL;
}

void egress_accept(struct proxy *p, struct sandbox *sb)
{
    for (;;) {
        int fd = accept4(sb->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && p->reserve_fd >= 0) {
            /* Out of fds: the waiting connection is taken with the fd kept
             * for this and closed at once (refused, not left to make the
             * listener ready again and again). */
            close(p->reserve_fd);
            fd = accept4(sb->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                close(fd);
            p->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            egress_log(p, "sandbox=%s verdict=error-fds reason=\"out of file descriptors\"",
                       sb->id);
            continue;
        }
        if (fd < 0)
            return;
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->cfd = fd;
        c->ufd = -1;
        c->sb = sb;
        sb->n_conns++;
        c->ctag = (struct ep){ EP_CLIENT, c };
        c->utag = (struct ep){ EP_UPSTREAM, c };
        clock_gettime(CLOCK_MONOTONIC, &c->started);
        c->last = egress_now();
        c->next = p->conns;
        if (p->conns)
            p->conns->prev = c;
        p->conns = c;
        /* One sandbox can't take the proxy from the others. */
        if (sb->n_conns > p->conf.max_connections) {
            refuse(p, c, 429, "too many connections from this sandbox");
            continue;
        }
        watch(p, fd, &c->ctag, EPOLLIN, true);
    }
}

/* ---- connecting ---- */

static void start_relay(struct proxy *p, struct conn *c);

/* The next address of the lookup's that this rule lets us reach. */
static void connect_next(struct proxy *p, struct conn *c)
{
    for (; c->next_ai; c->next_ai = c->next_ai->ai_next) {
        struct addrinfo *a = c->next_ai;
        if (!c->private_ok && !brig_egress_addr_public(a->ai_addr, p->local, p->n_local))
            continue;
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
            close(fd);
            continue;
        }
        c->ufd = fd;
        c->next_ai = a->ai_next;
        c->st = C_CONNECT;
        c->attempt = egress_now();
        watch(p, fd, &c->utag, EPOLLOUT, true);
        return;
    }
    refuse(p, c, 502, "could not connect to any of its addresses");
}

void egress_conn_resolved(struct proxy *p, struct conn *c, int rc, struct addrinfo *ai)
{
    if (c->dead) {
        if (ai)
            freeaddrinfo(ai);
        return;
    }
    if (rc != 0) {
        refuse(p, c, 502, "the name does not resolve");
        return;
    }
    c->ai = c->next_ai = ai;
    bool any = false;
    for (struct addrinfo *a = ai; a && !any; a = a->ai_next)
        any = c->private_ok || brig_egress_addr_public(a->ai_addr, p->local, p->n_local);
    if (!any) {
        refuse(p, c, 403, "the name resolves to a non-public address");
        return;
    }
    connect_next(p, c);
}

static void connected(struct proxy *p, struct conn *c)
{
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
        close(c->ufd);
        c->ufd = -1;
        connect_next(p, c);
        return;
    }
    int one = 1;
    setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    start_relay(p, c);
}

/* The head is complete: judged, then resolved (or, for an allowed IP
 * literal, connected at once). */
static void judge(struct proxy *p, struct conn *c)
{
    struct brig_egress_request *r = &c->req;
    bool is_connect = r->kind == BRIG_EGRESS_CONNECT;
    const struct brig_egress_rule *rule = brig_egress_match(&p->conf, r->host, r->port, is_connect);
    if (rule == NULL) {
        refuse(p, c, 403, "host or port not on the allow-list");
        return;
    }
    c->private_ok = rule->private_ok;
    if (r->literal && !rule->private_ok) {
        refuse(p, c, 403, "an IP address must be listed with allow-private");
        return;
    }
    c->st = C_RESOLVE;
    epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    if (egress_resolve(c, r->host, r->port) < 0)
        refuse(p, c, 500, "out of memory");
}

static void read_head(struct proxy *p, struct conn *c)
{
    for (;;) {
        if (c->head_len == sizeof c->head) {
            refuse(p, c, 431, "request head too large");
            return;
        }
        ssize_t n = read(c->cfd, c->head + c->head_len, sizeof c->head - c->head_len);
        if (n == 0) {
            egress_conn_close(p, c, "closed", "the sandbox closed before a request");
            return;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                egress_conn_close(p, c, "error", strerror(errno));
            return;
        }
        c->head_len += (size_t) n;
        int status = 0;
        const char *reason = NULL;
        int r = brig_egress_request_parse(c->head, c->head_len, &c->req, &status, &reason);
        if (r < 0) {
            refuse(p, c, status, reason);
            return;
        }
        if (r > 0) {
            judge(p, c);
            return;
        }
    }
}

/* ---- relaying ---- */

static void queue(struct buf *b, const char *data, size_t len)
{
    memcpy(b->data + b->off + b->len, data, len);
    b->len += len;
}

static void start_relay(struct proxy *p, struct conn *c)
{
    c->up.data = malloc(EGRESS_BUF);
    c->down.data = malloc(EGRESS_BUF);
    if (c->up.data == NULL || c->down.data == NULL) {
        refuse(p, c, 500, "out of memory");
        return;
    }
    const struct brig_egress_request *r = &c->req;
    static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (r->kind == BRIG_EGRESS_CONNECT)
        queue(&c->down, established, sizeof established - 1);
    else if (r->origin_len <= EGRESS_BUF)
        queue(&c->up, r->origin, r->origin_len);
    /* What the sandbox sent after a CONNECT's head (a TLS hello) follows;
     * after a plain request, nothing does. */
    size_t extra = c->head_len - r->head_len;
    c->one_request = r->kind == BRIG_EGRESS_HTTP;
    if (!c->one_request)
        queue(&c->up, c->head + r->head_len, extra);
    c->st = C_RELAY;
    watch(p, c->cfd, &c->ctag, 0, true);
    egress_conn_event(p, c, true, 0);
}

/* Moves what can move from `from` through b to `to` (from < 0: only
 * what b holds); *moved grows by the bytes read or written. False on an
 * error. */
static bool pump(int from, struct buf *b, int to, bool *from_eof, unsigned long long *count,
                 bool *moved)
{
    for (;;) {
        if (b->len) {
            ssize_t w = write(to, b->data + b->off, b->len);
            if (w < 0)
                return errno == EAGAIN || errno == EINTR;
            *moved = *moved || w > 0;
            b->off += (size_t) w;
            b->len -= (size_t) w;
            *count += (unsigned long long) w;
            if (b->len)
                return true;
        }
        b->off = 0;
        if (*from_eof || from < 0)
            return true;
        ssize_t r = read(from, b->data, EGRESS_BUF);
        if (r == 0)
            *from_eof = true;
        if (r <= 0)
            return r == 0 || errno == EAGAIN || errno == EINTR;
        *moved = true;
        b->len = (size_t) r;
    }
}

/* One end's place in the loop. An end that hung up can't be written to
 * any more, and reports its hang-up at every wait: it is watched only
 * while there is something to read from it and room for it, and parked
 * (out of the loop) otherwise. */
static void place(struct proxy *p, int fd, struct ep *tag, bool hup, bool *parked, bool want_in,
                  bool want_out)
{
    if (!hup) {
        watch(p, fd, tag, (want_in ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0), false);
    } else if (!want_in) {
        if (!*parked)
            epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
        *parked = true;
    } else {
        watch(p, fd, tag, EPOLLIN, *parked);
        *parked = false;
    }
}

static void relay(struct proxy *p, struct conn *c, bool client_side, unsigned events)
{
    if (events & EPOLLERR) {
        egress_conn_close(p, c, "allowed",
                          client_side ? "the sandbox's end failed"
                                      : "the destination's end failed");
        return;
    }
    if (events & EPOLLHUP) {
        /* Nothing more can be written to that end. */
        if (client_side)
            c->c_hup = true, c->down.len = 0;
        else
            c->u_hup = true, c->up.len = 0;
    }
    bool moved = false;
    /* Plain HTTP: the one request went with the head; nothing more is
     * read from the sandbox (its end counts as done, the origin's is not
     * shut). */
    int up_from = c->one_request ? -1 : c->cfd;
    /* An end that hung up gets nothing more: its direction is skipped. */
    bool up_ok = c->u_hup || pump(up_from, &c->up, c->ufd, &c->c_eof, &c->bytes_up, &moved);
    bool down_ok = c->c_hup || pump(c->ufd, &c->down, c->cfd, &c->u_eof, &c->bytes_down, &moved);
    if (!up_ok || !down_ok) {
        egress_conn_close(p, c, "allowed", strerror(errno));
        return;
    }
    if (moved)
        c->last = egress_now();
    bool up_done = (c->c_eof || c->one_request) && c->up.len == 0;
    bool down_done = c->u_eof && c->down.len == 0;
    /* A side that is done writing is told so once its data is through. */
    if (c->c_eof && !c->one_request && c->up.len == 0 && !c->u_hup && !c->u_shut) {
        shutdown(c->ufd, SHUT_WR);
        c->u_shut = true;
    }
    if (down_done && !c->c_hup && !c->c_shut) {
        shutdown(c->cfd, SHUT_WR);
        c->c_shut = true;
    }
    /* Done: both ways through; or the sandbox's end gone once what it
     * sent is through; or the destination's gone once what it sent is. */
    if ((up_done && down_done) || (c->c_hup && (c->u_hup || up_done))
        || (c->u_hup && (c->c_hup || down_done))) {
        egress_conn_close(p, c, "allowed", NULL);
        return;
    }
    place(p, c->cfd, &c->ctag, c->c_hup, &c->c_parked,
          !c->c_eof && !c->one_request && c->up.len == 0, c->down.len > 0);
    place(p, c->ufd, &c->utag, c->u_hup, &c->u_parked, !c->u_eof && c->down.len == 0,
          c->up.len > 0);
}

void egress_conn_event(struct proxy *p, struct conn *c, bool client_side, unsigned events)
{
    if (c->dead)
        return;
    if (c->st == C_HEAD) {
        if (events & EPOLLERR)
            egress_conn_close(p, c, "closed", "the sandbox's end failed");
        else
            read_head(p, c);
        return;
    }
    if (c->st == C_CONNECT) {
        if (!client_side && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            connected(p, c);
        return;
    }
    if (c->st == C_RELAY)
        relay(p, c, client_side, events);
}

/* Once a second: connections idle past the limit, and lookups or connects
 * that take too long, end. */
void egress_conns_tick(struct proxy *p, time_t now)
{
    for (struct conn *c = p->conns, *next; c; c = next) {
        next = c->next;
        time_t age = now - c->last;
        if (c->st == C_RELAY && age > p->conf.idle_timeout)
            egress_conn_close(p, c, "allowed", "idle timeout");
        else if (c->st == C_HEAD && age > p->conf.connect_timeout)
            egress_conn_close(p, c, "closed", "no request in time");
        else if ((c->st == C_RESOLVE || c->st == C_CONNECT) && age > p->conf.connect_timeout)
            refuse(p, c, 504, "resolving or connecting took too long");
        else if (c->st == C_CONNECT && c->next_ai && now - c->attempt >= CONNECT_ATTEMPT_S) {
            /* An address that drops what we send (a broken IPv6 route)
             * gets a few seconds; then the next one. */
            epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
            close(c->ufd);
            c->ufd = -1;
            connect_next(p, c);
        }
    }
}
