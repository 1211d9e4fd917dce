#define _GNU_SOURCE
#include "sandbox/dataimage.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/layout.h"

#define EXT4_MAGIC 0xEF53
#define EXT4_ROOT_INO 2

/* mkfs.ext4 on the image: no reserved blocks (the user gets the whole
 * quota), the root directory owned by the sandbox user, lazy init so a
 * large sparse image costs nothing up front. No discard of the blocks
 * (the image is a fresh sparse file: there is nothing to punch) and a
 * journal of 4 MiB, whose blocks mkfs allocates up front: the default
 * (64 MiB for 8 GiB) took 69 MB of the host's disk per sandbox, and a
 * fifth of the format's time. Small images keep mkfs's own journal size,
 * which is smaller still. No blocks reserved for growing it online
 * (resize_inode), which brig never does: they were 4 of the 4.2 MB that
 * an empty 8 GiB image holds (196 KiB without), written by every format
 * and copy. */
#define SMALL_JOURNAL_FROM (512LL << 20)
/* Below this much room on the image's disk, a failed mkfs is taken for a full
 * disk: mkfs writes a few MiB of metadata (its journal most). */
#define MKFS_ROOM (8ULL << 20)
static int make_ext4(const char *image, int64_t size, uid_t uid, gid_t gid, brig_error_t *err)
{
    char owner[128];
    snprintf(owner, sizeof owner,
             "root_owner=%u:%u,lazy_itable_init=1,lazy_journal_init=1,nodiscard", (unsigned) uid,
             (unsigned) gid);
    pid_t pid = fork();
    if (pid < 0)
        return brig_error_set(err, errno, "fork for mkfs.ext4");
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        /* e2fsprogs lives in sbin, which a user's PATH may lack. */
        setenv("PATH", "/usr/sbin:/sbin:/usr/bin:/bin", 1);
        char *argv[] = { "mkfs.ext4", "-q",  "-F", "-m", "0",  "-O", "^resize_inode",
                         "-E",        owner, NULL, NULL, NULL, NULL };
        size_t n = 9;
        if (size >= SMALL_JOURNAL_FROM) {
            argv[n++] = "-J";
            argv[n++] = "size=4";
        }
        argv[n] = (char *) image;
        execvp("mkfs.ext4", argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return brig_error_set(err, errno, "wait for mkfs.ext4");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return brig_error_set(err, 0, "mkfs.ext4 not found (install e2fsprogs)");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    /* mkfs says why on a stderr no one reads; the likeliest cause, a
     * disk without room for the metadata it writes, is checked here. */
    struct statfs fs;
    if (statfs(image, &fs) == 0 && (uint64_t) fs.f_bavail * (uint64_t) fs.f_bsize < MKFS_ROOM)
        return brig_error_set(err, ENOSPC, "mkfs.ext4 `%s`", image);
    if (WIFSIGNALED(status))
        return brig_error_set(err, 0, "mkfs.ext4 `%s` killed by signal %d", image,
                              WTERMSIG(status));
    return brig_error_set(err, 0, "mkfs.ext4 `%s` failed (exit %d)", image, WEXITSTATUS(status));
}

/* A formatted image of each size, kept in the home's .images: a new
 * sandbox's image is a copy of its data extents (196 KiB for 8 GiB, well
 * under a millisecond) instead of a mkfs of its own (a fork and exec, and
 * 17 ms). Made once, under a temporary name renamed into place whole, so
 * that concurrent creates see a whole one or none. Its root is root's;
 * the copy's is given to the sandbox's user once mounted. */
#define GOLDEN_DIR ".images"
#define GOLDEN_FORMAT 2 /* in the name: a format changed is made anew */
static int golden_image(int64_t size, char **out, brig_error_t *err)
{
    cleanup_free char *dir = NULL, *path = NULL, *tmp = NULL;
    const char *home = brig_sandbox_home();
    if (asprintf(&dir, "%s/" GOLDEN_DIR, home) < 0
        || asprintf(&path, "%s/ext4-%d-%lld.img", dir, GOLDEN_FORMAT, (long long) size) < 0
        || asprintf(&tmp, "%s.%d", path, (int) getpid()) < 0)
        return brig_error_set(err, ENOMEM, "data image");
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()
        && st.st_size == size) {
        *out = brig_steal_ptr(path);
        return 0;
    }
    if ((mkdir(home, 0711) < 0 && errno != EEXIST) || (mkdir(dir, 0700) < 0 && errno != EEXIST))
        return brig_error_set(err, errno, "mkdir `%s`", dir);
    cleanup_close int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return brig_error_set(err, errno, "create `%s`", tmp);
    int r = ftruncate(fd, size) < 0 ? brig_error_set(err, errno, "size `%s`", tmp)
                                    : make_ext4(tmp, size, 0, 0, err);
    if (r == 0 && rename(tmp, path) < 0)
        r = brig_error_set(err, errno, "rename `%s`", tmp);
    if (r < 0) {
        unlink(tmp);
        return -1;
    }
    *out = brig_steal_ptr(path);
    return 0;
}

