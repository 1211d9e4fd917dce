#define _GNU_SOURCE
/* The container's init, from "in its namespaces" to execve. The order of
 * the steps is the security argument, so it reads top to bottom in
 * brig_init_exec(): everything privileged happens before the identity
 * switch, and nothing from the host is reachable once pivot_root is done. */
#include "process/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "process/identity.h"
#include "base/cleanup.h"
#include "process/hooks.h"
#include "rootfs/plan.h"
#include "process/namespaces.h"
#include "process/netlink.h"
#include "process/sync.h"
#include "process/sysctl.h"
#include "process/terminal.h"
#include "base/utils.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#define KEYCTL_JOIN_SESSION_KEYRING 1

static bool spec_has_ns(const struct brig_spec *spec, enum brig_ns_type t)
{
    return brig_spec_namespace(spec, t) != NULL;
}

static bool spec_new_ns(const struct brig_spec *spec, enum brig_ns_type t)
{
    const struct brig_namespace *ns = brig_spec_namespace(spec, t);
    return ns != NULL && ns->path == NULL;
}

static int setup_uts(const struct brig_spec *spec, brig_error_t *err)
{
    if (spec->hostname == NULL && spec->domainname == NULL)
        return 0;
    if (!spec_has_ns(spec, BRIG_NS_UTS))
        return brig_error_set(err, 0, "config.json: hostname: needs a uts namespace of its own");
    if (spec->hostname && sethostname(spec->hostname, strlen(spec->hostname)) < 0)
        return brig_error_set(err, errno, "set hostname `%s`", spec->hostname);
    if (spec->domainname && setdomainname(spec->domainname, strlen(spec->domainname)) < 0)
        return brig_error_set(err, errno, "set domainname `%s`", spec->domainname);
    return 0;
}

static int run_create_container_hooks(const struct brig_hook_list *hooks, const char *rootfs,
                                      const char *state_json, brig_error_t *err)
{
    if (hooks->n == 0)
        return 0;
    cleanup_close int back = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (back < 0 || chdir(rootfs) < 0)
        return brig_error_set(err, errno, "createContainer hooks: chdir to `%s`", rootfs);
    int r = brig_hooks_run(hooks, "createContainer", state_json, err);
    if (fchdir(back) < 0 && r == 0)
        r = brig_error_set(err, errno, "createContainer hooks: chdir back");
    return r;
}

static int setup_rootfs(const struct brig_init_config *cfg, int sync_fd, char **state_json,
                        int *proc_fds, brig_error_t *err)
{
    const struct brig_spec *spec = cfg->spec;
    const struct brig_rootfs_plan *plan = cfg->rootfs_plan;
    if (plan == NULL)
        return brig_error_set(err, EINVAL, "init: no rootfs plan");
    bool own_root = !plan->chroot_only;
    if (!own_root) {
        /* Nothing mounts /proc in there: keep our fd table reachable for
         * reopening the exec fifo (close-on-exec, gone before the process
         * runs). */
        *proc_fds = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (*proc_fds < 0 || chroot(plan->rootfs) < 0 || chdir("/") < 0)
            return brig_error_set(err, errno, "chroot to `%s`", plan->rootfs);
    }
    /* Relative bind sources are relative to the bundle. In a user
     * namespace the bundle may be closed to the init (containerd 1.6 makes
     * a task's 0700): without such a source it needs no bundle, and "/"
     * rather than the runtime's directory is where nothing resolves. */
    if (own_root && chdir(cfg->bundle) < 0
        && (errno != EACCES || brig_rootfs_plan_needs_bundle(plan) || chdir("/") < 0))
        return brig_error_set(err, errno, "chdir to bundle `%s`", cfg->bundle);
    if (own_root && brig_rootfs_prepare(plan, err) < 0)
        return -1;

    /* The runtime's hooks run here, while we wait, and tell us the state
     * that ours get. Without any of these hooks, the round trip and the
     * state it carries are skipped. */
    const struct brig_hooks *h = &spec->hooks;
    if (h->prestart.n + h->create_runtime.n + h->create_container.n + h->start_container.n > 0) {
        cleanup_free struct brig_sync_msg *msg = malloc(sizeof *msg);
        if (msg == NULL)
            return brig_error_set(err, ENOMEM, "init");
        if (brig_sync_send(sync_fd, BRIG_SYNC_RUNTIME_HOOKS, 0, NULL, err) < 0
            || brig_sync_expect(sync_fd, BRIG_SYNC_HOOKS_DONE, msg, err) < 0)
            return -1;
        /* createContainer hooks: in the container's namespaces, before
         * pivot_root, as the runtime spec orders them; in the container's
         * root, as runc runs them (hooks that write relative paths). */
        if (run_create_container_hooks(&h->create_container, plan->rootfs, msg->payload, err) < 0)
            return -1;
        if ((*state_json = strdup(msg->payload)) == NULL)
            return brig_error_set(err, ENOMEM, "init");
    }

    if (own_root && brig_rootfs_pivot(plan, err) < 0)
        return -1;
    if (spec->linux_
        && brig_sysctl_apply_part(&spec->linux_->sysctl,
                                  brig_sysctl_net_early(spec) ? BRIG_SYSCTL_NOT_NET
                                                              : BRIG_SYSCTL_ALL,
                                  err)
               < 0)
        return -1;
    return own_root ? brig_rootfs_finish(plan, err) : 0;
}

