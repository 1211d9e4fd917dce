/* What task.c, stdio.c and reaper.c share; not for the protocol side. */
#ifndef SHIM_CORE_H
#define SHIM_CORE_H

#include <stdbool.h>
#include <sys/types.h>

#include "loop.h"
#include "task.h"

/* ---- stdio.c: one process's stdio, copied in the loop ---- */

struct shim_io;

/* Opens the fifos named in paths (stdin read-only, stdout and stderr
 * read-write so a departed reader never makes the copy fail with EPIPE)
 * and, without a terminal, the pipes the process gets as fds 0-2. */
int shim_io_new(struct shim_loop *loop, const struct shim_stdio *paths, struct shim_io **out,
                brig_error_t *err);
/* The fds the process gets as 0, 1, 2 (pipe ends or /dev/null). */
void shim_io_child_fds(const struct shim_io *io, int fds[3]);
/* After the spawn: the shim's copies of the child's ends are closed (so
 * the copies see EOF when the process and its children are gone), and the
 * copying starts. master is the pty master with a terminal, else -1; the
 * io takes it. */
int shim_io_attach(struct shim_io *io, int master, brig_error_t *err);
/* Copies whatever is readable now, without waiting: called before an exit
 * is reported, so the output is in the fifos when Wait returns. */
void shim_io_drain(struct shim_io *io);
/* CloseIO: what stdin's fifo holds still goes in, then the process sees
 * end of file (a terminal: stdin is no longer copied). */
void shim_io_close_stdin(struct shim_io *io);
int shim_io_resize(struct shim_io *io, unsigned width, unsigned height, brig_error_t *err);
void shim_io_free(struct shim_io *io);

/* ---- reaper.c: exits and OOM kills ---- */

struct shim_reaper;
typedef void (*shim_reaped_cb)(void *data, pid_t pid, int wait_status);

/* Makes this process the subreaper of everything it starts and watches
 * SIGCHLD with a signalfd: every child that ends is reaped and passed to
 * cb (unknown ones too; the callee ignores them). Blocks SIGCHLD, and
 * SIGPIPE so a copy to a closed pipe fails with EPIPE instead; the library
 * clears the mask in the processes it starts. */
int shim_reaper_new(struct shim_loop *loop, shim_reaped_cb cb, void *data, struct shim_reaper **out,
                    brig_error_t *err);
/* Reaps what has ended now (also called after operations that may have
 * made zombies, so their exits are not held back until the next signal). */
void shim_reaper_poll(struct shim_reaper *r);
void shim_reaper_free(struct shim_reaper *r);

/* OOM: each watched cgroup's OOM notification (brig_cgroup_oom_watch) in
 * the loop. */
struct shim_oom;
typedef void (*shim_oom_fire_cb)(void *data, void *key);
int shim_oom_new(struct shim_loop *loop, shim_oom_fire_cb cb, void *data, struct shim_oom **out,
                 brig_error_t *err);
/* Watches the cgroup the state file recorded as cgroup_path (v1 or v2);
 * cb(data, key) when its OOM kill count rises. */
int shim_oom_watch(struct shim_oom *o, const char *cgroup_path, void *key, brig_error_t *err);
/* A last look at key's count, now, for a container whose init has just
 * died: cb(data, key) when a kill was counted that no notification or
 * recheck has told yet. */
void shim_oom_settle(struct shim_oom *o, void *key);
void shim_oom_unwatch(struct shim_oom *o, void *key);
void shim_oom_free(struct shim_oom *o);

/* ---- rootfs.c ---- */

/* Mounts each of mounts on <bundle>/rootfs (made if missing) and sets
 * *rootfs to that path; on failure nothing stays mounted. */
int shim_rootfs_mount(const char *bundle, const struct shim_mount *mounts, size_t n, char **rootfs,
                      brig_error_t *err);
void shim_rootfs_unmount(const char *rootfs);

/* 128+signal for a signal death, as shells and containerd report it. */
uint32_t shim_exit_code(int wait_status);

#endif
