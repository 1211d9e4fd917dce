/* The shim's containers and exec processes, driven through libcontainer.
 *
 * Notes for the protocol side (changes from the contract's sketch):
 *  - Error codes: every function returns 0 or one of the negative
 *    SHIM_E_* codes below, and fills *err with the message. service.c maps
 *    them to gRPC codes: SHIM_E_NOT_FOUND → NotFound (5), SHIM_E_EXISTS →
 *    AlreadyExists (6), SHIM_E_PRECONDITION → FailedPrecondition (9),
 *    SHIM_E_INVALID → InvalidArgument (3), SHIM_E_UNKNOWN → Unknown (2).
 *    (errnum in *err stays the errno of the root cause, if any.)
 *  - exec_id NULL or "" means the init process everywhere.
 *  - shim_task_exec takes the runtime-spec Process as JSON (the Any's value
 *    from ExecProcessRequest.spec); shim_task_update takes LinuxResources
 *    as JSON (UpdateTaskRequest.resources' value).
 *  - shim_state also carries the bundle and the exec id.
 *  - struct shim_stats is the cgroup v2 numbers (cgroup.h's struct, below).
 *  - shim_tasks_count() tells Shutdown whether tasks are left;
 *    shim_tasks_free() for the end.
 *  - Strings passed in are copied; strings handed out (shim_exit.id,
 *    shim_state.io, .bundle) stay valid until the process is deleted, or
 *    for the duration of the callback; those of Delete's *out until the
 *    next Delete.
 *  - shim_tasks_set_cgroups(t, false): containers without a cgroup of
 *    their own (brig's --cgroup-manager=disabled), for hosts without
 *    cgroup v2; pause, update and stats then fail.
 */
#ifndef SHIM_TASK_H
#define SHIM_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cgroup/cgroup.h"
#include "base/error.h"
#include "loop.h"

enum shim_code {
    SHIM_E_UNKNOWN = -1,
    SHIM_E_NOT_FOUND = -2,
    SHIM_E_EXISTS = -3,
    SHIM_E_PRECONDITION = -4,
    SHIM_E_INVALID = -5,
};

/* Same order as containerd's task.Status enum (UNKNOWN=0 .. PAUSING=5). */
enum shim_status {
    SHIM_UNKNOWN,
    SHIM_CREATED,
    SHIM_RUNNING,
    SHIM_STOPPED,
    SHIM_PAUSED,
    SHIM_PAUSING
};

struct shim_mount {
    const char *type, *source, *target;
    const char **options;
    size_t n_options;
};

/* Paths of containerd's fifos ("" or NULL: none); terminal asks for a pty
 * whose output goes to stdout_path. */
struct shim_stdio {
    const char *stdin_path, *stdout_path, *stderr_path;
    bool terminal;
};

struct shim_create_opts {
    const char *id, *bundle;
    struct shim_stdio io;
    const struct shim_mount *mounts; /* the rootfs: mounted on <bundle>/rootfs */
    size_t n_mounts;
    const char *profile; /* NULL or "sandbox" */
    bool systemd_cgroup; /* the cgroup through systemd (SystemdCgroup) */
    bool userns_host;    /* the sandbox profile without a user namespace */
    /* The images of a checkpoint (containerd unpacked them): the task is
     * restored from them at start, not created; NULL: a new one. */
    const char *checkpoint;
};

struct shim_exit {
    const char *id, *exec_id; /* exec_id "" for the init */
    pid_t pid;
    uint32_t status; /* exit code, or 128+signal */
    struct timespec exited_at;
};

struct shim_state {
    enum shim_status status;
    pid_t pid;
    const char *exec_id; /* "" for the init */
    const char *bundle;
    struct shim_stdio io;
    uint32_t exit_status;
    struct timespec exited_at; /* zero until it has exited */
};

struct shim_stats {
    struct brig_cgroup_stats cg;
};