/* The data extents of src into dst, which is as big and all hole. */
static int copy_extents(int src, int dst, brig_error_t *err)
{
    off_t at = 0, data, hole;
    while ((data = lseek(src, at, SEEK_DATA)) >= 0) {
        if ((hole = lseek(src, data, SEEK_HOLE)) < 0)
            return brig_error_set(err, errno, "seek in the formatted image");
        for (off_t in = data, outp = data; in < hole;) {
            ssize_t n = copy_file_range(src, &in, dst, &outp, (size_t) (hole - in), 0);
            if (n <= 0)
                return brig_error_set(err, n < 0 ? errno : EIO, "copy the formatted image");
        }
        at = hole;
    }
    return errno == ENXIO ? 0 : brig_error_set(err, errno, "seek in the formatted image");
}

/* The new, empty image at fd formatted: a copy of the kept one of its
 * size where there is one (or one can be made), else a mkfs of its own. */
static int format(int fd, const char *image, int64_t size, uid_t uid, gid_t gid, bool *copied,
                  brig_error_t *err)
{
    cleanup_free char *golden = NULL;
    brig_error_t ignored = NULL;
    *copied = false;
    if (ftruncate(fd, size) < 0)
        return brig_error_set(err, errno, "size `%s` to %lld bytes", image, (long long) size);
    if (golden_image(size, &golden, &ignored) == 0) {
        cleanup_close int src = open(golden, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        *copied = src >= 0 && copy_extents(src, fd, &ignored) == 0;
    }
    int why = ignored ? ignored->errnum : 0;
    brig_error_release(&ignored);
    if (*copied)
        return 0;
    /* A full disk fails a mkfs too: say so now. */
    if (why == ENOSPC || why == EDQUOT)
        return brig_error_set(err, why, "format `%s`", image);
    /* Whatever a failed copy wrote goes: mkfs starts on a hole. */
    if (ftruncate(fd, 0) < 0 || ftruncate(fd, size) < 0)
        return brig_error_set(err, errno, "size `%s` to %lld bytes", image, (long long) size);
    return make_ext4(image, size, uid, gid, err);
}

int brig_loop_attach(int image_fd, bool read_only, char path[64], brig_error_t *err)
{
    cleanup_close int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return brig_error_set(err, errno, "open /dev/loop-control");
    /* Another process may grab the device between GET_FREE and CONFIGURE:
     * then EBUSY, and the next free one is tried. */
    for (int attempt = 0; attempt < 32; attempt++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0)
            return brig_error_set(err, errno, "get a free loop device");
        snprintf(path, 64, "/dev/loop%d", n);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return brig_error_set(err, errno, "open `%s`", path);
        struct loop_config cfg = { .fd = (unsigned) image_fd };
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | (read_only ? LO_FLAGS_READ_ONLY : 0);
        if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
            return fd;
        int saved = errno;
        close(fd);
        if (saved != EBUSY)
            return brig_error_set(err, saved, "configure `%s`", path);
    }
    return brig_error_set(err, EBUSY, "no free loop device");
}

static bool is_mounted_ext4(const char *mnt)
{
    struct statfs sf;
    struct stat here, parent;
    cleanup_free char *up = NULL;
    if (statfs(mnt, &sf) < 0 || sf.f_type != EXT4_MAGIC || stat(mnt, &here) < 0)
        return false;
    if (asprintf(&up, "%s/..", mnt) < 0 || stat(up, &parent) < 0)
        return false;
    return here.st_dev != parent.st_dev;
}

