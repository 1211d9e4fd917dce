#define _GNU_SOURCE
/* The shim's event loop: callbacks, removal while events are pending,
 * deferred functions and timers, stop. */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "unit.h"

struct pipes {
    int a[2], b[2];
    int calls_a, calls_b;
    char got[16];
};

/* Whichever of the two fires first removes the other: the other's event,
 * already in the same epoll batch, must not be delivered. */
static void read_and_drop_other(struct shim_loop *l, int fd, uint32_t ev, void *data)
{
    struct pipes *p = data;
    char c;
    if (read(fd, &c, 1) == 1) {
        if (fd == p->a[0]) {
            p->calls_a++;
            shim_loop_del(l, p->b[0]);
        } else {
            p->calls_b++;
            shim_loop_del(l, p->a[0]);
        }
    }
}

static void append_and_stop(struct shim_loop *l, int fd, uint32_t ev, void *data)
{
    struct pipes *p = data;
    ssize_t n = read(fd, p->got, sizeof p->got - 1);
    if (n > 0)
        p->got[n] = '\0';
    p->calls_a++;
    shim_loop_stop(l);
}

static char order[8];
static size_t n_order;

static void mark(struct shim_loop *l, void *data)
{
    order[n_order++] = *(const char *) data;
}

static void mark_and_defer(struct shim_loop *l, void *data)
{
    mark(l, data);
    brig_error_t err = NULL;
    static const char c = 'c';
    shim_loop_defer(l, mark, (void *) &c, &err);
}

static void stop_fn(struct shim_loop *l, void *data)
{
    mark(l, data);
    shim_loop_stop(l);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(void)
{
    brig_error_t err = NULL;
    struct shim_loop *l = NULL;
    CHECK(shim_loop_new(&l, &err) == 0, "a loop is made");

    struct pipes p = { 0 };
    if (pipe(p.a) < 0 || pipe(p.b) < 0)
        return 1;
    CHECK(shim_loop_add(l, p.a[0], EPOLLIN, append_and_stop, &p, &err) == 0, "an fd is watched");
    CHECK(shim_loop_add(l, p.a[0], EPOLLIN, append_and_stop, &p, &err) < 0 && err->errnum == EEXIST,
          "watching it twice fails with EEXIST");
    brig_error_release(&err);
    if (write(p.a[1], "hello", 5) != 5)
        return 1;
    CHECK(shim_loop_run(l, &err) == 0, "run returns 0 after stop");
    CHECK_STR(p.got, "hello", "the callback read what was written");
    CHECK(p.calls_a == 1, "the callback ran once");
    shim_loop_del(l, p.a[0]);
    shim_loop_del(l, p.a[0]); /* twice, and unknown fds: ignored */
    shim_loop_del(l, 999);

    p.calls_a = 0;
    CHECK(shim_loop_add(l, p.a[0], EPOLLIN, read_and_drop_other, &p, &err) == 0
              && shim_loop_add(l, p.b[0], EPOLLIN, read_and_drop_other, &p, &err) == 0,
          "two fds are watched");
    if (write(p.a[1], "x", 1) != 1 || write(p.b[1], "y", 1) != 1)
        return 1;
    /* Both are ready in one batch; the timer ends the run. */
    static const char t = 't';
    CHECK(shim_loop_after(l, 50, stop_fn, (void *) &t, &err) == 0, "a timer is set");
    shim_loop_run(l, &err);
    CHECK(p.calls_a + p.calls_b == 1, "the fd removed in the same batch got no callback");
    CHECK(shim_loop_mod(l, p.calls_a ? p.b[0] : p.a[0], EPOLLIN, &err) < 0,
          "the removed fd can't be modified");
    brig_error_release(&err);
    shim_loop_del(l, p.a[0]);
    shim_loop_del(l, p.b[0]);

    n_order = 0;
    static const char a = 'a', b = 'b', s = 's';
    long long t0 = now_ms();
    shim_loop_after(l, 80, stop_fn, (void *) &s, &err);
    shim_loop_defer(l, mark_and_defer, (void *) &a, &err);
    shim_loop_defer(l, mark, (void *) &b, &err);
    shim_loop_run(l, &err);
    long long took = now_ms() - t0;
    order[n_order] = '\0';
    CHECK_STR(order, "abcs",
              "deferred functions run in order, re-deferred ones a turn later, "
              "then the timer");
    CHECK(took >= 80 && took < 2000, "the timer fired after its delay");

    close(p.a[0]);
    close(p.a[1]);
    close(p.b[0]);
    close(p.b[1]);
    shim_loop_defer(l, mark, (void *) &a, &err); /* freed with the loop */
    shim_loop_free(l);
    return unit_done();
}