static int setup_personality(const struct brig_spec *spec, brig_error_t *err)
{
    if (spec->linux_ == NULL || spec->linux_->personality == NULL)
        return 0;
    const char *domain = spec->linux_->personality->domain;
    unsigned long persona;
    if (domain == NULL || strcmp(domain, "LINUX") == 0)
        persona = PER_LINUX;
    else if (strcmp(domain, "LINUX32") == 0)
        persona = PER_LINUX32;
    else
        return brig_error_set(err, 0, "config.json: linux.personality.domain: unknown `%s`",
                              domain);
    if (personality(persona) < 0)
        return brig_error_set(err, errno, "set personality `%s`", domain);
    return 0;
}

static int setup_process_knobs(const struct brig_init_config *cfg, brig_error_t *err)
{
    const struct brig_process *p = cfg->spec->process;
    if (!cfg->no_new_keyring) {
        /* A fresh session keyring, so the container can't read the keys of
         * whoever started the runtime. Kernels without keys just lack it. */
        char name[1100];
        snprintf(name, sizeof name, "_ses.%s", cfg->id);
        if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, name) < 0 && errno != ENOSYS)
            return brig_error_set(err, errno, "join a new session keyring");
    }
    if (setup_personality(cfg->spec, err) < 0)
        return -1;
    /* oomScoreAdj was set before any namespace (spawn.c). */
    return brig_rlimits_apply(p, err);
}

static __attribute__((noreturn)) void die_after_ready(const char *what, brig_error_t err)
{
    dprintf(STDERR_FILENO, "brig: init: %s: %s\n", what, err ? err->msg : strerror(errno));
    _exit(127);
}

int brig_init_exec(const struct brig_init_config *cfg, int sync_fd, int fifo_fd, brig_error_t *err)
{
    const struct brig_spec *spec = cfg->spec;
    const struct brig_process *p = spec->process;

    if (setsid() < 0)
        return brig_error_set(err, errno, "setsid");
    /* Now that we are in the container's cgroup, a new cgroup namespace
     * makes that cgroup the container's "/". */
    if (spec_new_ns(spec, BRIG_NS_CGROUP)) {
        brig_rootfs_cgroup_keep_paths(cfg->rootfs_plan);
        if (unshare(CLONE_NEWCGROUP) < 0)
            return brig_error_set(err, errno, "create cgroup namespace");
    }
    if (spec_has_ns(spec, BRIG_NS_USER)) {
        if (setresgid(0, 0, 0) < 0 && errno != EINVAL)
            return brig_error_set(err, errno, "become root in the user namespace");
        if (setresuid(0, 0, 0) < 0 && errno != EINVAL)
            return brig_error_set(err, errno, "become root in the user namespace");
    }
    if (spec_new_ns(spec, BRIG_NS_NETWORK) && brig_netlink_loopback_up(err) < 0)
        return brig_error_wrap(err, "bring up loopback");
    cleanup_free char *state_json = NULL;
    cleanup_close int proc_fds = -1;
    if (setup_uts(spec, err) < 0 || setup_rootfs(cfg, sync_fd, &state_json, &proc_fds, err) < 0)
        return -1;
    if (setup_process_knobs(cfg, err) < 0)
        return -1;

    cleanup_free char *exe = NULL;
    char **env = NULL;
    if (brig_process_become(p, cfg->seccomp, sync_fd, &exe, &env, err) < 0)
        return -1;
    char fifo_path[64];
    snprintf(fifo_path, sizeof fifo_path, "%s%d", proc_fds < 0 ? "/proc/self/fd/" : "", fifo_fd);

    if (cfg->listen_fds > 0) {
        /* Socket activation, as systemd hands it over: the process sees its
         * own pid in LISTEN_PID. */
        size_t n = 0;
        while (env[n])
            n++;
        if (asprintf(&env[n], "LISTEN_FDS=%d", cfg->listen_fds) < 0
            || asprintf(&env[n + 1], "LISTEN_PID=%d", getpid()) < 0)
            return brig_error_set(err, ENOMEM, "environment");
    }
    brig_process_cloexec_from(3 + cfg->listen_fds + cfg->preserve_fds);
    if (brig_sync_send(sync_fd, BRIG_SYNC_READY, 0, NULL, err) < 0)
        return -1;
    close(sync_fd);

    /* Blocks until `start` opens the other end: the exec fifo model. What
     * we write tells `start` how it went: "0" for exec, or "E" and why. */
    int w = openat(proc_fds < 0 ? AT_FDCWD : proc_fds, fifo_path, O_WRONLY | O_CLOEXEC);
    if (w < 0)
        die_after_ready("open exec fifo", NULL);
    close(fifo_fd);
    if (brig_hooks_run(&spec->hooks.start_container, "startContainer", state_json, err) < 0) {
        dprintf(w, "E%s", (*err)->msg);
        _exit(1);
    }
    if (brig_write_all(w, "0", 1) < 0)
        die_after_ready("write exec fifo", NULL);
    close(w);
    execve(exe, p->args.v, env);
    die_after_ready(exe, NULL);
}
