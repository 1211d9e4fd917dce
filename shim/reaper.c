#define _GNU_SOURCE
/* Exits and OOM kills. The shim is the subreaper of every process it
 * starts, so the container's init and the exec'd processes (which
 * libcontainer starts through an intermediate process that exits) all end
 * up as our children; SIGCHLD comes through a signalfd in the loop and
 * every ended child is reaped there, once. */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "cgroup/cgroup.h"

struct shim_reaper {
    struct shim_loop *loop;
    int sfd;
    shim_reaped_cb cb;
    void *data;
};

uint32_t shim_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return (uint32_t) WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128u + (uint32_t) WTERMSIG(wait_status);
    return 255;
}

void shim_reaper_poll(struct shim_reaper *r)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        r->cb(r->data, pid, status);
    }
}

static void on_signal(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    (void) loop;
    (void) events;
    struct signalfd_siginfo si[8];
    /* Signals coalesce: the reads only empty the fd; waitpid finds them all. */
    while (read(fd, si, sizeof si) > 0)
        ;
    shim_reaper_poll(data);
}

int shim_reaper_new(struct shim_loop *loop, shim_reaped_cb cb, void *data, struct shim_reaper **out,
                    brig_error_t *err)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return brig_error_set(err, errno, "become child subreaper");
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGPIPE);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return brig_error_set(err, errno, "block SIGCHLD");
    sigdelset(&set, SIGPIPE);
    struct shim_reaper *r = calloc(1, sizeof *r);
    if (r == NULL)
        return brig_error_set(err, ENOMEM, "reaper");
    *r = (struct shim_reaper){ loop, -1, cb, data };
    r->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (r->sfd < 0) {
        int saved = errno;
        free(r);
        return brig_error_set(err, saved, "signalfd");
    }
    if (shim_loop_add(loop, r->sfd, EPOLLIN, on_signal, r, err) < 0) {
        close(r->sfd);
        free(r);
        return -1;
    }
    *out = r;
    /* Children that ended before the signalfd existed sent their SIGCHLD
     * already (it is pending, so the fd is readable), but reap now anyway. */
    shim_reaper_poll(r);
    return 0;
}

void shim_reaper_free(struct shim_reaper *r)
{
    if (r == NULL)
        return;
    shim_loop_del(r->loop, r->sfd);
    close(r->sfd);
    free(r);
}

/* ---- OOM ---- */

/* Each watched cgroup's OOM notification (cgroup.h) in the loop. On v1
 * it comes before the kill is counted, so a notification without a new
 * kill is looked at again: 10 ms later, then at doubling intervals, LOOKS
 * looks in all (the last some 0.6 s after), on one timerfd for every
 * watch. */
enum { LOOKS = 7, FIRST_RECHECK_MS = 10 };

struct oom_watch {
    struct oom_watch *next;
    struct shim_oom *o;
    struct brig_cgroup cg;
    int fd;
    void *key;
    uint64_t oom_kills;
    int looks;   /* looks left for a kill not counted yet */
    int64_t due; /* the next of them, in ms of CLOCK_MONOTONIC */
};

