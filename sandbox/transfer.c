#define _GNU_SOURCE
#include "sandbox/transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "base/utils.h"
#include "sandbox/dataimage.h"
#include "sandbox/layout.h"
#include "sandbox/lifetime.h"
#include "sandbox/profile.h"

#define CP "sandbox cp"
/* What a copy into a data image may need on the host beyond its bytes: a
 * sixty-fourth more for ext4's metadata, and this for its journal. */
#define HOST_SPARE (8ULL << 20)

int brig_sandbox_data_relpath(const char *path, char **rel, brig_error_t *err)
{
    size_t dlen = strlen(BRIG_SANDBOX_DATA);
    *rel = NULL;
    if (strncmp(path, BRIG_SANDBOX_DATA, dlen) == 0 && (path[dlen] == '\0' || path[dlen] == '/'))
        path += dlen;
    else if (path[0] == '/')
        return brig_error_kind(err, BRIG_E_INPUT, "only %s is reachable", BRIG_SANDBOX_DATA);
    while (*path == '/')
        path++;
    *rel = strdup(*path ? path : ".");
    return *rel ? 0 : brig_error_set(err, ENOMEM, CP);
}

#define INIT_RECORD "init.pid"

int brig_sandbox_data_record_init(const char *dir, pid_t pid, brig_error_t *err)
{
    char text[32];
    int len = snprintf(text, sizeof text, "%d\n", (int) pid);
    cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s`", dir);
    return brig_write_file_atomic_at(fd, INIT_RECORD, text, (size_t) len, 0600, err);
}

/* The recorded init's /mnt/data: its root, then the path in it (which
 * no link of the sandbox's can lead out of). -1 when there is none. */
static int open_in_init(const char *dir)
{
    cleanup_free char *path = NULL, *text = NULL;
    brig_error_t ignored = NULL;
    char proc[64];
    if (asprintf(&path, "%s/%s", dir, INIT_RECORD) < 0) {
        path = NULL;
        return -1;
    }
    if (brig_read_file(path, &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return -1;
    }
    long pid = strtol(text, NULL, 10);
    if (pid <= 0)
        return -1;
    snprintf(proc, sizeof proc, "/proc/%ld/root", pid);
    cleanup_close int root = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return root < 0 ? -1
                    : brig_path_try_open_in_root(root, BRIG_SANDBOX_DATA + 1,
                                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

/* fd when it is the root of dir's image, else -1 (fd closed). */
static int checked(int fd, const char *dir)
{
    brig_error_t ignored = NULL;
    if (fd >= 0 && brig_data_image_verify(fd, dir, &ignored) == 0)
        return fd;
    brig_error_release(&ignored);
    if (fd >= 0)
        close(fd);
    return -1;
}

int brig_sandbox_data_open(const char *id, bool mount, brig_error_t *err)
{
    cleanup_free char *dir = NULL, *mnt = NULL;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    if (asprintf(&mnt, "%s/%s", dir, BRIG_DATA_MOUNT) < 0) {
        mnt = NULL;
        return brig_error_set(err, ENOMEM, CP);
    }
    /* Never the bare mount point: what went there would land on the
     * host's disk, past the quota and hidden at the next mount. */
    int fd = checked(open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW), dir);
    if (fd < 0)
        fd = checked(open_in_init(dir), dir);
    if (fd < 0 && mount) {
        /* No image (no sandbox) is the same answer as no mount. */
        if (brig_data_image_mount(dir, err) < 0 && (*err)->errnum != ENOENT)
            return brig_error_wrap(err, "sandbox `%s`", id);
        brig_error_release(err);
        fd = checked(open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW), dir);
    }
    if (fd >= 0)
        return fd;
    brig_error_set(err, ENOENT, "`%s` is not mounted", mnt);
    return brig_error_wrap(err, "sandbox `%s`", id);
}

int brig_sandbox_data_open_tree(const char *id, brig_error_t *err)
{
    return brig_sandbox_data_open(id, true, err);
}

static bool ends_in_slash(const char *path)
{
    size_t len = strlen(path);
    return len > 0 && path[len - 1] == '/';
}

/* `dst`, or dst/NAME (the last component of `src`) when dst is a
 * directory. NULL on out-of-memory. */
static char *target_name(const char *dst, bool is_dir, const char *src)
{
    if (!is_dir)
        return strdup(dst);
    cleanup_free char *copy = strdup(src);
    char *out = NULL;
    if (copy == NULL
        || asprintf(&out, "%s%s%s", dst, ends_in_slash(dst) ? "" : "/", basename(copy)) < 0)
        return NULL;
    return out;
}

int brig_sandbox_data_target(int tree_fd, const char *rel, const char *src, char **name,
                             brig_error_t *err)
{
    cleanup_close int probe = brig_path_try_open_in_root(tree_fd, rel, O_PATH | O_DIRECTORY, 0);
    *name = target_name(rel, probe >= 0 || ends_in_slash(rel), src);
    return *name ? 0 : brig_error_set(err, ENOMEM, CP);
}

/* fd, opened without blocking (a fifo the sandbox planted would wait for
 * ever for its other end), kept only when it is a regular file (a device
 * would reach the host's), then made blocking for the copy. */
static int regular_only(int fd, brig_error_t *err)
{
    cleanup_close int owned = fd;
    struct stat st;
    if (fstat(owned, &st) < 0 || !S_ISREG(st.st_mode))
        return brig_error_set(err, 0, "not a regular file");
    int flags = fcntl(owned, F_GETFL);
    if (flags < 0 || fcntl(owned, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return brig_error_set(err, errno, "fcntl");
    return brig_steal_fd(owned);
}

/* `fd` given to the sandbox user, as the host sees it: the owner of
 * /mnt/data itself (uid 1000, or its id in the sandbox's own range). */
static int own_as_top(int tree_fd, int fd)
{
    struct stat top;
    return fstat(tree_fd, &top) < 0 || fchown(fd, top.st_uid, top.st_gid) < 0 ? -1 : 0;
}

int brig_sandbox_data_create_unseen(int tree_fd, const char *name, struct brig_sandbox_data_file *f,
                                    brig_error_t *err)
{
    *f = (struct brig_sandbox_data_file) BRIG_SANDBOX_DATA_FILE_INIT;
    cleanup_free char *clean = brig_path_clean(name);
    if (clean == NULL)
        return brig_error_set(err, ENOMEM, CP);
    char *slash = strrchr(clean, '/');
    const char *leaf = slash ? slash + 1 : clean;
    if (strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0 || leaf[0] == '\0')
        return brig_error_set(err, 0, "not a file name");
    f->leaf = strdup(leaf);
    if (f->leaf == NULL)
        return brig_error_set(err, ENOMEM, CP);
    if (slash)
        *slash = '\0';
    const char *dir = slash == NULL ? "." : slash == clean ? "/" : clean;
    f->dir_fd = brig_path_open_in_root(tree_fd, dir, O_PATH | O_DIRECTORY, 0, err);
    if (f->dir_fd < 0) {
        brig_sandbox_data_file_close(f);
        return -1;
    }
    f->fd = openat(f->dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (f->fd < 0 || fchmod(f->fd, 0644) < 0 || own_as_top(tree_fd, f->fd) < 0) {
        int saved = errno;
        brig_sandbox_data_file_close(f);
        return brig_error_set(err, saved, "a new file");
    }
    return 0;
}

#define FRESH_TRIES 16

/* A name of ours to try: `prefix` and 16 random hex digits. */
static void fresh_name(char *out, size_t size, const char *prefix, int tries)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) < 0)
        r = (uint64_t) getpid() << 8 | (uint64_t) tries;
    snprintf(out, size, "%s%016llx", prefix, (unsigned long long) r);
}

/* The unnamed file linked in under a fresh name of ours: a name the
 * sandbox may have taken is tried again. */
static int link_fresh(const struct brig_sandbox_data_file *f, char *tmp, size_t size)
{
    char proc[BRIG_FD_PATH_MAX];
    brig_fd_path(f->fd, proc);
    for (int tries = 0; tries < FRESH_TRIES; tries++) {
        fresh_name(tmp, size, ".brig-new-", tries);
        if (linkat(AT_FDCWD, proc, f->dir_fd, tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int brig_sandbox_data_publish(struct brig_sandbox_data_file *f, brig_error_t *err)
{
    char tmp[64];
    if (link_fresh(f, tmp, sizeof tmp) < 0)
        return brig_error_set(err, errno, "link `%s`", f->leaf);
    if (renameat(f->dir_fd, tmp, f->dir_fd, f->leaf) < 0) {
        int saved = errno;
        unlinkat(f->dir_fd, tmp, 0);
        return brig_error_set(err, saved, "rename to `%s`", f->leaf);
    }
    return 0;
}

void brig_sandbox_data_file_close(struct brig_sandbox_data_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->dir_fd >= 0)
        close(f->dir_fd);
    free(f->leaf);
    *f = (struct brig_sandbox_data_file) BRIG_SANDBOX_DATA_FILE_INIT;
}

int brig_sandbox_data_read(int tree_fd, const char *rel, brig_error_t *err)
{
    int fd = brig_path_open_in_root(tree_fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, err);
    return fd < 0 ? -1 : regular_only(fd, err);
}

static int copy_fd(int from, int to)
{
    for (;;) {
        ssize_t n = sendfile(to, from, NULL, 1 << 20);
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* The data image is a sparse file on the host's disk: a write into it
 * that the host's disk can't hold fails in the loop device, under the
 * sandbox's filesystem, which then turns read-only. A copy that would
 * fill the host's disk is refused before it starts. */
static int host_room_for(int in, brig_error_t *err)
{
    struct stat st;
    struct statfs fs;
    if (fstat(in, &st) < 0 || statfs(brig_sandbox_home(), &fs) < 0)
        return brig_error_set(err, errno, "the host's room");
    uint64_t need = (uint64_t) st.st_size + ((uint64_t) st.st_size >> 6) + HOST_SPARE;
    uint64_t room = (uint64_t) fs.f_bavail * (uint64_t) fs.f_bsize;
    if (room < need)
        return brig_error_set(err, ENOSPC, "the host's disk has %llu KiB left, %llu needed",
                              (unsigned long long) (room >> 10), (unsigned long long) (need >> 10));
    return 0;
}

int brig_sandbox_copy_in(const char *src, const char *id, const char *rel, brig_error_t *err)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return brig_error_set(err, errno, CP ": `%s`", src);
    cleanup_close int in = regular_only(fd, err);
    if (in < 0)
        return brig_error_wrap(err, CP ": `%s`", src);
    cleanup_close int tree = brig_sandbox_data_open_tree(id, err);
    if (tree < 0)
        return -1;
    /* A copy is activity, whatever its outcome. */
    brig_sandbox_mark_active(id);
    if (host_room_for(in, err) < 0)
        return brig_error_wrap(err, CP ": `%s` into `%s`", src, id);
    cleanup_free char *name = NULL;
    if (brig_sandbox_data_target(tree, rel, src, &name, err) < 0)
        return -1;
    /* Unseen until whole: a copy the quota cuts short leaves nothing,
     * and replaces nothing. */
    struct brig_sandbox_data_file f = BRIG_SANDBOX_DATA_FILE_INIT;
    int r = brig_sandbox_data_create_unseen(tree, name, &f, err);
    if (r == 0 && copy_fd(in, f.fd) < 0)
        r = brig_error_set(err, errno, "write");
    if (r == 0)
        r = brig_sandbox_data_publish(&f, err);
    brig_sandbox_data_file_close(&f);
    if (r < 0)
        return brig_error_wrap(err, CP ": `%s:%s/%s`", id, BRIG_SANDBOX_DATA, name);
    return 0;
}

/* An unnamed file (mode 0644 less the umask) in the directory of the
 * host path `name`, to be published under its last component; f->fd is
 * -1 where the filesystem has no unnamed files (9p, some FUSE ones). */
static int open_unseen_on_host(const char *name, struct brig_sandbox_data_file *f)
{
    cleanup_free char *d = strdup(name), *b = strdup(name);
    if (d == NULL || b == NULL || (f->leaf = strdup(basename(b))) == NULL)
        return errno = ENOMEM, -1;
    f->dir_fd = open(dirname(d), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (f->dir_fd < 0)
        return -1;
    f->fd = openat(f->dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    return f->fd >= 0 || errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? 0 : -1;
}

/* Without unnamed files: a hidden name of ours in the same directory,
 * renamed when whole and removed when not. */
static int write_out_named(int in, struct brig_sandbox_data_file *f)
{
    char tmp[64];
    for (int tries = 0; f->fd < 0 && tries < FRESH_TRIES; tries++) {
        fresh_name(tmp, sizeof tmp, ".brig-cp-", tries);
        f->fd = openat(f->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (f->fd < 0 && errno != EEXIST)
            return -1;
    }
    if (f->fd < 0)
        return -1;
    if (copy_fd(in, f->fd) < 0 || renameat(f->dir_fd, tmp, f->dir_fd, f->leaf) < 0) {
        int saved = errno;
        unlinkat(f->dir_fd, tmp, 0);
        return errno = saved, -1;
    }
    return 0;
}

static int write_out(int in, const char *name, brig_error_t *err)
{
    struct brig_sandbox_data_file f = BRIG_SANDBOX_DATA_FILE_INIT;
    int r = open_unseen_on_host(name, &f);
    bool unnamed = r == 0 && f.fd >= 0;
    if (r == 0)
        r = unnamed ? copy_fd(in, f.fd) : write_out_named(in, &f);
    if (r < 0)
        r = brig_error_set(err, errno, CP ": `%s`", name);
    else if (unnamed && brig_sandbox_data_publish(&f, err) < 0)
        r = brig_error_wrap(err, CP ": `%s`", name);
    brig_sandbox_data_file_close(&f);
    return r;
}

int brig_sandbox_copy_out(const char *id, const char *rel, const char *dst, brig_error_t *err)
{
    cleanup_close int tree = brig_sandbox_data_open_tree(id, err);
    if (tree < 0)
        return -1;
    brig_sandbox_mark_active(id);
    cleanup_close int in = brig_sandbox_data_read(tree, rel, err);
    if (in < 0)
        return brig_error_wrap(err, CP ": `%s:%s/%s`", id, BRIG_SANDBOX_DATA, rel);
    struct stat st;
    bool is_dir = (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) || ends_in_slash(dst);
    cleanup_free char *name = target_name(dst, is_dir, rel);
    if (name == NULL)
        return brig_error_set(err, ENOMEM, CP);
    /* The same on the host's side: a copy that fills the disk leaves no
     * part of a file behind. */
    return write_out(in, name, err);
}
