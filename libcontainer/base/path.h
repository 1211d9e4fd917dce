/* Resolving untrusted paths inside a root directory.
 *
 * Every path that comes from a config or from a container is resolved with
 * the rootfs as "/": ".." stops at the root and a symlink is followed only as
 * if the rootfs were the whole filesystem, so nothing escapes it. */
#ifndef BRIG_PATH_H
#define BRIG_PATH_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

/* Lexically cleans a path: collapses "//", removes "." and resolves ".."
 * without going above "/" (or above the start of a relative path). Pure
 * function; caller frees. NULL only on out-of-memory. */
char *brig_path_clean(const char *path);

/* Opens `path` (absolute or relative, always taken relative to root_fd)
 * inside the tree at root_fd; `flags` are open(2) flags (O_PATH allowed).
 * Uses openat2(RESOLVE_IN_ROOT) where the kernel has it and a component-by-
 * component walk otherwise. Returns an fd or -1 with *err set. */
int brig_path_open_in_root(int root_fd, const char *path, int flags, mode_t mode,
                           brig_error_t *err);

/* The same lookup for callers that expect some paths to be missing (the
 * masked and read-only lists, destinations not made yet): -1 with errno
 * set, and no error message built that would only be thrown away. */
int brig_path_try_open_in_root(int root_fd, const char *path, int flags, mode_t mode);

/* Like mkdir -p inside root_fd; returns an O_PATH|O_DIRECTORY fd of the last
 * component. Existing components must be directories (after in-root symlink
 * resolution). */
int brig_path_mkdir_in_root(int root_fd, const char *path, mode_t mode, brig_error_t *err);

/* Makes sure `path` exists inside root_fd as a regular file (creating parent
 * directories), the target of a file bind mount; returns an O_PATH fd. */
int brig_path_mkfile_in_root(int root_fd, const char *path, mode_t mode, brig_error_t *err);

/* "/proc/self/fd/N" for mount(2) calls that must act on exactly the object
 * that was resolved, not on a path that could be swapped afterwards. */
#define BRIG_FD_PATH_MAX 32
void brig_fd_path(int fd, char buf[BRIG_FD_PATH_MAX]);

/* Test hook: when true, brig_path_* never call openat2 and always use the
 * user-space walk, so unit tests cover the path older kernels take. */
extern bool brig_path_force_fallback;

#endif
