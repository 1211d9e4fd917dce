/* The MOUNT and PRIVATE_PARENT steps of a rootfs plan: every mount of
 * config.json, with the kernel's fallbacks (a host tree bound where a fresh
 * sysfs or cgroup2 is refused, devpts without an unmapped gid, tmpcopyup),
 * and the remount helpers they share with masked_paths.c. The planning is
 * in plan.c, option parsing in mount_options.c, the walk in execute.c.
 *
 * Every destination is resolved inside the rootfs with brig_path_* and the
 * mount goes through /proc/self/fd/N of the resolved O_PATH fd, so a symlink
 * in the image (or one swapped in by a container sharing a volume) can only
 * ever point somewhere inside the rootfs. */
#define _GNU_SOURCE
#include "rootfs/steps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "cgroup/cgroup.h"
#include "rootfs/mountinfo.h"

/* ---- remounting ---- */

#ifndef ST_NOSYMFOLLOW
#define ST_NOSYMFOLLOW 0x2000
#endif

#define ATIME_MODE (MS_NOATIME | MS_RELATIME | MS_STRICTATIME)
#define REMOUNTABLE \
    (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | ATIME_MODE | MS_NODIRATIME | MS_NOSYMFOLLOW)

static unsigned long flags_of_statfs(const struct statfs *sf)
{
    static const struct {
        unsigned long st, ms;
    } map[] = {
        { ST_RDONLY, MS_RDONLY },     { ST_NOSUID, MS_NOSUID },
        { ST_NODEV, MS_NODEV },       { ST_NOEXEC, MS_NOEXEC },
        { ST_NOATIME, MS_NOATIME },   { ST_NODIRATIME, MS_NODIRATIME },
        { ST_RELATIME, MS_RELATIME }, { ST_NOSYMFOLLOW, MS_NOSYMFOLLOW },
    };
    unsigned long ms = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if ((unsigned long) sf->f_flags & map[i].st)
            ms |= map[i].ms;
    /* Neither noatime nor relatime reported means strictatime; say so, or
     * the remount falls back to relatime, which a user namespace refuses
     * on a mount whose atime setting is locked. */
    if (!(ms & (MS_NOATIME | MS_RELATIME)))
        ms |= MS_STRICTATIME;
    return ms;
}

int brig_remount_bind_keeping(const char *target, unsigned long set, unsigned long clear)
{
    struct statfs sf;
    if (statfs(target, &sf) < 0)
        return -1;
    unsigned long cur = flags_of_statfs(&sf);
    set &= REMOUNTABLE;
    /* Keep what the mount already has unless the spec turned it off: in a
     * user namespace, nosuid/nodev/noexec/ro/atime inherited from the host
     * are locked and a remount that drops them fails with EPERM. */
    unsigned long want = (set & ATIME_MODE) ? (cur & ~ATIME_MODE) : cur;
    want = (want & ~clear) | set;
    if (want == cur)
        return 0;
    return mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | want, NULL);
}

int brig_mount_set_recursive_attrs(int fd, unsigned long long set, unsigned long long clr)
{
    struct mount_attr attr = { .attr_set = set, .attr_clr = clr };
    if (set == 0 && clr == 0)
        return 0;
    return (int) syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                         sizeof attr);
}

/* ---- /proc/self/mountinfo ---- */

/* The mount the rootfs directory lives on (the longest mount point above
 * it; the last one listed when several are stacked). */
static int find_parent_mount(const char *rootfs, char **mountpoint, bool *shared, brig_error_t *err)
{
    cleanup_file FILE *f = fopen("/proc/self/mountinfo", "re");
    cleanup_free char *line = NULL;
    size_t cap = 0, best = 0;
    if (f == NULL)
        return brig_error_set(err, errno, "open `/proc/self/mountinfo`");
    *mountpoint = NULL;
    while (getline(&line, &cap, f) > 0) {
        struct brig_mountinfo e;
        if (!brig_mountinfo_parse_line(line, &e) || !brig_path_is_under(rootfs, e.mountpoint))
            continue;
        size_t n = strlen(e.mountpoint);
        if (n < best)
            continue;
        free(*mountpoint);
        *mountpoint = strdup(e.mountpoint);
        if (*mountpoint == NULL)
            return brig_error_set(err, ENOMEM, "read `/proc/self/mountinfo`");
        *shared = e.shared;
        best = n;
    }
    if (*mountpoint == NULL)
        return brig_error_set(err, ENOENT, "no mount holds `%s`", rootfs);
    return 0;
}

