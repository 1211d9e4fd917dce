/* Spawning the container's init: clone into the namespaces, drive the sync
 * protocol, and leave the init blocked on the exec fifo. */
#ifndef BRIG_PROCESS_H
#define BRIG_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

struct brig_rootfs_plan;
struct brig_cgroup_self_join;

struct brig_init_config {
    const struct brig_spec *spec;
    /* Built and checked by the runtime from spec (rootfs/plan.h); the init,
     * a copy of the runtime's memory, only walks its steps. */
    const struct brig_rootfs_plan *rootfs_plan;
    const char *id;
    const char *bundle; /* absolute */
    int state_dir_fd;   /* locked by the runtime, so the child closes it */
    int exec_fifo_fd;   /* O_PATH of the fifo the init blocks on until start */
    bool no_new_keyring;
    int listen_fds;   /* LISTEN_FDS: fds 3 .. 3+L-1, announced in the env */
    int preserve_fds; /* then P more fds pass through to the process */
    int cgroup_fd;    /* the container's cgroup dir, or -1 */
    /* Where cgroup_fd is -1 and this is set, the runtime places the init
     * in its cgroup (v1 hierarchies) before the init does anything. */
    int (*place_in_cgroup)(void *ctx, pid_t init_pid, brig_error_t *err);
    /* v1 hierarchies the init enters by itself, first thing
     * (cgroup.h: brig_cgroup_self_join); cgroup_fd is then the hybrid
     * host's v2 directory, or -1. NULL: none. Only for an init that starts
     * in the runtime's user namespace. */
    const struct brig_cgroup_self_join *self_join;
    const int *stdio;                    /* the process's fds 0, 1, 2; NULL: the runtime's own */
    struct brig_seccomp_filter *seccomp; /* compiled by the runtime, or NULL */
    /* Runs in the runtime right after the clone, while the init sets up;
     * done before the init is told to go past its mounts. May be NULL. */
    int (*after_clone)(void *ctx, brig_error_t *err);
    /* Runs prestart and createRuntime hooks once the init's mounts are in
     * place; hands back the state JSON that container-side hooks read. */
    int (*runtime_hooks)(void *ctx, pid_t init_pid, char **state_json, brig_error_t *err);
    /* Hands a seccomp notify fd to linux.seccomp.listenerPath. */
    int (*seccomp_listener)(void *ctx, pid_t init_pid, int notify_fd, brig_error_t *err);
    void *ctx;
};

/* Returns with the init blocked on the exec fifo and *init_pid set, or
 * kills whatever it started and fails. */
/* With process.terminal, *pty_master receives the terminal's master. */
int brig_process_spawn_init(const struct brig_init_config *cfg, pid_t *init_pid, int *pty_master,
                            brig_error_t *err);

/* The namespaces to create up front. The cgroup namespace is left to the
 * init, which unshares it once it is in the container's cgroup, so that
 * cgroup becomes its "/". */
int brig_process_clone_flags(const struct brig_spec *spec);

/* args[0] looked up in process.env's PATH, inside the container (call it
 * after pivot_root / setns into the mount namespace). Caller frees. */
int brig_process_find_executable(const struct brig_process *process, char **out, brig_error_t *err);
/* process.env plus HOME from the container's /etc/passwd when missing.
 * The strings are borrowed from process, except the added HOME. Two spare
 * NULL slots at the end let the caller add LISTEN_FDS/LISTEN_PID. */
char **brig_process_build_env(const struct brig_process *process);
/* Marks every fd from first_fd up close-on-exec. */
void brig_process_cloexec_from(int first_fd);
/* In a new process: the three fds given become its 0, 1 and 2. */
int brig_process_take_stdio(const int stdio[3], brig_error_t *err);

/* The last privileged steps of a container process: the identity of
 * process.user, capabilities and no_new_privs, and the seccomp filter.
 * Loading a filter needs CAP_SYS_ADMIN unless no_new_privs is set, so
 * without no_new_privs it is loaded before the capabilities go; with it,
 * after, as late as possible. A notify fd goes to the runtime on sync_fd. */
struct brig_seccomp_filter;
int brig_process_drop_and_filter(const struct brig_process *process,
                                 struct brig_seccomp_filter *filter, int sync_fd,
                                 brig_error_t *err);

/* What the init and an exec'd process do last, in this order: the
 * terminal, the working directory (tried as root, then again as the user,
 * so a directory only the user can enter still works), identity and
 * seccomp (brig_process_drop_and_filter), then the executable and the
 * environment for execve. */
int brig_process_become(const struct brig_process *process, struct brig_seccomp_filter *filter,
                        int sync_fd, char **exe, char ***env, brig_error_t *err);

/* fork() with CLONE_NEW* flags, and the same straight into a cgroup
 * (clone3 CLONE_INTO_CGROUP; -1 with errno when the kernel can't). */
pid_t brig_clone_fork(unsigned long flags);
pid_t brig_clone_into_cgroup(unsigned long flags, int cgroup_fd);

/* Runs in the init after it is in its namespaces: rootfs, identity, exec.
 * Returns only on failure. */
int brig_init_exec(const struct brig_init_config *cfg, int sync_fd, int fifo_fd, brig_error_t *err);

#endif
