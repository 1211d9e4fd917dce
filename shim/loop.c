#define _GNU_SOURCE
/* The epoll loop. Registrations live in an array indexed by fd; each carries
 * a generation number that also rides in the epoll event, so an event
 * still queued for an fd that a callback removed (or removed and re-added)
 * in the same batch is recognised as stale and dropped. */
#include "loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

struct watch {
    shim_loop_cb cb;
    void *data;
    uint32_t gen;
    bool used;
};

struct pending {
    struct pending *next;
    shim_loop_fn fn;
    void *data;
    int64_t due_ms; /* 0: run on the next turn */
};

struct shim_loop {
    int epfd;
    bool stop;
    uint32_t next_gen;
    struct watch *w;
    size_t n_w;
    struct pending *deferred, *timers;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int shim_loop_new(struct shim_loop **out, brig_error_t *err)
{
    struct shim_loop *l = calloc(1, sizeof *l);
    if (l == NULL)
        return brig_error_set(err, ENOMEM, "event loop");
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        int saved = errno;
        free(l);
        return brig_error_set(err, saved, "epoll_create1");
    }
    *out = l;
    return 0;
}

static int grow(struct shim_loop *l, int fd, brig_error_t *err)
{
    if ((size_t) fd < l->n_w)
        return 0;
    size_t n = l->n_w ? l->n_w : 16;
    while (n <= (size_t) fd)
        n *= 2;
    struct watch *w = realloc(l->w, n * sizeof *w);
    if (w == NULL)
        return brig_error_set(err, ENOMEM, "event loop");
    memset(w + l->n_w, 0, (n - l->n_w) * sizeof *w);
    l->w = w;
    l->n_w = n;
    return 0;
}

int shim_loop_add(struct shim_loop *l, int fd, uint32_t events, shim_loop_cb cb, void *data,
                  brig_error_t *err)
{
    if (fd < 0)
        return brig_error_set(err, EBADF, "watch fd %d", fd);
    if (grow(l, fd, err) < 0)
        return -1;
    if (l->w[fd].used)
        return brig_error_set(err, EEXIST, "watch fd %d", fd);
    uint32_t gen = ++l->next_gen;
    struct epoll_event ev = { .events = events,
                              .data.u64 = ((uint64_t) gen << 32) | (uint32_t) fd };
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return brig_error_set(err, errno, "watch fd %d", fd);
    l->w[fd] = (struct watch){ cb, data, gen, true };
    return 0;
}

int shim_loop_mod(struct shim_loop *l, int fd, uint32_t events, brig_error_t *err)
{
    if (fd < 0 || (size_t) fd >= l->n_w || !l->w[fd].used)
        return brig_error_set(err, ENOENT, "fd %d is not watched", fd);
    struct epoll_event ev = { .events = events,
                              .data.u64 = ((uint64_t) l->w[fd].gen << 32) | (uint32_t) fd };
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        return brig_error_set(err, errno, "watch fd %d", fd);
    return 0;
}

void shim_loop_del(struct shim_loop *l, int fd)
{
    if (fd < 0 || (size_t) fd >= l->n_w || !l->w[fd].used)
        return;
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
    l->w[fd].used = false;
}

static int queue(struct pending **head, shim_loop_fn fn, void *data, int64_t due, brig_error_t *err)
{
    struct pending *p = malloc(sizeof *p);
    if (p == NULL)
        return brig_error_set(err, ENOMEM, "event loop");
    *p = (struct pending){ NULL, fn, data, due };
    /* Appended, so deferred functions run in the order they were queued. */
    while (*head)
        head = &(*head)->next;
    *head = p;
    return 0;
}

int shim_loop_defer(struct shim_loop *l, shim_loop_fn fn, void *data, brig_error_t *err)
{
    return queue(&l->deferred, fn, data, 0, err);
}

int shim_loop_after(struct shim_loop *l, int ms, shim_loop_fn fn, void *data, brig_error_t *err)
{
    return queue(&l->timers, fn, data, now_ms() + (ms > 0 ? ms : 0), err);
}

static int next_timeout(const struct shim_loop *l)
{
    if (l->deferred)
        return 0;
    if (l->timers == NULL)
        return -1;
    int64_t first = INT64_MAX;
    for (const struct pending *p = l->timers; p; p = p->next)
        if (p->due_ms < first)
            first = p->due_ms;
    int64_t left = first - now_ms();
    return left <= 0 ? 0 : left > 60000 ? 60000 : (int) left;
}

static void run_pending(struct shim_loop *l)
{
    /* Only what was queued before this turn: a function that defers again
     * runs on the next turn, after fds had their chance. */
    struct pending *batch = l->deferred;
    l->deferred = NULL;
    while (batch && !l->stop) {
        struct pending *p = batch;
        batch = p->next;
        p->fn(l, p->data);
        free(p);
    }
    while (batch) { /* stopped half-way: keep the rest for a later run */
        struct pending *p = batch;
        batch = p->next;
        p->next = NULL;
        struct pending **tail = &l->deferred;
        while (*tail)
            tail = &(*tail)->next;
        *tail = p;
    }
    int64_t now = now_ms();
    for (struct pending **pp = &l->timers; *pp && !l->stop;) {
        struct pending *p = *pp;
        if (p->due_ms > now) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        p->fn(l, p->data);
        free(p);
        pp = &l->timers; /* the callback may have changed the list */
    }
}

int shim_loop_run(struct shim_loop *l, brig_error_t *err)
{
    l->stop = false;
    struct epoll_event ev[32];
    while (!l->stop) {
        run_pending(l);
        if (l->stop)
            break;
        int n = epoll_wait(l->epfd, ev, 32, next_timeout(l));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return brig_error_set(err, errno, "epoll_wait");
        }
        for (int i = 0; i < n && !l->stop; i++) {
            int fd = (int) (uint32_t) ev[i].data.u64;
            uint32_t gen = (uint32_t) (ev[i].data.u64 >> 32);
            if ((size_t) fd >= l->n_w || !l->w[fd].used || l->w[fd].gen != gen)
                continue;
            struct watch w = l->w[fd];
            w.cb(l, fd, ev[i].events, w.data);
        }
    }
    return 0;
}

void shim_loop_stop(struct shim_loop *l)
{
    l->stop = true;
}

static void free_list(struct pending *p)
{
    while (p) {
        struct pending *next = p->next;
        free(p);
        p = next;
    }
}

void shim_loop_free(struct shim_loop *l)
{
    if (l == NULL)
        return;
    free_list(l->deferred);
    free_list(l->timers);
    close(l->epfd);
    free(l->w);
    free(l);
}