struct shim_oom {
    struct shim_loop *loop;
    int tfd; /* the rechecks' timerfd, made on the first */
    shim_oom_fire_cb cb;
    void *data;
    struct oom_watch *watches;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Arms the timer for the earliest recheck due, or disarms it. */
static void arm_rechecks(struct shim_oom *o)
{
    int64_t first = INT64_MAX;
    for (const struct oom_watch *w = o->watches; w; w = w->next)
        if (w->looks > 0 && w->due < first)
            first = w->due;
    struct itimerspec its = { 0 };
    if (first != INT64_MAX) {
        its.it_value.tv_sec = first / 1000;
        its.it_value.tv_nsec = (first % 1000) * 1000000;
    }
    timerfd_settime(o->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Fires the callback when the count has risen. True when it fired: the
 * callback may have unwatched w, or any other watch. */
static bool tell_new_kills(struct shim_oom *o, struct oom_watch *w)
{
    uint64_t kills = w->oom_kills;
    brig_error_t err = NULL;
    if (brig_cgroup_oom_kills(&w->cg, &kills, &err) < 0)
        brig_error_release(&err); /* the cgroup has gone: no kill to tell */
    if (kills <= w->oom_kills)
        return false;
    w->oom_kills = kills;
    w->looks = 0;
    o->cb(o->data, w->key);
    return true;
}

/* Fires the callback for new kills, else plans the next look. */
static bool look(struct shim_oom *o, struct oom_watch *w)
{
    w->looks--;
    if (tell_new_kills(o, w))
        return true;
    w->due = now_ms() + (FIRST_RECHECK_MS << (LOOKS - 1 - w->looks));
    return false;
}

static void on_recheck(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    (void) loop;
    (void) events;
    struct shim_oom *o = data;
    uint64_t expirations;
    if (read(fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        return;
    int64_t now = now_ms();
    /* From the start after each callback: it may have changed the list. */
    for (struct oom_watch *w = o->watches; w;) {
        if (w->looks > 0 && w->due <= now && look(o, w))
            w = o->watches;
        else
            w = w->next;
    }
    arm_rechecks(o);
}

/* True when a notification was waiting on w's fd (read now, rearming it). */
static bool drain(const struct oom_watch *w)
{
    uint64_t buf[64]; /* an eventfd's count, or inotify events */
    bool any = false;
    while (read(w->fd, buf, sizeof buf) > 0)
        any = true;
    return any;
}

/* The rechecks' timer, made on the first use, armed for the earliest due. */
static void plan_rechecks(struct shim_oom *o)
{
    if (o->tfd < 0) {
        o->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        brig_error_t err = NULL;
        if (o->tfd >= 0 && shim_loop_add(o->loop, o->tfd, EPOLLIN, on_recheck, o, &err) < 0) {
            brig_error_release(&err);
            close(o->tfd);
            o->tfd = -1;
        }
        if (o->tfd < 0)
            return; /* no rechecks: a kill counted late is told at the next notification */
    }
    arm_rechecks(o);
}

static void on_notified(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    (void) loop;
    (void) fd;
    (void) events;
    struct oom_watch *w = data;
    struct shim_oom *o = w->o;
    drain(w);
    w->looks = LOOKS;
    if (look(o, w))
        return; /* w may be gone */
    plan_rechecks(o);
}

int shim_oom_new(struct shim_loop *loop, shim_oom_fire_cb cb, void *data, struct shim_oom **out,
                 brig_error_t *err)
{
    struct shim_oom *o = calloc(1, sizeof *o);
    if (o == NULL)
        return brig_error_set(err, ENOMEM, "oom watch");
    *o = (struct shim_oom){ loop, -1, cb, data, NULL };
    *out = o;
    return 0;
}

static void free_watch(struct shim_oom *o, struct oom_watch *w)
{
    if (w->fd >= 0) {
        shim_loop_del(o->loop, w->fd);
        close(w->fd);
    }
    brig_cgroup_close(&w->cg);
    free(w);
}

int shim_oom_watch(struct shim_oom *o, const char *cgroup_path, void *key, brig_error_t *err)
{
    struct oom_watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return brig_error_set(err, ENOMEM, "oom watch");
    *w = (struct oom_watch){ .o = o, .cg = BRIG_CGROUP_INIT, .fd = -1, .key = key };
    if (brig_cgroup_open(cgroup_path, &w->cg, err) < 0
        || brig_cgroup_oom_kills(&w->cg, &w->oom_kills, err) < 0
        || brig_cgroup_oom_watch(&w->cg, &w->fd, err) < 0
        || shim_loop_add(o->loop, w->fd, EPOLLIN, on_notified, w, err) < 0) {
        free_watch(o, w);
        return -1;
    }
    w->next = o->watches;
    o->watches = w;
    return 0;
}

/* The kernel counts a kill after it has sent the SIGKILL and logged it,
 * so a dead init can be reaped before its kill is counted, and containerd,
 * told of the exit, deletes the task before a recheck is due: the OOM
 * would never be told. So while a notification is outstanding (read or
 * not), the count is looked at for a little longer here, at most
 * SETTLE_WAIT_MS in all; a death without one costs a single read. */
enum { SETTLE_WAIT_MS = 127 };

void shim_oom_settle(struct shim_oom *o, void *key)
{
    struct oom_watch *w = o->watches;
    while (w && w->key != key)
        w = w->next;
    if (w == NULL)
        return;
    if (drain(w))
        w->looks = LOOKS;
    for (int ms = 1; !tell_new_kills(o, w); ms *= 2) {
        if (w->looks == 0)
            return;
        if (ms > SETTLE_WAIT_MS) {
            plan_rechecks(o); /* the regular looks go on while the task lasts */
            return;
        }
        nanosleep(&(struct timespec){ 0, ms * 1000000L }, NULL);
    }
}

void shim_oom_unwatch(struct shim_oom *o, void *key)
{
    for (struct oom_watch **pp = &o->watches; *pp; pp = &(*pp)->next) {
        struct oom_watch *w = *pp;
        if (w->key != key)
            continue;
        *pp = w->next;
        free_watch(o, w);
        return;
    }
}

void shim_oom_free(struct shim_oom *o)
{
    if (o == NULL)
        return;
    while (o->watches)
        shim_oom_unwatch(o, o->watches->key);
    if (o->tfd >= 0) {
        shim_loop_del(o->loop, o->tfd);
        close(o->tfd);
    }
    free(o);
}
