/* Small file and process helpers shared by the library. */
#ifndef BRIG_UTILS_H
#define BRIG_UTILS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"

/* Reads a whole file; *out is NUL-terminated, caller frees. */
int brig_read_file(const char *path, char **out, size_t *len, brig_error_t *err);
int brig_read_file_at(int dirfd, const char *name, char **out, size_t *len, brig_error_t *err);

/* Writes data to an existing file (procfs, sysfs, cgroupfs): one write. */
int brig_write_file(const char *path, const char *data, size_t len, brig_error_t *err);

/* Writes a file atomically: a temp file in the same dir, then rename. */
int brig_write_file_atomic_at(int dirfd, const char *name, const char *data, size_t len,
                              mode_t mode, brig_error_t *err);

/* Writes a file that must not exist yet, in place: for a directory nobody
 * else reads until its owner says so (a state dir under its create lock). */
int brig_write_file_new_at(int dirfd, const char *name, const char *data, size_t len, mode_t mode,
                           brig_error_t *err);

/* Writes a pid file atomically (--pid-file of create, run, exec). */
int brig_write_pid_file(const char *path, pid_t pid, brig_error_t *err);

/* Writes all of buf, retrying on EINTR and short writes. */
int brig_write_all(int fd, const void *buf, size_t len);

/* Reads up to len bytes, retrying on EINTR and short reads; returns bytes read. */
ssize_t brig_read_all(int fd, void *buf, size_t len);

/* Removes a directory tree below dirfd/name (no symlinks followed). */
/* fn on each line of a copy of `text` (NULL: no lines; empty lines
 * skipped, but counted), with its number in the text from 1, until one
 * returns non-zero: that value; 0 at the end; -1 on ENOMEM. */
int brig_each_line(const char *text, int (*fn)(char *line, unsigned lineno, void *ctx), void *ctx);

int brig_remove_tree_at(int dirfd, const char *name, brig_error_t *err);

/* Start time of a process in clock ticks since boot (field 22 of
 * /proc/PID/stat), used to tell a process from a later one with the same pid. */
int brig_process_start_time(pid_t pid, unsigned long long *out, brig_error_t *err);

/* The same, with the process's state letter (field 3: R, S, Z...) from the
 * same read; state may be NULL. */
int brig_process_stat(pid_t pid, char *state, unsigned long long *start, brig_error_t *err);

/* The user name and home directory of `uid` in a passwd file, read by
 * hand: no NSS, so a static brig can do it, and inside a container only the
 * container's own file counts. -1 when the uid has no entry. name or home
 * may be NULL. */
int brig_passwd_lookup(const char *path, uid_t uid, char *name, size_t name_size, char *home,
                       size_t home_size);

/* A duration as people write one: "500ms", "5s" or "5", "2m", "1h" →
 * milliseconds, 1 ms to 24 days; -1 when malformed or out of range. */
int brig_parse_duration_ms(const char *text, int *out);

/* CLOCK_MONOTONIC `ms` milliseconds from now, and the milliseconds from
 * now until such a time (0 once it passed), for poll's timeouts. */
void brig_deadline_in(struct timespec *t, int ms);
int brig_ms_until(const struct timespec *t);

/* Closes every fd from first_fd up but the n in keep (at most 16): what
 * a process that enters a container inherited from the runtime (state
 * and cgroup directories), or a child of a server (its clients'
 * connections), must not keep. close_range(2) where the kernel has it. */
void brig_close_fds_except(int first_fd, const int *keep, size_t n);

/* The executable `name` in a dir of $PATH (/usr/bin:/bin without one),
 * else in one of `also` (NULL-terminated, or NULL): its path, malloc'd;
 * NULL when there is none. */
char *brig_find_program(const char *name, const char *const *also);

/* A regular file this process may execute; false with errno set
 * (EACCES for anything but a regular file). */
bool brig_is_executable_file(const char *path);

/* PATH when a process's environment has none. */
#define BRIG_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* `name` looked up in `path` (a PATH value; NULL: BRIG_DEFAULT_PATH) as
 * execvp does, empty entries skipped: true with the first directory's
 * executable regular file in out. */
bool brig_find_in_path(const char *name, const char *path, char *out, size_t size);

/* A program that can't be executed (errno e), in the words Go's runtime
 * would use: Docker and containerd look for "no such file or directory"
 * and "permission denied" in a runtime's error to exit 127 or 126, as
 * runc's say them. Returns -1. */
int brig_exec_failure(const char *path, int e, brig_error_t *err);

#endif
