/* Internal to the shim's task files (task.c, task_cgroup.c): the table of
 * containers and processes one shim keeps, and the lookups over it. */
#ifndef BRIG_SHIM_TASKS_H
#define BRIG_SHIM_TASKS_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "core.h"

struct waiter {
    struct waiter *next;
    shim_wait_cb cb;
    void *data;
};

struct proc {
    struct proc *next;
    struct ctr *c;
    char *exec_id; /* "" for the init */
    pid_t pid;
    bool started, exited, reported;
    uint32_t status;
    struct timespec exited_at;
    char *paths[3];
    bool terminal;
    struct shim_io *io;
    struct brig_process *spec; /* an exec's process, until it starts */
    struct waiter *waiters;
};

struct ctr {
    struct ctr *next;
    char *id, *bundle;
    char *rootfs;        /* mounted here from the Mount list; NULL if not */
    char *profile;       /* "sandbox" when the runtime options ask for it, else NULL */
    bool systemd_cgroup; /* SystemdCgroup in the runtime options */
    bool userns_host;    /* userns = "host" there: a sandboxed pod without one */
    char *checkpoint;    /* restored from these images at start; NULL: created */
    struct proc *procs;  /* the init first */
    bool paused;
    bool state_gone; /* a checkpoint with exit removed libcontainer's state */
};

struct shim_tasks {
    struct shim_loop *loop;
    char *ns, *root;
    shim_exit_cb on_exit;
    shim_oom_cb on_oom;
    void *data;
    struct ctr *ctrs;
    struct shim_reaper *reaper;
    struct shim_oom *oom;
    bool no_cgroup;
    /* The ids a Delete answers with, kept until the next Delete: the
     * process they belonged to is gone by the time the answer is encoded. */
    char *gone_id, *gone_exec_id;
};

/* Sets the message and returns the task API's code for it. */
int shim_fail(brig_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool shim_is_init(const char *exec_id);
struct ctr *shim_find_ctr(const struct shim_tasks *t, const char *id);
struct proc *shim_find_proc(const struct ctr *c, const char *exec_id);
/* The process, or SHIM_E_NOT_FOUND with the message containerd shows. */
int shim_lookup(const struct shim_tasks *t, const char *id, const char *exec_id, struct proc **out,
                brig_error_t *err);

#endif
