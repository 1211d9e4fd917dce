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
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

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

struct oom_watch {
    struct oom_watch *next;
    int wd;
    void *key;
    char *events_path;
    uint64_t oom_kills;
};

struct shim_oom {
    struct shim_loop *loop;
    int ifd;
    shim_oom_fire_cb cb;
    void *data;
    struct oom_watch *watches;
};

static uint64_t read_oom_kills(const char *path)
{
    cleanup_free char *text = NULL;
    brig_error_t err = NULL;
    if (brig_read_file(path, &text, NULL, &err) < 0) {
        brig_error_release(&err);
        return 0;
    }
    struct brig_cgroup_stats st = { 0 };
    brig_cgroup_stats_parse("memory.events", text, &st);
    return st.memory_events_oom_kill;
}

static void on_inotify(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    (void) loop;
    (void) events;
    struct shim_oom *o = data;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *) p;
            p += sizeof *ev + ev->len;
            for (struct oom_watch *w = o->watches; w; w = w->next) {
                if (w->wd != ev->wd)
                    continue;
                uint64_t kills = read_oom_kills(w->events_path);
                if (kills > w->oom_kills) {
                    w->oom_kills = kills;
                    o->cb(o->data, w->key);
                }
                break; /* the callback may unwatch: don't touch w after it */
            }
        }
    }
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

int shim_oom_watch(struct shim_oom *o, const char *cgroup_path, void *key, brig_error_t *err)
{
    /* The inotify fd is made on the first watch: a shim whose containers
     * have no cgroup never needs one. */
    if (o->ifd < 0) {
        o->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (o->ifd < 0)
            return brig_error_set(err, errno, "inotify_init1");
        if (shim_loop_add(o->loop, o->ifd, EPOLLIN, on_inotify, o, err) < 0) {
            close(o->ifd);
            o->ifd = -1;
            return -1;
        }
    }
    struct oom_watch *w = calloc(1, sizeof *w);
    if (w == NULL || asprintf(&w->events_path, "%s/memory.events", cgroup_path) < 0) {
        free(w);
        return brig_error_set(err, ENOMEM, "oom watch");
    }
    /* Modifications of memory.events come as IN_MODIFY on cgroup v2. */
    w->wd = inotify_add_watch(o->ifd, w->events_path, IN_MODIFY);
    if (w->wd < 0) {
        int saved = errno;
        brig_error_set(err, saved, "watch `%s`", w->events_path);
        free(w->events_path);
        free(w);
        return -1;
    }
    w->key = key;
    w->oom_kills = read_oom_kills(w->events_path);
    w->next = o->watches;
    o->watches = w;
    return 0;
}

void shim_oom_unwatch(struct shim_oom *o, void *key)
{
    for (struct oom_watch **pp = &o->watches; *pp; pp = &(*pp)->next) {
        struct oom_watch *w = *pp;
        if (w->key != key)
            continue;
        inotify_rm_watch(o->ifd, w->wd);
        *pp = w->next;
        free(w->events_path);
        free(w);
        return;
    }
}

void shim_oom_free(struct shim_oom *o)
{
    if (o == NULL)
        return;
    while (o->watches)
        shim_oom_unwatch(o, o->watches->key);
    if (o->ifd >= 0) {
        shim_loop_del(o->loop, o->ifd);
        close(o->ifd);
    }
    free(o);
}
