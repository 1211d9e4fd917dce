#define _GNU_SOURCE
/* One read-only view of brig's file per host, kept for every brig after.
 *
 * The guard (selfexe.c) needs a read-only mount of our own file to move
 * onto. A detached clone made per process costs an open_tree and a
 * mount_setattr, and its release unmounts, which waits for an RCU grace
 * period: 0.15 ms and more per container on the development host, several
 * under emulation. So the first brig that needs one attaches its clone,
 * already read-only, at <dir>/<dev>-<ino> of its file, and later brigs of
 * the same file only open it. What is opened there is used only if it is
 * that very file (device and inode) on a read-only mount; anything else
 * there (a half-made entry, a file put there by hand) is passed over, and
 * the caller clones as before. When brig is replaced by a new file, the
 * new one gets an entry of its own, and entries whose file is gone from
 * every directory (link count 0) are unmounted then. */
#include "selfexe/selfexe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

struct cache_mount_attr {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* fd is `self`, the same file, and nobody can write it through fd's mount. */
static bool is_readonly_view(int fd, const struct stat *self)
{
    struct stat st;
    struct statvfs vfs;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == self->st_dev
           && st.st_ino == self->st_ino && fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
}

static int open_entry(int dir_fd, const char *name, const struct stat *self)
{
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && !is_readonly_view(fd, self)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Entries of files that no directory holds any more (brig was replaced). */
static void remove_stale(int dir_fd, const char *keep)
{
    int copy = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (copy < 0)
        return;
    cleanup_dir DIR *d = fdopendir(copy);
    if (d == NULL) {
        close(copy);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (de->d_name[0] == '.' || strcmp(de->d_name, keep) == 0
            || fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)
            || st.st_nlink != 0)
            continue;
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dir_fd, de->d_name)
            >= sizeof path)
            continue;
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 || errno == EINVAL)
            unlinkat(dir_fd, de->d_name, 0);
    }
}

/* Attaches a read-only clone of our file at dir/name, a file made for it
 * (under the dir's lock, so two brigs don't both mount there). */
static void make_entry(int dir_fd, const char *name)
{
    int tree = (int) syscall(SYS_open_tree, AT_FDCWD, "/proc/self/exe",
                             OPEN_TREE_CLONE | O_CLOEXEC);
    if (tree < 0)
        return;
    struct cache_mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
    int target = -1;
    /* A regular file left by an attempt that failed before its mount is
     * taken over; a mount already there is never touched. */
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) == 0)
        target = openat(dir_fd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0400);
    if (target >= 0) {
        close(target);
        syscall(SYS_move_mount, tree, "", dir_fd, name, MOVE_MOUNT_F_EMPTY_PATH);
    }
    /* Attached, the tree's release unmounts nothing. */
    close(tree);
}

int brig_selfexe_cached_readonly(const char *dir)
{
    struct stat self;
    if (stat("/proc/self/exe", &self) < 0)
        return -1;
    char name[64];
    snprintf(name, sizeof name, "%llx-%llx", (unsigned long long) self.st_dev,
             (unsigned long long) self.st_ino);
    cleanup_close int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd >= 0) {
        int fd = open_entry(dir_fd, name, &self);
        if (fd >= 0)
            return fd;
    } else {
        /* The dir and its parent (the default state root), root's only. */
        cleanup_free char *parent = strdup(dir);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (slash && slash != parent) {
            *slash = '\0';
            mkdir(parent, 0700);
        }
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -1;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0)
            return -1;
    }
    while (flock(dir_fd, LOCK_EX) < 0)
        if (errno != EINTR)
            return -1;
    /* Another brig may have made it while we waited. */
    int fd = open_entry(dir_fd, name, &self);
    if (fd >= 0)
        return fd;
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size != 0)
        return -1; /* something else is there: leave it */
    remove_stale(dir_fd, name);
    make_entry(dir_fd, name);
    return open_entry(dir_fd, name, &self);
}
