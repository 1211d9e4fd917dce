#define _GNU_SOURCE
#include "process/process.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/sched.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "cgroup/cgroup.h"
#include "process/namespaces.h"
#include "process/sysctl.h"
#include "rootfs/plan.h"
#include "selfexe/selfexe.h"
#include "process/sync.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* fork() with namespace flags: the raw syscall, because glibc's clone()
 * wants a separate stack and we want fork semantics (copy of our memory). */
pid_t brig_clone_fork(unsigned long flags)
{
    return (pid_t) syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* clone3 straight into the container's cgroup: the child never runs a
 * single instruction outside it, and no cgroup.procs write is needed.
 * Returns -1 with errno when the kernel can't. */
pid_t brig_clone_into_cgroup(unsigned long flags, int cgroup_fd)
{
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = flags | CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t) cgroup_fd;
    return (pid_t) syscall(SYS_clone3, &args, sizeof args);
}

int brig_process_clone_flags(const struct brig_spec *spec)
{
    return brig_ns_new_flags(spec) & ~CLONE_NEWCGROUP;
}

/* A joined network namespace's sysctls, written while this process still
 * has the host's privileges over it (sysctl.h). */
static int net_sysctls(void *arg, brig_error_t *err)
{
    const struct brig_spec *spec = arg;
    if (!brig_sysctl_net_early(spec))
        return 0;
    return brig_sysctl_apply_part(&spec->linux_->sysctl, BRIG_SYSCTL_NET, err);
}

/* The two-step path: a "joiner" child enters namespaces by path and creates
 * the rest with unshare(). The pid and time namespaces only apply to
 * children, so when either changes, the joiner forks the real init. */
static int joiner_enter(const struct brig_init_config *cfg, const struct brig_ns_join *join,
                        int sync_fd, brig_error_t *err)
{
    const int later = CLONE_NEWPID | CLONE_NEWTIME;
    int flags = brig_process_clone_flags(cfg->spec);
    struct brig_sync_msg *msg = malloc(sizeof *msg);
    if (msg == NULL)
        return brig_error_set(err, ENOMEM, "spawn init");

    int r = brig_ns_join_all(join, net_sysctls, (void *) cfg->spec, err);
    if (r == 0 && (flags & ~later) && unshare(flags & ~later) < 0)
        r = brig_error_set(err, errno, "create namespaces");
    if (r == 0 && (flags & CLONE_NEWUSER)) {
        r = brig_sync_send(sync_fd, BRIG_SYNC_USERNS_READY, 0, NULL, err);
        if (r == 0)
            r = brig_sync_expect(sync_fd, BRIG_SYNC_MAPS_DONE, msg, err);
        if (r == 0 && setresgid(0, 0, 0) < 0 && errno != EINVAL)
            r = brig_error_set(err, errno, "become root in the user namespace");
        if (r == 0 && setresuid(0, 0, 0) < 0 && errno != EINVAL)
            r = brig_error_set(err, errno, "become root in the user namespace");
    }
    free(msg);
    if (r < 0)
        return -1;

    bool new_child = (flags & later) || join->fd[BRIG_NS_PID] >= 0 || join->fd[BRIG_NS_TIME] >= 0;
    if (!new_child)
        return brig_sync_send(sync_fd, BRIG_SYNC_INIT_PID, getpid(), NULL, err);
    if ((flags & later) && unshare(flags & later) < 0)
        return brig_error_set(err, errno, "create pid/time namespace");
    if ((flags & CLONE_NEWTIME) && brig_ns_write_time_offsets(cfg->spec->linux_, err) < 0)
        return -1;
    pid_t init = brig_clone_fork(0);
    if (init < 0)
        return brig_error_set(err, errno, "fork init");
    if (init == 0)
        return 0;
    /* The joiner's work is done: report the init and leave. */
    if (brig_sync_send(sync_fd, BRIG_SYNC_INIT_PID, init, NULL, err) < 0)
        _exit(1);
    _exit(0);
}

/* Written while the child is still the host's root in the host's
 * namespaces: in a user namespace, /proc/self of a process that is not
 * dumpable belongs to an id the namespace doesn't map. Its children
 * inherit it. */
static int set_oom_score_adj(const struct brig_process *p, brig_error_t *err)
{
    if (p == NULL || !p->has_oom_score_adj)
        return 0;
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", p->oom_score_adj);
    if (brig_write_file("/proc/self/oom_score_adj", buf, (size_t) n, err) < 0)
        return brig_error_wrap(err, "set oomScoreAdj");
    return 0;
}

