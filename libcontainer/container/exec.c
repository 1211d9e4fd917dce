#define _GNU_SOURCE
/* exec: a new process in a running container. It enters every namespace
 * of the container's init (the user namespace first, so the others are
 * reachable), is cloned straight into the container's cgroup, and takes
 * the same identity steps as the init before execve. */
#include "container/container.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/identity.h"
#include "cgroup/cgroup.h"
#include "base/cleanup.h"
#include "container/handler.h"
#include "container/provision.h"
#include "process/namespaces.h"
#include "base/path.h"
#include "process/process.h"
#include "process/seccomp.h"
#include "selfexe/selfexe.h"
#include "process/sync.h"
#include "process/terminal.h"
#include "base/utils.h"

static const char *const ns_proc_names[BRIG_NS_COUNT] = {
    [BRIG_NS_PID] = "pid",       [BRIG_NS_NETWORK] = "net", [BRIG_NS_MOUNT] = "mnt",
    [BRIG_NS_IPC] = "ipc",       [BRIG_NS_UTS] = "uts",     [BRIG_NS_USER] = "user",
    [BRIG_NS_CGROUP] = "cgroup", [BRIG_NS_TIME] = "time",
};

/* The init's namespaces that differ from ours: those are the ones to join
 * (setns into the namespace one is already in fails for user namespaces). */
static int open_init_namespaces(pid_t init, struct brig_ns_join *join, brig_error_t *err)
{
    join->any = false;
    for (int t = 0; t < BRIG_NS_COUNT; t++)
        join->fd[t] = -1;
    for (int t = 0; t < BRIG_NS_COUNT; t++) {
        char path[64], self[64];
        snprintf(path, sizeof path, "/proc/%d/ns/%s", init, ns_proc_names[t]);
        snprintf(self, sizeof self, "/proc/self/ns/%s", ns_proc_names[t]);
        struct stat theirs, ours;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT && t == BRIG_NS_TIME)
                continue; /* kernel without time namespaces */
            int saved = errno;
            brig_ns_join_close(join);
            return brig_error_set(err, saved, "open `%s`", path);
        }
        if (fstat(fd, &theirs) == 0 && stat(self, &ours) == 0 && theirs.st_ino == ours.st_ino
            && theirs.st_dev == ours.st_dev) {
            close(fd);
            continue;
        }
        join->fd[t] = fd;
        join->any = true;
    }
    return 0;
}

/* The cgroup the process joins: the container's, or the sub-cgroups the
 * options name below it. Returns 1 when brig manages none (the process
 * stays where it is). */
static int open_exec_cgroup(const struct brig_state *st, const struct brig_exec_options *o,
                            struct brig_cgroup *opened, struct brig_cgroup *cg, brig_error_t *err)
{
    if (*st->cgroup_path == '\0')
        return 1; /* not managed by brig */
    cleanup_cgroup struct brig_cgroup top = *opened;
    *opened = (struct brig_cgroup) BRIG_CGROUP_INIT;
    if (top.backend == NULL && brig_cgroup_open(st->cgroup_path, &top, err) < 0)
        return -1;
    if (o->n_cgroups == 0) {
        *cg = top;
        top = (struct brig_cgroup) BRIG_CGROUP_INIT;
        return 0;
    }
    return brig_cgroup_open_sub(&top, o->cgroups, o->n_cgroups, cg, err);
}

/* In the container, as the process to be: identity, terminal, exec. */
struct exec_ctx {
    const struct brig_exec_options *o;
    const struct brig_process *process; /* o->process, or the handler's version of it */
    int lock_fd;                        /* the locked state dir: not for the child */
    const struct brig_state *st;
    const struct brig_seccomp *seccomp; /* the container's, or NULL */
    struct brig_seccomp_filter *filter;
};

