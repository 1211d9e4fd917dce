#define _GNU_SOURCE
#include "publish.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "events.pb-c.h"
#include "ttrpc.h"
#include "ttrpc.pb-c.h"

#define EVENTS_SERVICE "containerd.services.events.ttrpc.v1.Events"
#define MAX_TRIES 5
#define FORWARD_TIMEOUT_NS 5000000000LL

struct event {
    uint8_t *payload; /* a packed ForwardRequest */
    size_t len;
    int tries;
    struct event *next;
};

struct shim_publisher {
    struct shim_loop *loop;
    char *address, *ns;
    int fd;
    uint32_t stream;
    struct event *head, *tail;
    bool inflight;      /* head has been sent; its answer is awaited */
    bool retry_pending; /* a timer will try again */
    uint8_t *out;
    size_t out_len, out_off;
    uint8_t in[4096];
    size_t in_len;
    uint32_t events; /* what the loop watches fd for */
};

static void kick(struct shim_publisher *p);
static void pub_io(struct shim_loop *loop, int fd, uint32_t events, void *data);

static void disconnect(struct shim_publisher *p)
{
    if (p->fd >= 0) {
        shim_loop_del(p->loop, p->fd);
        close(p->fd);
        p->fd = -1;
    }
    free(p->out);
    p->out = NULL;
    p->out_len = p->out_off = p->in_len = 0;
    p->inflight = false;
}

static void pop(struct shim_publisher *p)
{
    struct event *e = p->head;
    p->head = e->next;
    if (!p->head)
        p->tail = NULL;
    free(e->payload);
    free(e);
}

static void retry_timer(struct shim_loop *loop, void *data)
{
    struct shim_publisher *p = data;
    p->retry_pending = false;
    kick(p);
}

/* The head failed: try again later with a growing delay, or give up on it. */
static void failed(struct shim_publisher *p)
{
    disconnect(p);
    if (!p->head)
        return;
    int tries = ++p->head->tries;
    if (tries >= MAX_TRIES) {
        pop(p);
        kick(p);
        return;
    }
    brig_error_t err = NULL;
    if (shim_loop_after(p->loop, 1000 << (tries - 1), retry_timer, p, &err) < 0) {
        brig_error_release(&err);
        return;
    }
    p->retry_pending = true;
}

static void watch(struct shim_publisher *p, uint32_t events)
{
    if (p->events == events)
        return;
    brig_error_t err = NULL;
    if (shim_loop_mod(p->loop, p->fd, events, &err) < 0)
        brig_error_release(&err);
    p->events = events;
}

