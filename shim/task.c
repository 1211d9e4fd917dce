#define _GNU_SOURCE
/* The containers and exec processes of one shim. libcontainer does the
 * work; this file keeps what it can't (stdio copies, exit statuses, who
 * waits for what) and turns its errors into the codes the task API needs.
 * Nothing is kept between calls but this table: the library itself holds no
 * state, so a long-lived shim can call it for thousands of containers. */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "container/checkpoint.h"
#include "base/cleanup.h"
#include "container/container.h"
#include "spec/spec.h"
#include "container/state.h"
#include "sandbox/sandbox.h"

#include "tasks.h"

/* Sets the message and returns the task API's code for it. */
int shim_fail(brig_error_t *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    brig_error_setv(err, 0, fmt, ap);
    va_end(ap);
    return code;
}

bool shim_is_init(const char *exec_id)
{
    return exec_id == NULL || *exec_id == '\0';
}

struct ctr *shim_find_ctr(const struct shim_tasks *t, const char *id)
{
    for (struct ctr *c = t->ctrs; c; c = c->next)
        if (id && strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

struct proc *shim_find_proc(const struct ctr *c, const char *exec_id)
{
    const char *want = exec_id ? exec_id : "";
    for (struct proc *p = c ? c->procs : NULL; p; p = p->next)
        if (strcmp(p->exec_id, want) == 0)
            return p;
    return NULL;
}

/* The process, or SHIM_E_NOT_FOUND with the message containerd shows. */
int shim_lookup(const struct shim_tasks *t, const char *id, const char *exec_id, struct proc **out,
                brig_error_t *err)
{
    struct ctr *c = shim_find_ctr(t, id);
    if (c == NULL)
        return shim_fail(err, SHIM_E_NOT_FOUND, "container `%s`: not found", id ? id : "");
    *out = shim_find_proc(c, exec_id);
    if (*out == NULL)
        return shim_fail(err, SHIM_E_NOT_FOUND, "exec `%s` of container `%s`: not found", exec_id,
                         id);
    return 0;
}

static void exit_of(const struct proc *p, struct shim_exit *e)
{
    *e = (struct shim_exit){ p->c->id, p->exec_id, p->pid, p->status, p->exited_at };
}

static void free_proc(struct proc *p)
{
    shim_io_free(p->io);
    for (int i = 0; i < 3; i++)
        free(p->paths[i]);
    brig_process_free(p->spec);
    while (p->waiters) {
        struct waiter *w = p->waiters;
        p->waiters = w->next;
        free(w);
    }
    free(p->exec_id);
    free(p);
}

static struct proc *new_proc(struct ctr *c, const char *exec_id, const struct shim_stdio *io)
{
    struct proc *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->c = c;
    p->terminal = io->terminal;
    const char *paths[3] = { io->stdin_path, io->stdout_path, io->stderr_path };
    bool ok = (p->exec_id = strdup(exec_id ? exec_id : "")) != NULL;
    for (int i = 0; i < 3 && ok; i++)
        ok = (p->paths[i] = strdup(paths[i] ? paths[i] : "")) != NULL;
    if (!ok) {
        free_proc(p);
        return NULL;
    }
    return p;
}

/* ---- exits ---- */

static bool execs_running(const struct ctr *c)
{
    for (const struct proc *p = c->procs->next; p; p = p->next)
        if (p->started && !p->exited)
            return true;
    return false;
}

/* Reports p's exit: an OOM kill of the container not told yet and its
 * output first, then the exit callback, then every Wait. Callbacks may
 * delete p, so nothing of p is used after. */
static void report(struct shim_tasks *t, struct proc *p)
{
    p->reported = true;
    if (p == p->c->procs)
        shim_oom_settle(t->oom, p->c);
    shim_io_drain(p->io);
    struct shim_exit e;
    exit_of(p, &e);
    struct waiter *w = p->waiters;
    p->waiters = NULL;
    t->on_exit(t->data, &e);
    while (w) {
        struct waiter *next = w->next;
        w->cb(w->data, &e);
        free(w);
        w = next;
    }
}

static void on_reaped(void *data, pid_t pid, int wait_status)
{
    struct shim_tasks *t = data;
    for (struct ctr *c = t->ctrs; c; c = c->next) {
        for (struct proc *p = c->procs; p; p = p->next) {
            if (p->pid != pid || p->exited)
                continue;
            p->exited = true;
            p->status = shim_exit_code(wait_status);
            clock_gettime(CLOCK_REALTIME, &p->exited_at);
            struct proc *init = c->procs;
            if (p == init) {
                /* containerd expects the execs' exits before the init's. With
                 * its own pid namespace the kernel kills the execs now; without
                 * one, they go the same way as they would with it. */
                if (!execs_running(c)) {
                    report(t, p);
                    return;
                }
                for (struct proc *x = init->next; x; x = x->next)
                    if (x->started && !x->exited)
                        kill(x->pid, SIGKILL);
                return;
            }
            report(t, p);
            /* c may be gone now (deleted from a callback): look again. */
            for (struct ctr *d = t->ctrs; d; d = d->next)
                if (d == c && d->procs->exited && !d->procs->reported && !execs_running(d))
                    report(t, d->procs);
            return;
        }
    }
}

static void on_oom_kill(void *data, void *key)
{
    struct shim_tasks *t = data;
    for (struct ctr *c = t->ctrs; c; c = c->next)
        if (c == key && t->on_oom)
            t->on_oom(t->data, c->id);
}

/* ---- the table ---- */

int shim_tasks_new(struct shim_loop *loop, const char *ns, const char *runtime_root,
                   shim_exit_cb on_exit, shim_oom_cb on_oom, void *data, struct shim_tasks **out,
                   brig_error_t *err)
{
    struct shim_tasks *t = calloc(1, sizeof *t);
    if (t == NULL)
        return brig_error_set(err, ENOMEM, "tasks");
    *t = (struct shim_tasks){ .loop = loop, .on_exit = on_exit, .on_oom = on_oom, .data = data };
    t->ns = strdup(ns ? ns : "");
    t->root = strdup(runtime_root);
    if (t->ns == NULL || t->root == NULL) {
        shim_tasks_free(t);
        return brig_error_set(err, ENOMEM, "tasks");
    }
    if (shim_reaper_new(loop, on_reaped, t, &t->reaper, err) < 0
        || shim_oom_new(loop, on_oom_kill, t, &t->oom, err) < 0) {
        shim_tasks_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void shim_tasks_set_cgroups(struct shim_tasks *t, bool managed)
{
    t->no_cgroup = !managed;
}

size_t shim_tasks_count(const struct shim_tasks *t)
{
    size_t n = 0;
    for (const struct ctr *c = t->ctrs; c; c = c->next)
        n++;
    return n;
}

static void free_ctr(struct shim_tasks *t, struct ctr *c)
{
    shim_oom_unwatch(t->oom, c);
    while (c->procs) {
        struct proc *p = c->procs;
        c->procs = p->next;
        free_proc(p);
    }
    free(c->id);
    free(c->bundle);
    free(c->rootfs);
    free(c->profile);
    free(c->checkpoint);
    free(c);
}

void shim_tasks_free(struct shim_tasks *t)
{
    if (t == NULL)
        return;
    while (t->ctrs) {
        struct ctr *c = t->ctrs;
        t->ctrs = c->next;
        free_ctr(t, c);
    }
    shim_oom_free(t->oom);
    shim_reaper_free(t->reaper);
    free(t->ns);
    free(t->root);
    free(t->gone_id);
    free(t->gone_exec_id);
    free(t);
}

/* ---- create, start, exec ---- */

struct spawn_call {
    struct shim_tasks *t;
    const struct ctr *c;
    struct proc *p;
    int master;
    int stdio[3]; /* the process's ends of its stdio */
};

static int do_create(void *arg, brig_error_t *err)
{
    struct spawn_call *s = arg;
    struct brig_create_options copts = {
        .root = s->t->root,
        .id = s->c->id,
        .bundle = s->c->bundle,
        .terminal = s->p->terminal,
        .no_cgroup = s->t->no_cgroup,
        .systemd_cgroup = s->c->systemd_cgroup,
        .pty_master = s->p->terminal ? &s->master : NULL,
        .stdio = s->stdio,
    };
    struct brig_bundle b;
    struct brig_profile_settings use = { 0 }, given = { 0 };
    int r = brig_bundle_load(s->c->bundle, &b, err);
    copts.config = &b;
    /* The runtime options' settings (a user namespace or not), for a
     * container the profile applies to. */
    bool own = r == 0 && s->c->userns_host
               && (s->c->profile || brig_profile_requested(b.spec, err) > 0);
    brig_error_release(err);
    if (own && (r = brig_profile_settings_default(&given, err)) == 0)
        r = brig_sandbox_setting(&given, "userns", "userns", BRIG_USERNS_HOST, false, err);
    /* The runtime options' profile, or the bundle's annotation. */
    if (r == 0)
        r = brig_sandbox_prepare(&copts, s->c->profile, own ? &given : NULL, &use, err);
    brig_profile_settings_clear(&given);
    if (r == 0)
        r = brig_container_create(&copts, &s->p->pid, err);
    brig_bundle_clear(&b);
    brig_profile_settings_clear(&use);
    return r;
}

static int do_exec(void *arg, brig_error_t *err)
{
    struct spawn_call *s = arg;
    struct brig_exec_options x = {
        .root = s->t->root,
        .id = s->c->id,
        .process = s->p->spec,
        .pty_master = s->p->terminal ? &s->master : NULL,
        .stdio = s->stdio,
    };
    return brig_container_exec(&x, &s->p->pid, err);
}

/* A checkpoint's container back (ctr containers restore --live, CRI's
 * restore): criu's work and logs beside the bundle, the init's stdio the
 * task's (fresh fds, inherited by criu, each its own). */
static int do_restore(void *arg, brig_error_t *err)
{
    struct spawn_call *s = arg;
    if (s->p->terminal)
        return brig_error_set(err, 0, "restoring a task with a terminal is not supported");
    cleanup_free char *work = NULL;
    if (asprintf(&work, "%s/criu-work", s->c->bundle) < 0) {
        work = NULL;
        return brig_error_set(err, ENOMEM, "restore");
    }
    if (mkdir(work, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", work);
    int stdio[3] = { -1, -1, -1 };
    for (int i = 0; i < 3; i++)
        if ((stdio[i] = fcntl(s->stdio[i], F_DUPFD, 3)) < 0) {
            for (int j = 0; j < i; j++)
                close(stdio[j]);
            return brig_error_set(err, errno, "restore: stdio");
        }
    struct brig_restore_options o = {
        .root = s->t->root,
        .id = s->c->id,
        .bundle = s->c->bundle,
        .no_cgroup = s->t->no_cgroup,
        .systemd_cgroup = s->c->systemd_cgroup,
        .stdio = stdio,
        .criu = { .image_path = s->c->checkpoint, .work_path = work },
    };
    int r = brig_container_restore(&o, &s->p->pid, err);
    for (int i = 0; i < 3; i++)
        close(stdio[i]);
    return r;
}

/* Opens p's stdio, has the library give its ends to the process, then
 * copies. The shim's own fds 0-2 stay as they are. */
static int spawn(struct shim_tasks *t, struct proc *p, int (*fn)(void *, brig_error_t *),
                 brig_error_t *err)
{
    struct spawn_call s = { t, p->c, p, -1, { -1, -1, -1 } };
    if (p->io == NULL) {
        struct shim_stdio paths = { p->paths[0], p->paths[1], p->paths[2], p->terminal };
        if (shim_io_new(t->loop, &paths, &p->io, err) < 0)
            return SHIM_E_UNKNOWN;
    }
    shim_io_child_fds(p->io, s.stdio);
    if (fn(&s, err) < 0) {
        if (s.master >= 0)
            close(s.master);
        return SHIM_E_UNKNOWN;
    }
    if (shim_io_attach(p->io, s.master, err) < 0)
        return SHIM_E_UNKNOWN; /* the process runs; its output is lost */
    return 0;
}

static void watch_oom(struct shim_tasks *t, struct ctr *c)
{
    struct brig_state *st = NULL;
    enum brig_status status;
    brig_error_t err = NULL;
    if (brig_container_state(t->root, c->id, &st, &status, &err) == 0 && *st->cgroup_path
        && shim_oom_watch(t->oom, st->cgroup_path, c, &err) < 0)
        brig_error_release(&err); /* no memory controller: no OOM events */
    brig_error_release(&err);
    brig_state_free(st);
}

int shim_task_create(struct shim_tasks *t, const struct shim_create_opts *o, pid_t *pid,
                     brig_error_t *err)
{
    if (o->id == NULL || brig_id_validate(o->id, err) < 0)
        return o->id ? SHIM_E_INVALID : shim_fail(err, SHIM_E_INVALID, "create: no id");
    if (o->bundle == NULL || *o->bundle == '\0')
        return shim_fail(err, SHIM_E_INVALID, "create `%s`: no bundle", o->id);
    if (shim_find_ctr(t, o->id))
        return shim_fail(err, SHIM_E_EXISTS, "container `%s`: already exists", o->id);
    struct ctr *c = calloc(1, sizeof *c);
    if (c == NULL || (c->id = strdup(o->id)) == NULL || (c->bundle = strdup(o->bundle)) == NULL
        || (o->profile && (c->profile = strdup(o->profile)) == NULL)
        || (c->systemd_cgroup = o->systemd_cgroup, false)
        || (c->userns_host = o->userns_host, false)
        || (o->checkpoint && (c->checkpoint = strdup(o->checkpoint)) == NULL)
        || (c->procs = new_proc(c, "", &o->io)) == NULL) {
        if (c)
            free_ctr(t, c);
        return brig_error_set(err, ENOMEM, "create `%s`", o->id);
    }
    int r = o->n_mounts == 0 ? 0
            : shim_rootfs_mount(o->bundle, o->mounts, o->n_mounts, &c->rootfs, err) < 0
                ? SHIM_E_UNKNOWN
                : 0;
    /* From a checkpoint, nothing runs until start restores it. */
    if (r == 0 && c->checkpoint == NULL)
        r = spawn(t, c->procs, do_create, err);
    if (r < 0 && c->procs->pid > 0) {
        brig_error_t ignored = NULL;
        brig_container_delete(t->root, c->id, true, &ignored, &ignored);
        brig_error_release(&ignored);
    }
    if (r < 0) {
        if (c->rootfs)
            shim_rootfs_unmount(c->rootfs);
        free_ctr(t, c);
        return brig_error_wrap(err, "create `%s`", o->id), r;
    }
    c->next = t->ctrs;
    t->ctrs = c;
    if (c->checkpoint == NULL)
        watch_oom(t, c);
    *pid = c->procs->pid;
    return 0;
}

int shim_task_start(struct shim_tasks *t, const char *id, const char *exec_id, pid_t *pid,
                    brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    if (p->started || p->exited)
        return shim_fail(err, SHIM_E_PRECONDITION, "start `%s`: %s", id,
                         p->exited ? "it has exited" : "it is started already");
    if (p == p->c->procs && p->c->checkpoint) {
        r = spawn(t, p, do_restore, err);
        if (r < 0)
            return brig_error_wrap(err, "restore `%s` from `%s`", id, p->c->checkpoint), r;
        watch_oom(t, p->c);
    } else if (p == p->c->procs) {
        brig_error_t warning = NULL;
        if (brig_container_start(t->root, id, &warning, err) < 0)
            return SHIM_E_UNKNOWN;
        brig_error_release(&warning); /* poststart hooks only warn */
    } else {
        if (p->c->procs->exited)
            return shim_fail(err, SHIM_E_PRECONDITION, "exec in `%s`: the container has exited",
                             id);
        r = spawn(t, p, do_exec, err);
        brig_process_free(p->spec);
        p->spec = NULL;
        if (r < 0)
            return brig_error_wrap(err, "exec `%s` in `%s`", exec_id, id), r;
    }
    p->started = true;
    *pid = p->pid;
    return 0;
}

int shim_task_exec(struct shim_tasks *t, const char *id, const char *exec_id,
                   const char *process_json, size_t len, const struct shim_stdio *io,
                   brig_error_t *err)
{
    struct ctr *c = shim_find_ctr(t, id);
    if (c == NULL)
        return shim_fail(err, SHIM_E_NOT_FOUND, "container `%s`: not found", id ? id : "");
    if (shim_is_init(exec_id))
        return shim_fail(err, SHIM_E_INVALID, "exec in `%s`: no exec id", id);
    if (shim_find_proc(c, exec_id))
        return shim_fail(err, SHIM_E_EXISTS, "exec `%s` in `%s`: already exists", exec_id, id);
    if (c->procs->exited)
        return shim_fail(err, SHIM_E_PRECONDITION, "exec in `%s`: the container has exited", id);
    struct brig_process *spec = NULL;
    if (brig_process_parse(process_json, len, "exec process", &spec, err) < 0)
        return SHIM_E_INVALID;
    if (io->terminal)
        spec->terminal = true;
    struct proc *p = new_proc(c, exec_id, io);
    if (p == NULL) {
        brig_process_free(spec);
        return brig_error_set(err, ENOMEM, "exec `%s`", exec_id);
    }
    p->spec = spec;
    p->terminal = spec->terminal;
    struct shim_stdio paths = { p->paths[0], p->paths[1], p->paths[2], p->terminal };
    if (shim_io_new(t->loop, &paths, &p->io, err) < 0) {
        free_proc(p);
        return brig_error_wrap(err, "exec `%s` in `%s`", exec_id, id), SHIM_E_UNKNOWN;
    }
    /* After the init, in the order they came. */
    struct proc **tail = &c->procs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    return 0;
}

/* ---- signals, delete ---- */

int shim_task_kill(struct shim_tasks *t, const char *id, const char *exec_id, int sig, bool all,
                   brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    if (p->exited)
        return shim_fail(err, SHIM_E_NOT_FOUND, "kill `%s`: process already finished", id);
    if (sig <= 0 || sig >= NSIG)
        return shim_fail(err, SHIM_E_INVALID, "kill `%s`: no such signal %d", id, sig);
    if (p == p->c->procs) {
        if (brig_container_kill(t->root, id, sig, all, err) < 0)
            return SHIM_E_UNKNOWN;
    } else {
        if (!p->started)
            return shim_fail(err, SHIM_E_PRECONDITION, "kill exec `%s` of `%s`: not started",
                             exec_id, id);
        /* Still ours to reap, so the pid can't have been reused. */
        if (kill(p->pid, sig) < 0 && errno != ESRCH)
            return brig_error_set(err, errno, "kill exec `%s` of `%s`", exec_id, id),
                   SHIM_E_UNKNOWN;
    }
    /* A process that died of it is reported now rather than on the next
     * SIGCHLD wake-up. */
    shim_reaper_poll(t->reaper);
    return 0;
}

/* The exit a Delete answers with: what was recorded, or for a process that
 * never ran to its end, killed now. */
static void final_exit(struct proc *p, struct shim_exit *out)
{
    if (!p->exited) {
        p->status = p->started || p == p->c->procs ? 128 + SIGKILL : 0;
        clock_gettime(CLOCK_REALTIME, &p->exited_at);
    }
    exit_of(p, out);
}

/* Waits registered on a process deleted before its exit was reported. */
static void release_waiters(struct proc *p, const struct shim_exit *e)
{
    while (p->waiters) {
        struct waiter *w = p->waiters;
        p->waiters = w->next;
        w->cb(w->data, e);
        free(w);
    }
}

static int delete_exec(struct shim_tasks *t, struct proc *p, struct shim_exit *out,
                       brig_error_t *err)
{
    if (p->started && !p->exited)
        return shim_fail(err, SHIM_E_PRECONDITION, "delete exec `%s` of `%s`: it is running",
                         p->exec_id, p->c->id);
    final_exit(p, out);
    free(t->gone_exec_id);
    t->gone_exec_id = brig_steal_ptr(p->exec_id);
    out->exec_id = t->gone_exec_id;
    release_waiters(p, out);
    struct proc **pp = &p->c->procs;
    while (*pp != p)
        pp = &(*pp)->next;
    *pp = p->next;
    free_proc(p);
    return 0;
}

int shim_task_delete(struct shim_tasks *t, const char *id, const char *exec_id,
                     struct shim_exit *out, brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    struct ctr *c = p->c;
    if (p != c->procs)
        return delete_exec(t, p, out, err);
    if (p->started && !p->exited)
        return shim_fail(err, SHIM_E_PRECONDITION, "delete `%s`: it is running", id);
    brig_error_t warning = NULL;
    if (!c->state_gone)
        r = brig_container_delete(t->root, id, true, &warning, err);
    brig_error_release(&warning);
    if (r < 0)
        return brig_error_wrap(err, "delete `%s`", id), SHIM_E_UNKNOWN;
    for (struct proc *x = c->procs->next; x; x = x->next)
        if (x->started && !x->exited)
            kill(x->pid, SIGKILL);
    if (c->rootfs)
        shim_rootfs_unmount(c->rootfs);
    final_exit(p, out);
    free(t->gone_id);
    t->gone_id = brig_steal_ptr(c->id);
    out->id = t->gone_id;
    out->exec_id = "";
    for (struct proc *x = c->procs; x; x = x->next)
        release_waiters(x, out);
    struct ctr **cc = &t->ctrs;
    while (*cc != c)
        cc = &(*cc)->next;
    *cc = c->next;
    free_ctr(t, c);
    return 0;
}

/* ---- state, terminal, stdin, wait ---- */

int shim_task_state(struct shim_tasks *t, const char *id, const char *exec_id,
                    struct shim_state *out, brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    enum shim_status s = p->exited ? SHIM_STOPPED : !p->started ? SHIM_CREATED : SHIM_RUNNING;
    if (s == SHIM_RUNNING && p->c->paused)
        s = SHIM_PAUSED;
    *out = (struct shim_state){
        .status = s,
        .pid = p->pid,
        .exec_id = p->exec_id,
        .bundle = p->c->bundle,
        .io = { p->paths[0], p->paths[1], p->paths[2], p->terminal },
        .exit_status = p->status,
        .exited_at = p->exited_at,
    };
    return 0;
}

int shim_task_resize_pty(struct shim_tasks *t, const char *id, const char *exec_id, uint32_t width,
                         uint32_t height, brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    if (!p->terminal || p->exited)
        return 0; /* as containerd's own shim: nothing to resize is no error */
    return shim_io_resize(p->io, width, height, err) < 0 ? SHIM_E_UNKNOWN : 0;
}

int shim_task_close_io(struct shim_tasks *t, const char *id, const char *exec_id, bool close_stdin,
                       brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    if (close_stdin)
        shim_io_close_stdin(p->io);
    return 0;
}

int shim_task_wait(struct shim_tasks *t, const char *id, const char *exec_id, shim_wait_cb cb,
                   void *data, brig_error_t *err)
{
    struct proc *p;
    int r = shim_lookup(t, id, exec_id, &p, err);
    if (r < 0)
        return r;
    if (p->reported) {
        struct shim_exit e;
        exit_of(p, &e);
        cb(data, &e);
        return 0;
    }
    struct waiter *w = malloc(sizeof *w);
    if (w == NULL)
        return brig_error_set(err, ENOMEM, "wait");
    *w = (struct waiter){ p->waiters, cb, data };
    p->waiters = w;
    return 0;
}