static int exec_in_container(const struct exec_ctx *x, int sync_fd, brig_error_t *err)
{
    const struct brig_exec_options *o = x->o;
    const struct brig_process *p = x->process;
    /* The process starts with no signal blocked, however it was forked
     * (a sanitizer's fork leaves every signal blocked in the child). */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0)
        return brig_error_set(err, errno, "setsid");
    if (brig_rlimits_apply(p, err) < 0)
        return -1;
    cleanup_free char *exe = NULL;
    char **env = NULL;
    if (brig_process_become(p, x->filter, sync_fd, &exe, &env, err) < 0)
        return -1;
    brig_process_cloexec_from(3 + o->preserve_fds);
    if (brig_sync_send(sync_fd, BRIG_SYNC_READY, 0, NULL, err) < 0)
        return -1;
    execve(exe, p->args.v, env);
    /* The runtime already let go: say it where the process would have. */
    dprintf(STDERR_FILENO, "brig: exec `%s`: %s\n", exe, strerror(errno));
    _exit(127);
}

/* setns of a pid or time namespace only decides where the caller's next
 * children are born. So the runtime enters them itself around the clone:
 * the new process starts in the container's pid namespace and needs no
 * go-between to fork it (one process fewer per exec). With a user
 * namespace to join too, as well: the host's root may enter a pid
 * namespace that any of its user namespaces owns, and the child joins
 * the user namespace after its birth. Where the runtime may not (EPERM:
 * not the host's root), the child forks instead. `back` keeps our own, to
 * return to; the joined fds are closed once both are entered. */
static int enter_for_children(struct brig_ns_join *join, int back[2], brig_error_t *err)
{
    static const struct {
        enum brig_ns_type type;
        const char *own;
        int flag;
    } kinds[2] = {
        { BRIG_NS_PID, "/proc/self/ns/pid_for_children", CLONE_NEWPID },
        { BRIG_NS_TIME, "/proc/self/ns/time_for_children", CLONE_NEWTIME },
    };
    back[0] = back[1] = -1;
    for (int i = 0; i < 2; i++) {
        int fd = join->fd[kinds[i].type];
        if (fd < 0)
            continue;
        back[i] = open(kinds[i].own, O_RDONLY | O_CLOEXEC);
        if (back[i] < 0)
            return brig_error_set(err, errno, "open `%s`", kinds[i].own);
        if (setns(fd, kinds[i].flag) < 0)
            return brig_error_set(err, errno, "join %s namespace",
                                  brig_ns_type_name(kinds[i].type));
    }
    for (int i = 0; i < 2; i++) {
        enum brig_ns_type t = kinds[i].type;
        if (join->fd[t] >= 0)
            close(join->fd[t]);
        join->fd[t] = -1;
    }
    return 0;
}

static void leave_for_children(int back[2])
{
    static const int flags[2] = { CLONE_NEWPID, CLONE_NEWTIME };
    for (int i = 0; i < 2; i++) {
        if (back[i] < 0)
            continue;
        setns(back[i], flags[i]);
        close(back[i]);
        back[i] = -1;
    }
}

/* enter_for_children, where *direct says whether it did: a refusal with a
 * user namespace to join is no error (the child forks instead). */
static int enter_direct(struct brig_ns_join *join, int back[2], bool *direct, brig_error_t *err)
{
    *direct = enter_for_children(join, back, err) == 0;
    if (*direct)
        return 0;
    leave_for_children(back);
    if (join->fd[BRIG_NS_USER] < 0 || (*err)->errnum != EPERM)
        return -1;
    brig_error_release(err);
    return 0;
}

static int wait_placed(int sync_fd, brig_error_t *err)
{
    cleanup_free struct brig_sync_msg *msg = malloc(sizeof *msg);
    if (msg == NULL)
        return brig_error_set(err, ENOMEM, "exec");
    return brig_sync_expect(sync_fd, BRIG_SYNC_CGROUP_DONE, msg, err);
}