static __attribute__((noreturn)) void child_main(const struct brig_init_config *cfg,
                                                 const struct brig_ns_join *join, bool two_step,
                                                 bool wait_cgroup, bool guard_self, int sync_fd,
                                                 int fifo_fd)
{
    brig_error_t err = NULL;
    /* Until execve replaces it, this process is the brig binary inside the
     * container's namespaces: not dumpable, its /proc entries (exe, fds,
     * mem) and ptrace are out of the container's reach. execve makes the
     * container's own program dumpable again. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* The first process of a new pid namespace, which nothing in the
     * container can see yet: it moves onto the read-only view of brig's
     * file itself (the runtime deferred it), before anything else. Our
     * copy of the runtime's image has no code pages mapped yet, so the
     * move costs little here. */
    int r = guard_self ? brig_selfexe_rebind(brig_selfexe_deferred_fd(), &err) : 0;
    if (r == 0 && cfg->self_join && brig_cgroup_self_join(cfg->self_join) < 0)
        r = brig_error_set(&err, errno, "join the container's cgroup");
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    /* The state dir is flock'ed by the runtime; our inherited copy would keep
     * the lock until exec and deadlock `start`. */
    close(cfg->state_dir_fd);
    if (r == 0 && cfg->stdio)
        r = brig_process_take_stdio(cfg->stdio, &err);
    if (r == 0)
        r = set_oom_score_adj(cfg->spec->process, &err);
    /* Only what the init needs crosses into the container: the sync and
     * fifo fds, the namespaces to join, the bind sources the runtime
     * opened. */
    size_t n_steps = cfg->rootfs_plan ? cfg->rootfs_plan->n_steps : 0;
    int *keep = calloc(2 + BRIG_NS_COUNT + n_steps, sizeof *keep);
    if (keep == NULL)
        _exit(1);
    keep[0] = sync_fd;
    keep[1] = fifo_fd;
    for (int t = 0; t < BRIG_NS_COUNT; t++)
        keep[2 + t] = join->fd[t];
    size_t n_keep = 2 + BRIG_NS_COUNT
                    + brig_rootfs_source_fds(cfg->rootfs_plan, keep + 2 + BRIG_NS_COUNT);
    brig_close_fds_except(3 + cfg->listen_fds + cfg->preserve_fds, keep, n_keep);
    free(keep);

    int flags = brig_process_clone_flags(cfg->spec);
    if (r == 0 && wait_cgroup) {
        struct brig_sync_msg *msg = malloc(sizeof *msg);
        r = msg ? brig_sync_expect(sync_fd, BRIG_SYNC_CGROUP_DONE, msg, &err)
                : brig_error_set(&err, ENOMEM, "spawn init");
        free(msg);
    }
    if (r < 0) {
        /* reported below */
    } else if (two_step) {
        r = joiner_enter(cfg, join, sync_fd, &err);
    } else if (flags & CLONE_NEWUSER) {
        struct brig_sync_msg *msg = malloc(sizeof *msg);
        r = msg ? brig_sync_send(sync_fd, BRIG_SYNC_USERNS_READY, 0, NULL, &err)
                : brig_error_set(&err, ENOMEM, "spawn init");
        if (r == 0)
            r = brig_sync_expect(sync_fd, BRIG_SYNC_MAPS_DONE, msg, &err);
        free(msg);
    }
    if (r == 0) {
        struct brig_ns_join closed = *join;
        brig_ns_join_close(&closed);
        brig_init_exec(cfg, sync_fd, fifo_fd, &err);
    }
    brig_sync_report_error(sync_fd, err);
    _exit(1);
}

static void kill_and_reap(pid_t child, pid_t init)
{
    if (init > 0 && init != child)
        kill(init, SIGKILL);
    if (child > 0) {
        kill(child, SIGKILL);
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
    }
}

/* Old kernels and v1 hierarchies: the runtime moves the child, which
 * waits until it's done. */
