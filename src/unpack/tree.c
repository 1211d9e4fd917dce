#define _GNU_SOURCE
/* unpack.h: dirs of the tree being unpacked, opened one component at a
 * time, never through a symlink: an entry `a/b` after a symlink `a ->
 * /etc` would otherwise land in the host's /etc. openat2's
 * RESOLVE_NO_SYMLINKS says the same, but missing components are made
 * here on the way anyway. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "unpack.h"

/* Why `name` in `dir_fd` could not be opened as a dir: a symlink or not
 * a dir (the error names the path so far), else the system's error. */
static int refuse_component(int dir_fd, const char *name, const char *so_far, const char *entry,
                            int e, brig_error_t *err)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return brig_error_kind(err, BRIG_E_INPUT,
                               "entry `%s`: its path passes through the symlink `%s`", entry,
                               so_far);
    if (e == ENOTDIR || e == ELOOP)
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: `%s` is not a directory", entry,
                               so_far);
    return brig_error_set(err, e, "entry `%s`: open `%s`", entry, so_far);
}

static int open_component(int dir_fd, const char *name, bool create, const char *so_far,
                          const char *entry, brig_error_t *err)
{
    const int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dir_fd, name, flags);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(dir_fd, name, 0755) < 0 && errno != EEXIST)
            return brig_error_set(err, errno, "entry `%s`: mkdir `%s`", entry, so_far);
        fd = openat(dir_fd, name, flags);
    }
    if (fd < 0)
        return refuse_component(dir_fd, name, so_far, entry, errno, err);
    return fd;
}

int unpack_open_dir(int root_fd, const char *path, bool create, const char *entry,
                    brig_error_t *err)
{
    cleanup_free char *copy = strdup(path);
    if (copy == NULL)
        return brig_error_set(err, ENOMEM, "entry `%s`", entry);
    int fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "the tree");
    for (char *p = copy; *p;) {
        size_t len = strcspn(p, "/");
        char saved = p[len];
        p[len] = '\0';
        int next = open_component(fd, p, create, copy, entry, err);
        close(fd);
        if (next < 0)
            return -1;
        fd = next;
        p[len] = saved;
        p += len + (saved == '/');
    }
    return fd;
}

int unpack_remove(int dir_fd, const char *name, brig_error_t *err)
{
    if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR)
        return brig_error_set(err, errno, "remove `%s`", name);
    return brig_remove_tree_at(dir_fd, name, err);
}
