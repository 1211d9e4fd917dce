#define _GNU_SOURCE
/* Checks on mount destinations that the runtime makes before it creates
 * anything, so a bad bundle fails with one clear line and no state: the
 * kernel's file systems (proc, sysfs), whose files the runtime writes
 * later, must not sit behind a link that leaves the rootfs. */
#include "rootfs/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"

/* True when `target`, a symlink found in directory `dir` (a clean absolute
 * path inside the rootfs), leaves the rootfs when read as a host path: an
 * absolute target, or more ".." than `dir` has components. */
static bool symlink_leaves_root(const char *dir, const char *target)
{
    if (target[0] == '/')
        return true;
    int depth = 0;
    for (const char *p = dir; *p; p++)
        if (*p == '/' && p[1] != '\0' && p[1] != '/')
            depth++;
    cleanup_free char *copy = strdup(target);
    if (copy == NULL)
        return true;
    char *save = NULL;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, "..") == 0 && --depth < 0)
            return true;
        if (strcmp(c, "..") != 0 && strcmp(c, ".") != 0)
            depth++;
    }
    return false;
}

/* The directory of the destination looked at last, kept open: a spec's
 * mounts come in runs under one directory (/dev/pts, /dev/shm, ...). */
struct checked_dir {
    char *path;
    int fd;
};

static void checked_dir_release(struct checked_dir *d)
{
    free(d->path);
    if (d->fd >= 0)
        close(d->fd);
}

static int check_destination(int root_fd, struct checked_dir *seen, size_t index,
                             const char *destination, brig_error_t *err)
{
    /* A relative destination is relative to "/" (the runtime spec allows
     * it, and the mount treats it so): checked the same way. */
    cleanup_free char *abs = NULL;
    if (destination[0] != '/' && asprintf(&abs, "/%s", destination) < 0)
        return brig_error_set(err, ENOMEM, "mounts[%zu]", index);
    cleanup_free char *clean = brig_path_clean(abs ? abs : destination);
    if (clean == NULL)
        return brig_error_set(err, ENOMEM, "mounts[%zu]", index);
    char *slash = strrchr(clean, '/');
    if (slash == NULL || slash[1] == '\0')
        return 0;
    *slash = '\0';
    const char *dir = *clean ? clean : "/";
    const char *last = slash + 1;
    if (seen->path == NULL || strcmp(seen->path, dir) != 0) {
        checked_dir_release(seen);
        seen->fd = brig_path_try_open_in_root(root_fd, dir, O_PATH | O_DIRECTORY, 0);
        seen->path = strdup(dir);
        if (seen->path == NULL)
            return brig_error_set(err, ENOMEM, "mounts[%zu]", index);
    }
    int dir_fd = seen->fd;
    if (dir_fd < 0)
        return 0; /* not there yet: it will be created as a directory */
    char target[PATH_MAX];
    ssize_t n = readlinkat(dir_fd, last, target, sizeof target - 1);
    if (n < 0)
        return 0; /* missing or not a symlink */
    target[n] = '\0';
    if (symlink_leaves_root(dir, target))
        return brig_error_set(err, 0,
                              "mounts[%zu]: destination `%s` is a symlink to `%s`, outside the "
                              "rootfs; refusing to mount over it",
                              index, destination, target);
    return 0;
}

int brig_mounts_check_destinations(const struct brig_spec *spec, const char *rootfs,
                                   brig_error_t *err)
{
    cleanup_close int root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        return brig_error_set(err, errno, "rootfs `%s`", rootfs);
    __attribute__((cleanup(checked_dir_release))) struct checked_dir seen = { NULL, -1 };
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct brig_mount *m = &spec->mounts[i];
        /* Any other destination's links are read inside the rootfs, as
         * runc reads them (an image's /etc/resolv.conf pointing into
         * /run/systemd/resolve gets the bind there). */
        if (m->type == NULL || (strcmp(m->type, "proc") != 0 && strcmp(m->type, "sysfs") != 0))
            continue;
        if (check_destination(root_fd, &seen, i, m->destination, err) < 0)
            return -1;
    }
    return 0;
}