/* The loop device whose sysfs dir is `sysdir` reads from the file
 * `image`: its backing file is that same inode. */
static bool loop_backs(const char *sysdir, const struct stat *image)
{
    cleanup_free char *path = NULL, *file = NULL;
    brig_error_t ignored = NULL;
    size_t n = 0;
    if (asprintf(&path, "%s/loop/backing_file", sysdir) < 0) {
        path = NULL;
        return false;
    }
    if (brig_read_file(path, &file, &n, &ignored) < 0) {
        brig_error_release(&ignored);
        return false;
    }
    if (n > 0 && file[n - 1] == '\n')
        file[n - 1] = '\0';
    struct stat st;
    return stat(file, &st) == 0 && st.st_dev == image->st_dev && st.st_ino == image->st_ino;
}

/* fd is the root of the image's file system: ext4's root directory, on a
 * loop device that reads from the image. */
static bool is_image_root(int fd, const struct stat *image)
{
    struct statfs sf;
    struct stat top;
    char sysdir[64];
    if (fstatfs(fd, &sf) < 0 || sf.f_type != EXT4_MAGIC || fstat(fd, &top) < 0
        || top.st_ino != EXT4_ROOT_INO)
        return false;
    snprintf(sysdir, sizeof sysdir, "/sys/dev/block/%u:%u", major(top.st_dev), minor(top.st_dev));
    return loop_backs(sysdir, image);
}

int brig_data_image_verify(int fd, const char *dir, brig_error_t *err)
{
    cleanup_free char *image = NULL;
    if (asprintf(&image, "%s/%s", dir, BRIG_DATA_IMAGE) < 0) {
        image = NULL;
        return brig_error_set(err, ENOMEM, "data image");
    }
    struct stat img;
    if (stat(image, &img) < 0)
        return brig_error_set(err, errno, "`%s`", image);
    if (!is_image_root(fd, &img))
        return brig_error_set(err, ENOENT, "`%s` is not mounted", image);
    return 0;
}

/* A loop device bound to the image already (a sandbox's own mount holds
 * it, or one that is going away): its path in `path`. */
static bool bound_loop(const struct stat *image, char path[64])
{
    cleanup_dir DIR *d = opendir("/sys/block");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char sysdir[300];
        if (strncmp(e->d_name, "loop", 4) != 0 || strlen(e->d_name) > 40)
            continue;
        snprintf(sysdir, sizeof sysdir, "/sys/block/%s", e->d_name);
        if (loop_backs(sysdir, image)) {
            snprintf(path, 64, "/dev/%s", e->d_name);
            return true;
        }
    }
    return false;
}

/* The data file system on `loop` mounted at mnt. */
static int mount_loop(const char *loop, const char *mnt, brig_error_t *err)
{
    /* noinit_itable: the inode tables of a sparse image read as zeros
     * already, and ext4 would otherwise zero them all again in the
     * background (128 MiB for 8 GiB) through the loop device, with page
     * cache pinned while it does, for every sandbox made.
     * no_prefetch_block_bitmaps: nor read every group's block bitmap in
     * that same background thread; the allocator reads one when it first
     * looks at its group, which a small workspace seldom leaves. */
    if (mount(loop, mnt, "ext4", MS_NOSUID | MS_NODEV,
              "errors=remount-ro,noinit_itable,no_prefetch_block_bitmaps")
        < 0)
        return brig_error_set(err, errno, "mount `%s` on `%s`", loop, mnt);
    return 0;
}

/* The image mounted at mnt from `loop`, a device found bound to it and
 * checked after the mount: it may have been freed and bound again to
 * another image in between. false when it was not the image's (then
 * unmounted again) or the mount failed. */
static bool mount_found(const char *loop, const char *mnt, const struct stat *img)
{
    brig_error_t failed = NULL;
    if (mount_loop(loop, mnt, &failed) < 0) {
        brig_error_release(&failed);
        return false;
    }
    cleanup_close int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && is_image_root(fd, img))
        return true;
    umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW);
    return false;
}

/* The image at fd mounted at mnt. An image a loop device is bound to
 * already (a sandbox's own mount of it holds the device) is mounted from
 * that device: the same file system, never a second one writing the same
 * blocks. A device going away as it is mounted fails that mount; a later
 * try finds it gone, and binds a device of its own. */