/* Where the host has its cgroup v2 hierarchy: /sys/fs/cgroup on a pure v2
 * host, /sys/fs/cgroup/unified (or wherever mountinfo says) on a hybrid one. */
static char *find_host_cgroup2(void)
{
    struct statfs sf;
    if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
        return strdup("/sys/fs/cgroup");
    cleanup_file FILE *f = fopen("/proc/self/mountinfo", "re");
    cleanup_free char *line = NULL;
    size_t cap = 0;
    while (f != NULL && getline(&line, &cap, f) > 0) {
        struct brig_mountinfo e;
        if (brig_mountinfo_parse_line(line, &e) && strcmp(e.fstype, "cgroup2") == 0)
            return strdup(e.mountpoint);
    }
    return NULL;
}

/* ---- one spec mount ---- */

static const char *mount_source_name(const struct brig_rootfs_step *s)
{
    return s->source ? s->source : s->fstype ? s->fstype : "none";
}

/* "mount `tmpfs` (tmpfs) on `/data`": the source, the type when it says
 * more than the source does, and the destination. */
static int mount_error(brig_error_t *err, int errnum, const struct brig_rootfs_step *s,
                       const char *step)
{
    const char *source = mount_source_name(s);
    bool show_type = s->fstype && strcmp(s->fstype, source) != 0;
    return brig_error_set(err, errnum, "mount `%s`%s%s%s on `%s`%s%s", source,
                          show_type ? " (type " : "", show_type ? s->fstype : "",
                          show_type ? ")" : "", s->path, step ? ": " : "", step ? step : "");
}

/* After the mount itself: the flags a bind ignores on its first call,
 * recursive attributes, propagation. All act on the new mount, reached by
 * resolving the destination again now that it is mounted over. */