static __attribute__((noreturn)) void exec_child(const struct exec_ctx *x,
                                                 const struct brig_ns_join *join,
                                                 const struct brig_cgroup_self_join *self,
                                                 bool direct, bool wait_cgroup, int sync_fd)
{
    brig_error_t err = NULL;
    /* Inside the container's namespaces but still the brig binary: not
     * dumpable until execve, so the container can't reach it via /proc. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Our copy of the flock'ed state dir would hold the lock until exec;
     * a process frozen before exec (--ignore-paused) would hold it for
     * ever and block `resume`. */
    close(x->lock_fd);
    /* Into the v1 hierarchies by itself, or placed by the runtime:
     * nothing runs before that. */
    if (brig_cgroup_self_join(self) < 0) {
        brig_error_set(&err, errno, "join the container's cgroup");
        brig_sync_report_error(sync_fd, err);
        _exit(1);
    }
    if (wait_cgroup && wait_placed(sync_fd, &err) < 0) {
        brig_sync_report_error(sync_fd, err);
        _exit(1);
    }
    if (x->o->stdio && brig_process_take_stdio(x->o->stdio, &err) < 0) {
        brig_sync_report_error(sync_fd, err);
        _exit(1);
    }
    /* Only what the process needs crosses into the container. */
    int keep[1 + BRIG_NS_COUNT] = { sync_fd };
    for (int t = 0; t < BRIG_NS_COUNT; t++)
        keep[1 + t] = join->fd[t];
    brig_close_fds_except(3 + x->o->preserve_fds, keep, sizeof keep / sizeof keep[0]);
    if (brig_ns_join_all(join, NULL, NULL, &err) == 0) {
        struct brig_ns_join closed = *join;
        brig_ns_join_close(&closed);
        if (direct)
            exec_in_container(x, sync_fd, &err);
        /* The pid and time namespaces only take effect in a child. */
        pid_t pid = err ? -1 : brig_clone_fork(0);
        if (pid < 0) {
            if (err == NULL)
                brig_error_set(&err, errno, "fork");
        } else if (pid > 0) {
            _exit(brig_sync_send(sync_fd, BRIG_SYNC_INIT_PID, pid, NULL, &err) < 0);
        } else {
            exec_in_container(x, sync_fd, &err);
        }
    }
    brig_sync_report_error(sync_fd, err);
    _exit(1);
}

static int hand_to_listener(const struct exec_ctx *x, pid_t pid, int notify_fd, brig_error_t *err)
{
    cleanup_free char *json = NULL;
    if (brig_state_to_json(x->st, BRIG_STATUS_RUNNING, false, &json, err) < 0)
        return -1;
    return brig_seccomp_send_to_listener(x->seccomp->listener_path, x->seccomp->listener_metadata,
                                         notify_fd, pid, json, err);
}

static int exec_seccomp_fd(void *ctx, struct brig_sync_peer *peer, int notify_fd, brig_error_t *err)
{
    return hand_to_listener(ctx, peer->pid, notify_fd, err);
}

/* An exec'd process never enters a user namespace of its own, nor runs the
 * runtime's hooks: those messages would be a protocol error. */
static const struct brig_sync_handlers exec_handlers = {
    .what = "exec",
    .gone = "the process died before exec",
    .seccomp_fd = exec_seccomp_fd,
};

static int drive_exec(const struct exec_ctx *x, int sync_fd, pid_t child, pid_t *pid, int *master,
                      brig_error_t *err)
{
    /* The handler only reads x: the cast is for the generic ctx. */
    struct brig_sync_peer peer = { sync_fd, child, *pid, -1 };
    int r = brig_sync_drive(&peer, &exec_handlers, (void *) x, err);
    *pid = peer.pid;
    *master = peer.pty_master;
    return r;
}

/* The child waits for this before anything else. Into a paused container
 * only where the freezer doesn't act: it would freeze before it is ready. */
static int place_child(const struct brig_cgroup *cg, pid_t child, bool paused, int sync_fd,
                       brig_error_t *err)
{
    int r = paused ? brig_cgroup_add_pid_unfrozen(cg, child, err)
                   : brig_cgroup_add_pid(cg, child, err);
    return r < 0 ? -1 : brig_sync_send(sync_fd, BRIG_SYNC_CGROUP_DONE, 0, NULL, err);
}

/* Set up, the process joins the paused rest and freezes there. */
static int join_frozen(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    if (brig_cgroup_add_pid(cg, pid, err) == 0)
        return 0;
    /* ESRCH: a short-lived process is already gone, nothing to move. */
    if ((*err)->errnum != ESRCH)
        return brig_error_wrap(err, "join the container's cgroup");
    brig_error_release(err);
    return 0;
}

/* Cloned into the cgroup dir `into` where there is one. An old kernel
 * without clone3 gets a plain fork, which the runtime places. */