static int connect_events(struct shim_publisher *p)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(p->address) >= sizeof(sa.sun_path))
        return -1;
    strcpy(sa.sun_path, p->address);
    cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        return -1;
    brig_error_t err = NULL;
    if (shim_loop_add(p->loop, fd, EPOLLIN, pub_io, p, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    p->events = EPOLLIN;
    p->fd = brig_steal_fd(fd);
    p->stream = 0;
    return 0;
}

static void send_some(struct shim_publisher *p)
{
    while (p->out_off < p->out_len) {
        ssize_t n = send(p->fd, p->out + p->out_off, p->out_len - p->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            failed(p);
            return;
        }
        p->out_off += n;
    }
    watch(p, EPOLLIN | (p->out_off < p->out_len ? EPOLLOUT : 0));
}

/* Sends the head of the queue if nothing is in flight. */
static void kick(struct shim_publisher *p)
{
    if (!p->address || p->inflight || p->retry_pending || !p->head)
        return;
    if (p->fd < 0 && connect_events(p) < 0) {
        failed(p);
        return;
    }
    const char *md[2] = { "containerd-namespace-ttrpc", p->ns };
    p->stream = p->stream ? p->stream + 2 : 1;
    brig_error_t err = NULL;
    if (ttrpc_request_frame(p->stream, EVENTS_SERVICE, "Forward", p->head->payload, p->head->len,
                            FORWARD_TIMEOUT_NS, md, 1, &p->out, &p->out_len, &err)
        < 0) {
        brig_error_release(&err);
        pop(p);
        kick(p);
        return;
    }
    p->out_off = 0;
    p->inflight = true;
    send_some(p);
}

/* One answer has come: the head is done (a refusal by containerd is not
 * retried: sending the same event again would be refused again). */
static void answered(struct shim_publisher *p)
{
    free(p->out);
    p->out = NULL;
    p->out_len = p->out_off = 0;
    p->inflight = false;
    if (p->head)
        pop(p);
    kick(p);
}

static void pub_io(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    struct shim_publisher *p = data;
    if (events & EPOLLOUT)
        send_some(p);
    if (p->fd < 0 || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    ssize_t n = recv(p->fd, p->in + p->in_len, sizeof(p->in) - p->in_len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        if (p->inflight || p->head)
            failed(p);
        else
            disconnect(p);
        return;
    }
    p->in_len += n;
    while (p->in_len >= TTRPC_HEADER_LEN) {
        struct ttrpc_frame f;
        ttrpc_header_get(p->in, &f);
        if (TTRPC_HEADER_LEN + (size_t) f.len > sizeof(p->in)) {
            failed(p);
            return;
        }
        if (p->in_len < TTRPC_HEADER_LEN + f.len)
            return;
        size_t used = TTRPC_HEADER_LEN + f.len;
        bool ours = f.type == TTRPC_RESPONSE && p->inflight && f.stream == p->stream;
        memmove(p->in, p->in + used, p->in_len - used);
        p->in_len -= used;
        if (ours)
            answered(p);
        if (p->fd < 0)
            return;
    }
}

int shim_publisher_new(struct shim_loop *loop, const char *address, const char *ns,
                       struct shim_publisher **out, brig_error_t *err)
{
    struct shim_publisher *p = calloc(1, sizeof(*p));
    if (!p)
        return brig_error_set(err, ENOMEM, "event publisher");
    p->loop = loop;
    p->fd = -1;
    p->ns = strdup(ns);
    p->address = address && *address ? strdup(address) : NULL;
    if (!p->ns || (address && *address && !p->address)) {
        shim_publisher_free(p);
        return brig_error_set(err, ENOMEM, "event publisher");
    }
    *out = p;
    return 0;
}

void shim_publish(struct shim_publisher *p, const char *topic, const char *type_url,
                  const ProtobufCMessage *event)
{
    if (!p->address)
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    Shimpb__Timestamp ts = SHIMPB__TIMESTAMP__INIT;
    ts.seconds = now.tv_sec;
    ts.nanos = now.tv_nsec;
    cleanup_free uint8_t *value = malloc(protobuf_c_message_get_packed_size(event) + 1);
    if (!value)
        return;
    Shimpb__Any any = SHIMPB__ANY__INIT;
    any.type_url = (char *) type_url;
    any.value.data = value;
    any.value.len = protobuf_c_message_pack(event, value);
    Shimpb__Envelope env = SHIMPB__ENVELOPE__INIT;
    env.timestamp = &ts;
    env.namespace_ = p->ns;
    env.topic = (char *) topic;
    env.event = &any;
    Shimpb__ForwardRequest fr = SHIMPB__FORWARD_REQUEST__INIT;
    fr.envelope = &env;
    struct event *e = calloc(1, sizeof(*e));
    if (!e)
        return;
    e->payload = malloc(shimpb__forward_request__get_packed_size(&fr) + 1);
    if (!e->payload) {
        free(e);
        return;
    }
    e->len = shimpb__forward_request__pack(&fr, e->payload);
    if (p->tail)
        p->tail->next = e;
    else
        p->head = e;
    p->tail = e;
    kick(p);
}

void shim_publisher_flush(struct shim_publisher *p, int timeout_ms)
{
    long deadline = ttrpc_clock_ms() + timeout_ms;
    p->retry_pending = false;
    while (p->head && p->address) {
        long left = deadline - ttrpc_clock_ms();
        if (left <= 0)
            break;
        kick(p);
        if (p->fd < 0)
            break;
        struct pollfd pf = { .fd = p->fd,
                             .events = POLLIN | (p->out_off < p->out_len ? POLLOUT : 0) };
        if (poll(&pf, 1, (int) left) <= 0)
            break;
        uint32_t ev = (pf.revents & POLLIN ? EPOLLIN : 0) | (pf.revents & POLLOUT ? EPOLLOUT : 0)
                      | (pf.revents & POLLHUP ? EPOLLHUP : 0)
                      | (pf.revents & POLLERR ? EPOLLERR : 0);
        pub_io(p->loop, p->fd, ev, p);
    }
}

void shim_publisher_free(struct shim_publisher *p)
{
    if (!p)
        return;
    disconnect(p);
    while (p->head)
        pop(p);
    free(p->address);
    free(p->ns);
    free(p);
}