static int mount_finish(int root_fd, const struct brig_rootfs_step *s,
                        const struct brig_mount_flags *mf, bool was_bind, brig_error_t *err)
{
    unsigned long extra = mf->flags & REMOUNTABLE;
    bool remount = was_bind && (extra != 0 || (mf->clear & REMOUNTABLE) != 0);
    if (!remount && mf->propagation == 0 && mf->rec_attr_set == 0 && mf->rec_attr_clr == 0)
        return 0;
    cleanup_close int fd = brig_path_open_in_root(root_fd, s->path, O_PATH, 0, err);
    if (fd < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", mount_source_name(s), s->path);
    char target[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, target);
    if (remount && brig_remount_bind_keeping(target, extra, mf->clear) < 0)
        return mount_error(err, errno, s, "remount with the requested flags");
    if (brig_mount_set_recursive_attrs(fd, mf->rec_attr_set, mf->rec_attr_clr) < 0)
        return mount_error(err, errno, s,
                           errno == ENOSYS ? "recursive options (rro, ...) need Linux 5.12"
                                           : "apply recursive options");
    if (mf->propagation != 0 && mount(NULL, target, NULL, mf->propagation, NULL) < 0)
        return mount_error(err, errno, s, "set propagation");
    return 0;
}

static int mount_bind(int root_fd, const struct brig_rootfs_step *s, brig_error_t *err)
{
    const struct brig_mount_flags *mf = &s->mount;
    /* The plan refused a bind without a source; checked, not trusted. */
    if (s->source == NULL)
        return mount_error(err, EINVAL, s, "a bind mount needs a source");
    /* Relative sources are relative to the bundle, the current directory.
     * stat and mount act on this one fd, so they agree on what it is: the
     * one the runtime opened (a user namespace's init), else ours. */
    cleanup_close int src = s->source_fd >= 0 ? fcntl(s->source_fd, F_DUPFD_CLOEXEC, 3)
                                              : open(s->source, O_PATH | O_CLOEXEC);
    struct stat st;
    if (src < 0 || fstat(src, &st) < 0)
        return mount_error(err, errno, s, "open source");
    cleanup_close int dst = S_ISDIR(st.st_mode)
                                ? brig_path_mkdir_in_root(root_fd, s->path, 0755, err)
                                : brig_path_mkfile_in_root(root_fd, s->path, 0644, err);
    if (dst < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", s->source, s->path);
    char from[BRIG_FD_PATH_MAX], to[BRIG_FD_PATH_MAX];
    brig_fd_path(src, from);
    brig_fd_path(dst, to);
    if (s->source_fd >= 0) {
        if (syscall(SYS_move_mount, src, "", dst, "",
                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
            < 0)
            return mount_error(err, errno, s, "move the runtime's copy of the source");
    } else if (mount(from, to, NULL, MS_BIND | (mf->flags & MS_REC), NULL) < 0) {
        return mount_error(err, errno, s, NULL);
    }
    return mount_finish(root_fd, s, mf, true, err);
}

/* Removes "gid=N" from a devpts data string, in place. */
static void drop_gid_option(char *data)
{
    char *p = data;
    while (p && *p) {
        char *end = strchrnul(p, ',');
        if (strncmp(p, "gid=", 4) == 0) {
            memmove(p, *end ? end + 1 : end, strlen(*end ? end + 1 : end) + 1);
            continue;
        }
        p = *end ? end + 1 : end;
    }
    size_t n = data ? strlen(data) : 0;
    if (n > 0 && data[n - 1] == ',')
        data[n - 1] = '\0';
}

/* Bind-mounts a host tree instead of a fresh filesystem the kernel refused;
 * `force` adds flags (read-only for cgroup2). */
static int mount_fallback_bind(int root_fd, const char *host, const struct brig_rootfs_step *s,
                               const struct brig_mount_flags *mf, unsigned long force,
                               const char *to, brig_error_t *err)
{
    if (mount(host, to, NULL, MS_BIND | MS_REC, NULL) < 0)
        return brig_error_set(err, errno, "mount `%s` on `%s`: bind the host's `%s` instead",
                              mount_source_name(s), s->path, host);
    struct brig_mount_flags bound = *mf;
    bound.flags |= force;
    bound.clear &= ~force;
    if (mount_finish(root_fd, s, &bound, true, err) < 0)
        return -1;
    /* The filesystem that was asked for has no submounts; the host tree
     * does. Give them the same ro/nosuid/nodev/noexec where the kernel can
     * (mount_setattr); the top one is done either way. */
    unsigned long long attrs = ((bound.flags & MS_RDONLY) ? MOUNT_ATTR_RDONLY : 0)
                               | ((bound.flags & MS_NOSUID) ? MOUNT_ATTR_NOSUID : 0)
                               | ((bound.flags & MS_NODEV) ? MOUNT_ATTR_NODEV : 0)
                               | ((bound.flags & MS_NOEXEC) ? MOUNT_ATTR_NOEXEC : 0);
    cleanup_close int fd = brig_path_open_in_root(root_fd, s->path, O_PATH, 0, err);
    if (fd < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", mount_source_name(s), s->path);
    if (brig_mount_set_recursive_attrs(fd, attrs, 0) < 0 && errno != ENOSYS)
        return mount_error(err, errno, s, "apply flags to the submounts");
    return 0;
}

/* On a host with v1 hierarchies (hybrid, legacy), type "cgroup" is a tmpfs
 * holding each of them (cgroup_mount.c), as runc makes it. Otherwise, and
 * for "cgroup2" anywhere, it is cgroup2. The kernel refuses a fresh cgroup2
 * mount in a user namespace without its own cgroup namespace (and may on a
 * hybrid host whose v1 controllers keep v2 busy); then the host's v2
 * hierarchy is bound instead. That shows the host's whole tree rather than
 * the container's cgroup-namespace view, so it is read-only: the container
 * may look, never move processes or change limits. */
static int mount_cgroup(int root_fd, const struct brig_rootfs_step *s, const char *to,
                        brig_error_t *err)
{
    const struct brig_mount_flags *mf = &s->mount;
    enum brig_cgroup_layout layout = brig_cgroup_layout();
    if ((layout == BRIG_CGROUP_LAYOUT_HYBRID || layout == BRIG_CGROUP_LAYOUT_LEGACY)
        && strcmp(s->fstype, "cgroup") == 0)
        return brig_rootfs_do_cgroup_v1(root_fd, s, to, layout == BRIG_CGROUP_LAYOUT_HYBRID, err);
    if (mount("cgroup2", to, "cgroup2", mf->flags, mf->data) == 0)
        return mount_finish(root_fd, s, mf, false, err);
    int saved = errno;
    cleanup_free char *host = find_host_cgroup2();
    if (host == NULL || (saved != EPERM && saved != EBUSY && saved != EINVAL))
        return mount_error(err, saved, s, NULL);
    return mount_fallback_bind(root_fd, host, s, mf, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                               to, err);
}

/* ---- tmpcopyup ---- */

/* Deep enough for any image directory; a deeper one is refused, not cut. */
#define COPY_UP_MAX_DEPTH 64

static int copy_tree(int from, int to, int depth);

static int copy_file_data(int from, const char *name, int to, const struct stat *st)
{
    cleanup_close int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return -1;
    cleanup_close int out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                   st->st_mode & 07777);
    if (out < 0)
        return -1;
    for (off_t left = st->st_size; left > 0;) {
        ssize_t n = sendfile(out, in, NULL, left > (1 << 30) ? (1 << 30) : (size_t) left);
        if (n < 0)
            return -1;
        if (n == 0)
            break; /* the file shrank meanwhile */
        left -= n;
    }
    return 0;
}

static int copy_entry(int from, const char *name, int to, int depth)
{
    struct stat st;
    if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    switch (st.st_mode & S_IFMT) {
    case S_IFDIR: {
        if (mkdirat(to, name, st.st_mode & 07777) < 0)
            return -1;
        cleanup_close int sub_from = openat(from, name,
                                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        cleanup_close int sub_to = openat(to, name,
                                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub_from < 0 || sub_to < 0 || copy_tree(sub_from, sub_to, depth + 1) < 0)
            return -1;
        break;
    }
    case S_IFREG:
        if (copy_file_data(from, name, to, &st) < 0)
            return -1;
        break;
    case S_IFLNK: {
        char target[PATH_MAX];
        ssize_t n = readlinkat(from, name, target, sizeof target - 1);
        if (n < 0)
            return -1;
        target[n] = '\0';
        if (symlinkat(target, to, name) < 0)
            return -1;
        break;
    }
    default:
        if (mknodat(to, name, st.st_mode, st.st_rdev) < 0)
            return -1;
    }
    /* In a user namespace an owner without a mapping cannot be set (EINVAL):
     * the copy then belongs to the namespace's overflow ids, as it would
     * appear anyway. */
    if (fchownat(to, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != EINVAL)
        return -1;
    /* The creation modes went through the umask, and chown clears set-id. */
    if (!S_ISLNK(st.st_mode) && fchmodat(to, name, st.st_mode & 07777, 0) < 0)
        return -1;
    return 0;
}

static int copy_tree(int from, int to, int depth)
{
    if (depth > COPY_UP_MAX_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    int fd = dup(from);
    if (fd < 0)
        return -1;
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    errno = 0;
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        rc = copy_entry(from, e->d_name, to, depth);
        errno = 0;
    }
    int saved = rc < 0 ? errno : errno != 0 ? errno : 0;
    closedir(dir);
    errno = saved;
    return rc < 0 || saved != 0 ? -1 : 0;
}

/* Fills the tmpfs just mounted on the destination with what `below`, the
 * directory it now covers, holds. */
static int copy_up(int root_fd, const struct brig_rootfs_step *s, int below, brig_error_t *err)
{
    cleanup_close int top = brig_path_open_in_root(root_fd, s->path, O_RDONLY | O_DIRECTORY, 0,
                                                   err);
    if (top < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", mount_source_name(s), s->path);
    if (copy_tree(below, top, 0) < 0)
        return mount_error(err, errno, s, "copy the directory's contents into it (tmpcopyup)");
    return 0;
}

/* A tmpfs that starts as a copy of the directory it covers. The copy is made
 * before a read-only tmpfs becomes read-only. */
static int mount_tmpfs_copy_up(int root_fd, const struct brig_rootfs_step *s, int dst,
                               const char *to, brig_error_t *err)
{
    const struct brig_mount_flags *mf = &s->mount;
    /* Opened before the mount, so it stays on the covered directory. */
    cleanup_close int below = openat(dst, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (below < 0)
        return mount_error(err, errno, s, "open the directory to copy up");
    const char *source = s->source ? s->source : s->fstype;
    if (mount(source, to, s->fstype, mf->flags & ~MS_RDONLY, mf->data) < 0)
        return mount_error(err, errno, s, NULL);
    if (copy_up(root_fd, s, below, err) < 0)
        return -1;
    if (mf->flags & MS_RDONLY) {
        cleanup_close int top = brig_path_open_in_root(root_fd, s->path, O_PATH, 0, err);
        if (top < 0)
            return brig_error_wrap(err, "mount `%s` on `%s`", source, s->path);
        char path[BRIG_FD_PATH_MAX];
        brig_fd_path(top, path);
        if (mount(NULL, path, NULL, MS_REMOUNT | mf->flags, mf->data) < 0)
            return mount_error(err, errno, s, "remount read-only after the copy");
    }
    return mount_finish(root_fd, s, mf, false, err);
}

/* A filesystem of the step's type; the plan stripped bind flags from it. */
static int mount_filesystem(int root_fd, const struct brig_rootfs_step *s, brig_error_t *err)
{
    const struct brig_mount_flags *mf = &s->mount;
    /* The plan refused a mount without a type; checked, not trusted. */
    if (s->fstype == NULL)
        return mount_error(err, EINVAL, s, "no type and no bind option");
    cleanup_close int dst = brig_path_mkdir_in_root(root_fd, s->path, 0755, err);
    if (dst < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", mount_source_name(s), s->path);
    char to[BRIG_FD_PATH_MAX];
    brig_fd_path(dst, to);
    if (s->mount_kind == BRIG_MOUNT_CGROUP)
        return mount_cgroup(root_fd, s, to, err);
    if (s->mount_kind == BRIG_MOUNT_TMPFS && mf->copy_up)
        return mount_tmpfs_copy_up(root_fd, s, dst, to, err);

    const char *source = s->source ? s->source : s->fstype;
    if (mount(source, to, s->fstype, mf->flags, mf->data) == 0)
        return mount_finish(root_fd, s, mf, false, err);
    int saved = errno;
    /* sysfs belongs to the network namespace: a user namespace that shares
     * the host's cannot mount it (EPERM). Bind the host's /sys, as runc and
     * crun do. */
    if (s->mount_kind == BRIG_MOUNT_SYSFS && saved == EPERM)
        return mount_fallback_bind(root_fd, "/sys", s, mf, 0, to, err);
    /* devpts "gid=5" fails with EINVAL when gid 5 isn't mapped into the user
     * namespace; the ptys are then owned by the container's root group. */
    if (s->mount_kind == BRIG_MOUNT_DEVPTS && saved == EINVAL && mf->data
        && strstr(mf->data, "gid=") != NULL) {
        cleanup_free char *data = strdup(mf->data);
        drop_gid_option(data);
        if (data != NULL && mount(source, to, s->fstype, mf->flags, data) == 0)
            return mount_finish(root_fd, s, mf, false, err);
    }
    return mount_error(err, saved, s, NULL);
}

int brig_rootfs_do_mount(int root_fd, const struct brig_rootfs_step *s, brig_error_t *err)
{
    if (s->mount_kind == BRIG_MOUNT_BIND)
        return mount_bind(root_fd, s, err);
    return mount_filesystem(root_fd, s, err);
}

int brig_rootfs_do_private_parent(const char *rootfs, brig_error_t *err)
{
    cleanup_free char *parent = NULL;
    bool shared = false;
    if (find_parent_mount(rootfs, &parent, &shared, err) < 0)
        return -1;
    if (shared && mount(NULL, parent, NULL, MS_PRIVATE, NULL) < 0)
        return brig_error_set(err, errno, "make `%s` private", parent);
    return 0;
}