static int place_in_cgroup(const struct brig_init_config *cfg, pid_t child, int sync_fd,
                           brig_error_t *err)
{
    if (cfg->cgroup_fd < 0) {
        if (cfg->place_in_cgroup(cfg->ctx, child, err) < 0)
            return brig_error_wrap(err, "move container init into its cgroup");
        return brig_sync_send(sync_fd, BRIG_SYNC_CGROUP_DONE, 0, NULL, err);
    }
    cleanup_close int procs = openat(cfg->cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", child);
    if (procs < 0 || write(procs, buf, (size_t) n) != n)
        return brig_error_set(err, errno, "move container init into its cgroup");
    return brig_sync_send(sync_fd, BRIG_SYNC_CGROUP_DONE, 0, NULL, err);
}

/* The runtime's answers to the init's messages (brig_sync_drive). */
static int init_userns_ready(void *ctx, struct brig_sync_peer *peer, brig_error_t *err)
{
    const struct brig_init_config *cfg = ctx;
    if (brig_ns_write_id_maps(peer->child, cfg->spec->linux_, err) < 0)
        return -1;
    return brig_sync_send(peer->fd, BRIG_SYNC_MAPS_DONE, 0, NULL, err);
}

static int init_runtime_hooks(void *ctx, struct brig_sync_peer *peer, brig_error_t *err)
{
    const struct brig_init_config *cfg = ctx;
    cleanup_free char *state_json = NULL;
    if (brig_sync_peer_pid(peer, err) < 0
        || cfg->runtime_hooks(cfg->ctx, peer->pid, &state_json, err) < 0)
        return -1;
    return brig_sync_send(peer->fd, BRIG_SYNC_HOOKS_DONE, 0, state_json, err);
}

static int init_seccomp_fd(void *ctx, struct brig_sync_peer *peer, int notify_fd, brig_error_t *err)
{
    const struct brig_init_config *cfg = ctx;
    return cfg->seccomp_listener(cfg->ctx, peer->pid, notify_fd, err);
}

static const struct brig_sync_handlers init_handlers = {
    .what = "spawn init",
    .gone = "container init exited before it was ready",
    .userns_ready = init_userns_ready,
    .runtime_hooks = init_runtime_hooks,
    .seccomp_fd = init_seccomp_fd,
};

int brig_process_spawn_init(const struct brig_init_config *cfg, pid_t *init_pid, int *pty_master,
                            brig_error_t *err)
{
    *pty_master = -1;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return brig_error_set(err, errno, "create sync socket");
    cleanup_close int sync_fd = pair[0];
    cleanup_close int child_fd = pair[1];
    int fifo_fd = cfg->exec_fifo_fd; /* the caller's */

    cleanup_ns_join struct brig_ns_join join = BRIG_NS_JOIN_NONE;
    if (brig_ns_open_paths(cfg->spec, &join, err) < 0)
        return -1;
    int flags = brig_process_clone_flags(cfg->spec);
    /* One clone does it all unless a namespace is joined by path (the user
     * namespace must be entered before others are created) or a time
     * namespace is asked for (clone() can't create one). */
    bool two_step = join.any || (flags & CLONE_NEWTIME);

    unsigned long clone_flags = two_step ? 0 : (unsigned long) flags;
    /* A guard of brig's file left for later (brig_selfexe_defer) is made by
     * an init that is born alone in a new pid namespace; in any other case
     * by us, now, before anything enters. */
    bool guard_self = brig_selfexe_deferred_fd() >= 0 && !two_step && (flags & CLONE_NEWPID);
    if (!guard_self && brig_selfexe_finish(err) < 0)
        return -1;
    bool wait_cgroup = cfg->cgroup_fd < 0 && cfg->place_in_cgroup != NULL;
    pid_t child = -1;
    if (cfg->cgroup_fd >= 0) {
        child = brig_clone_into_cgroup(clone_flags, cfg->cgroup_fd);
        wait_cgroup = child < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL);
    }
    if (cfg->cgroup_fd < 0 || wait_cgroup)
        child = brig_clone_fork(clone_flags);
    if (child < 0)
        return brig_error_set(err, errno, "clone container init");
    if (child == 0) {
        close(sync_fd);
        child_main(cfg, &join, two_step, wait_cgroup, guard_self, child_fd, fifo_fd);
    }
    brig_ns_join_close(&join);
    close(brig_steal_fd(child_fd));
    if ((wait_cgroup && place_in_cgroup(cfg, child, sync_fd, err) < 0)
        || (cfg->after_clone && cfg->after_clone(cfg->ctx, err) < 0)) {
        kill_and_reap(child, 0);
        return -1;
    }

    /* The handlers only read cfg: the cast is for the generic ctx. */
    struct brig_sync_peer peer = { sync_fd, child, two_step ? 0 : child, -1 };
    if (brig_sync_drive(&peer, &init_handlers, (void *) cfg, err) < 0) {
        kill_and_reap(child, peer.pid);
        if (peer.pty_master >= 0)
            close(peer.pty_master);
        return -1;
    }
    *init_pid = peer.pid;
    *pty_master = peer.pty_master;
    return 0;
}