static pid_t clone_child(int into, bool *placed, bool *joins, struct brig_cgroup_self_join *self)
{
    pid_t child = into >= 0 ? brig_clone_into_cgroup(0, into) : brig_clone_fork(0);
    if (child < 0 && into >= 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
        *placed = *joins = false;
        brig_cgroup_self_join_close(self);
        child = brig_clone_fork(0);
    }
    return child;
}

static int spawn(const struct exec_ctx *x, bool paused, struct brig_cgroup *top, pid_t *pid,
                 brig_error_t *err)
{
    const struct brig_exec_options *o = x->o;
    const struct brig_state *st = x->st;
    /* Joining a container that others already live in: the guard of
     * brig's file, if it was left for later, is made now, by us. */
    if (brig_selfexe_finish(err) < 0)
        return -1;
    cleanup_ns_join struct brig_ns_join join = BRIG_NS_JOIN_NONE;
    if (open_init_namespaces(st->pid, &join, err) < 0)
        return -1;
    cleanup_cgroup struct brig_cgroup cgroup = BRIG_CGROUP_INIT;
    int managed = open_exec_cgroup(st, o, top, &cgroup, err);
    if (managed < 0)
        return -1;
    int cg = managed == 0 ? brig_cgroup_clone_fd(&cgroup) : -1;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return brig_error_set(err, errno, "create sync socket");
    cleanup_close int sync_fd = pair[0];
    cleanup_close int child_fd = pair[1];
    int back[2] = { -1, -1 };
    bool direct;
    if (enter_direct(&join, back, &direct, err) < 0)
        return -1;
    /* Into a frozen cgroup (--ignore-paused) the process would freeze
     * before it is ready: it joins after its set-up instead, and freezes
     * there as the rest of the container is. */
    bool placed = cg >= 0 && !paused;
    /* v1 hierarchies: the child enters them itself (cgroup.h), and a
     * hybrid host's v2 directory by clone3. */
    cleanup_self_join struct brig_cgroup_self_join self = BRIG_CGROUP_SELF_JOIN_INIT;
    if (managed == 0 && cg < 0 && brig_cgroup_self_join_open(&cgroup, paused, &self, err) < 0) {
        leave_for_children(back);
        return -1;
    }
    bool joins = self.n > 0 || self.clone_fd >= 0;
    pid_t child = clone_child(placed ? cg : self.clone_fd, &placed, &joins, &self);
    /* Not cloned into it nor joining by itself: the runtime places the
     * child before it does anything (its children inherit that); into a
     * frozen one only where the freezer doesn't act, and wholly once it
     * is set up (below). */
    bool place_now = managed == 0 && !placed && !joins;
    if (child == 0) {
        close(sync_fd);
        exec_child(x, &join, &self, direct, place_now, child_fd);
    }
    brig_cgroup_self_join_close(&self);
    int saved = errno;
    leave_for_children(back);
    /* Our copy of the child's end goes now, so that a child that dies
     * shows as EPIPE; the namespace fds were only for the child. */
    close(brig_steal_fd(child_fd));
    brig_ns_join_close(&join);
    if (child < 0)
        return brig_error_set(err, saved, "clone");
    int master = -1;
    *pid = direct ? child : 0;
    int r = place_now ? place_child(&cgroup, child, paused, sync_fd, err) : 0;
    if (r == 0)
        r = drive_exec(x, sync_fd, child, pid, &master, err);
    if (r == 0 && (place_now || joins) && paused && *pid > 0)
        r = join_frozen(&cgroup, *pid, err);
    if (r == 0 && master >= 0 && o->console_socket)
        r = brig_terminal_send_to_socket(o->console_socket, master, err);
    if (r == 0 && master >= 0 && o->pty_master)
        *o->pty_master = brig_steal_fd(master);
    if (master >= 0)
        close(master);
    if (r < 0) {
        if (*pid > 0)
            kill(*pid, SIGKILL);
        kill(child, SIGKILL);
        waitpid(child, NULL, WNOHANG);
    }
    return r;
}

/* A handler's container: whatever the caller asked for, the process that
 * enters it is what the handler allows (its user, capabilities, filter,
 * limits, environment). *out stays NULL for other containers. */