static int mount_image(int fd, const char *image, const char *mnt, bool fresh, brig_error_t *err)
{
    struct stat img;
    if (fstat(fd, &img) < 0)
        return brig_error_set(err, errno, "`%s`", image);
    /* Two mounts of a stopped sandbox's image at once (a copy, a create)
     * take turns: each binding a device of its own would make two file
     * systems of it. The second finds the first's mount. The lock is on
     * an open of its own: a loop device keeps the one it is given. */
    cleanup_close int lock = fresh ? -1 : open(image, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (!fresh && (lock < 0 || flock(lock, LOCK_EX) < 0))
        return brig_error_set(err, errno, "lock `%s`", image);
    if (!fresh && is_mounted_ext4(mnt))
        return 0;
    char loop[64];
    for (int attempt = 0; !fresh && bound_loop(&img, loop); attempt++) {
        if (mount_found(loop, mnt, &img))
            return 0;
        if (attempt == 49)
            return brig_error_set(err, EBUSY, "mount `%s`: its loop device stays busy", image);
        usleep(20000);
    }
    /* A device of its own, which the open fd keeps bound to the image
     * through the mount: nothing to check after. */
    cleanup_close int loop_fd = brig_loop_attach(fd, false, loop, err);
    if (loop_fd < 0)
        return brig_error_wrap(err, "data image `%s`", image);
    return mount_loop(loop, mnt, err);
}

int brig_data_image_setup(const char *dir, int64_t size, uid_t uid, gid_t gid, brig_error_t *err)
{
    cleanup_free char *image = NULL, *mnt = NULL;
    if (asprintf(&image, "%s/%s", dir, BRIG_DATA_IMAGE) < 0
        || asprintf(&mnt, "%s/%s", dir, BRIG_DATA_MOUNT) < 0)
        return brig_error_set(err, ENOMEM, "data image");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", dir);
    if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", mnt);
    if (is_mounted_ext4(mnt))
        return 0;
    bool copied = false, fresh = true;
    cleanup_close int fd = open(image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        if (format(fd, image, size, uid, gid, &copied, err) < 0) {
            unlink(image);
            return -1;
        }
    } else if (errno == EEXIST) {
        fresh = false;
        fd = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return brig_error_set(err, errno, "open `%s`", image);
    } else {
        return brig_error_set(err, errno, "create `%s`", image);
    }
    if (mount_image(fd, image, mnt, fresh, err) < 0)
        return -1;
    if (copied && chown(mnt, uid, gid) < 0)
        return brig_error_set(err, errno, "chown `%s`", mnt);
    /* mkfs leaves lost+found, which a fresh workspace should not show. */
    cleanup_free char *lf = NULL;
    if (asprintf(&lf, "%s/lost+found", mnt) >= 0)
        rmdir(lf);
    return 0;
}

int brig_data_image_mount(const char *dir, brig_error_t *err)
{
    cleanup_free char *image = NULL, *mnt = NULL;
    if (asprintf(&image, "%s/%s", dir, BRIG_DATA_IMAGE) < 0
        || asprintf(&mnt, "%s/%s", dir, BRIG_DATA_MOUNT) < 0)
        return brig_error_set(err, ENOMEM, "data image");
    cleanup_close int fd = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s`", image);
    if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", mnt);
    return mount_image(fd, image, mnt, false, err);
}

int brig_data_image_unmount(const char *dir, brig_error_t *err)
{
    cleanup_free char *mnt = NULL;
    if (asprintf(&mnt, "%s/%s", dir, BRIG_DATA_MOUNT) < 0)
        return brig_error_set(err, ENOMEM, "data image");
    /* Stacked mounts (a create that ran twice) come off one by one. */
    for (int i = 0; i < 16 && is_mounted_ext4(mnt); i++) {
        if (umount2(mnt, UMOUNT_NOFOLLOW) < 0 && umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
            return brig_error_set(err, errno, "unmount `%s`", mnt);
    }
    return 0;
}

int brig_data_image_usage(int fd, uint64_t *used, uint64_t *size, brig_error_t *err)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return brig_error_set(err, errno, "statfs of the data");
    *size = (uint64_t) sf.f_blocks * (uint64_t) sf.f_bsize;
    *used = (uint64_t) (sf.f_blocks - sf.f_bfree) * (uint64_t) sf.f_bsize;
    return 0;
}