struct shim_tasks;
typedef void (*shim_exit_cb)(void *data, const struct shim_exit *exit);
typedef void (*shim_oom_cb)(void *data, const char *id);

/* runtime_root: libcontainer's state root for this shim's containers
 * (e.g. /run/containerd/brig/<ns>); ns is the containerd namespace.
 * on_exit is called exactly once per process that exits (init or exec),
 * after its status is recorded (State/Wait see it); on_oom when the
 * container's cgroup counts a new OOM kill. */
int shim_tasks_new(struct shim_loop *loop, const char *ns, const char *runtime_root,
                   shim_exit_cb on_exit, shim_oom_cb on_oom, void *data, struct shim_tasks **out,
                   brig_error_t *err);
void shim_tasks_set_cgroups(struct shim_tasks *t, bool managed);
size_t shim_tasks_count(const struct shim_tasks *t);
void shim_tasks_free(struct shim_tasks *t);

int shim_task_create(struct shim_tasks *t, const struct shim_create_opts *o, pid_t *pid,
                     brig_error_t *err);
int shim_task_start(struct shim_tasks *t, const char *id, const char *exec_id, pid_t *pid,
                    brig_error_t *err);
/* Deleting the init removes the container (and unmounts the rootfs);
 * a process that hasn't exited is SHIM_E_PRECONDITION. */
int shim_task_delete(struct shim_tasks *t, const char *id, const char *exec_id,
                     struct shim_exit *out, brig_error_t *err);
int shim_task_exec(struct shim_tasks *t, const char *id, const char *exec_id,
                   const char *process_json, size_t len, const struct shim_stdio *io,
                   brig_error_t *err);
int shim_task_kill(struct shim_tasks *t, const char *id, const char *exec_id, int sig, bool all,
                   brig_error_t *err);
int shim_task_pids(struct shim_tasks *t, const char *id, pid_t **pids, size_t *n,
                   brig_error_t *err);
int shim_task_pause(struct shim_tasks *t, const char *id, brig_error_t *err);
int shim_task_resume(struct shim_tasks *t, const char *id, brig_error_t *err);
int shim_task_resize_pty(struct shim_tasks *t, const char *id, const char *exec_id, uint32_t width,
                         uint32_t height, brig_error_t *err);
int shim_task_close_io(struct shim_tasks *t, const char *id, const char *exec_id, bool close_stdin,
                       brig_error_t *err);
int shim_task_update(struct shim_tasks *t, const char *id, const char *resources_json, size_t len,
                     brig_error_t *err);
int shim_task_state(struct shim_tasks *t, const char *id, const char *exec_id,
                    struct shim_state *out, brig_error_t *err);
int shim_task_stats(struct shim_tasks *t, const char *id, struct shim_stats *out,
                    brig_error_t *err);

/* Checkpoint: criu dumps the container's processes into image_path (the
 * call blocks the shim for the dump's duration; the loop runs nothing
 * meanwhile). Without exit the container keeps running, in the state it
 * was in (paused stays paused); with exit its processes are killed after
 * the dump and the init's exit is reported as any other. */
struct shim_checkpoint_opts {
    const char *image_path;   /* required */
    const char *work_path;    /* criu's log and scratch; NULL: image_path */
    const char *cgroups_mode; /* NULL or "": criu's "soft" */
    bool exit, open_tcp, external_unix_sockets, file_locks;
};
int shim_task_checkpoint(struct shim_tasks *t, const char *id, const struct shim_checkpoint_opts *o,
                         brig_error_t *err);

/* Wait: calls cb at once (before returning) if the process has exited,
 * else once when it exits (after on_exit), or when it is deleted without
 * having exited (with Delete's answer). */
typedef void (*shim_wait_cb)(void *data, const struct shim_exit *exit);
int shim_task_wait(struct shim_tasks *t, const char *id, const char *exec_id, shim_wait_cb cb,
                   void *data, brig_error_t *err);

#endif