static int impose_handler(int dir_fd, const struct brig_handler *h, const struct brig_spec *spec,
                          const struct brig_process *asked, struct brig_process **out,
                          brig_error_t *err)
{
    *out = NULL;
    if (h == NULL || h->exec_process == NULL)
        return 0;
    if (spec == NULL)
        return brig_error_set(err, 0, "exec: the container's config is gone from its state dir");
    if (brig_process_copy(asked, out, err) < 0)
        return -1;
    if (h->exec_process(dir_fd, spec, *out, err) < 0)
        return brig_error_wrap(err, "exec: %s", h->name);
    return 0;
}

int brig_container_exec(const struct brig_exec_options *o, pid_t *pid, brig_error_t *err)
{
    if (o->process == NULL || o->process->args.n == 0)
        return brig_error_set(err, 0, "exec: no command to run");
    if (o->process->terminal && !o->console_socket && !o->pty_master)
        return brig_error_set(err, 0, "exec: the process has a terminal, and nobody takes it");
    if (!o->process->terminal && o->console_socket)
        return brig_error_set(err, 0, "exec: a console socket needs a process with a terminal");
    cleanup_close int root_fd = -1;
    cleanup_close int own_dir_fd = -1;
    cleanup_state struct brig_state *own_st = NULL;
    if (o->opened == NULL
        && (own_dir_fd = brig_container_open(o->root, o->id, &root_fd, &own_st, err)) < 0)
        return -1;
    int dir_fd = o->opened ? o->opened->dir_fd : own_dir_fd;
    struct brig_state *st = o->opened ? o->opened->state : own_st;
    /* The container's cgroup, opened once for the freezer's word and the
     * join (the status opens it itself where it could not be opened). */
    cleanup_cgroup struct brig_cgroup top = BRIG_CGROUP_INIT;
    brig_error_t ignored = NULL;
    if (*st->cgroup_path && st->pid > 0 && brig_cgroup_open(st->cgroup_path, &top, &ignored) < 0) {
        brig_error_release(&ignored);
        brig_cgroup_close(&top); /* backend NULL: not opened */
    }
    enum brig_status status = brig_state_status_in(dir_fd, st, top.backend ? &top : NULL);
    int r = 0;
    if (status == BRIG_STATUS_STOPPED || status == BRIG_STATUS_CREATING)
        r = brig_error_kind(err, ESRCH, "cannot exec in container `%s`: it is %s", o->id,
                            brig_status_name(status));
    else if (status == BRIG_STATUS_PAUSED && !o->ignore_paused) {
        r = brig_error_set(err, 0, "cannot exec in container `%s`: it is paused", o->id);
        (*err)->errnum = BRIG_E_STATE; /* the caller may offer to ignore that */
    }
    /* Every process of the container lives under its seccomp filter. */
    cleanup_spec struct brig_spec *loaded = NULL;
    const struct brig_spec *spec = o->spec;
    struct brig_process *imposed = NULL;
    struct exec_ctx x = { o, o->process, dir_fd, st, NULL, NULL };
    /* A handler's container: its filter and defaults come from the spec as
     * the library reads it back (the handler's transform applied), never
     * from one the caller hands in. */
    const struct brig_handler *h = NULL;
    if (r == 0 && brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, err) < 0)
        r = -1;
    if (r == 0 && (spec == NULL || (h && !o->spec_from_state))) {
        r = brig_container_load_spec_for(dir_fd, h, &loaded, err);
        spec = loaded;
    }
    if (r == 0)
        r = impose_handler(dir_fd, h, spec, o->process, &imposed, err);
    if (imposed)
        x.process = imposed;
    if (r == 0 && spec && spec->linux_ && spec->linux_->seccomp) {
        x.seccomp = spec->linux_->seccomp;
        /* The state root keeps the programs compiled (seccomp.h). */
        cleanup_close int cache = openat(dir_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = brig_seccomp_compile_cached(x.seccomp, cache, &x.filter, err);
    }
    if (r == 0)
        r = spawn(&x, status == BRIG_STATUS_PAUSED, &top, pid, err);
    brig_seccomp_free(x.filter);
    brig_process_free(imposed);
    return r;
}
