#define _GNU_SOURCE
/* entry.h: a layer's entry applied. Its name is checked first
 * (template_path.h), its parent opened without following a symlink
 * (tree.c); what the lower layers had at its name goes, unless both are
 * dirs; then it is made with its owner, mode (setuid and all: chown
 * comes before chmod, which the kernel would otherwise clear) and time.
 * Device nodes are skipped: a sandbox has no use for them, and /dev is
 * its own. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "entry.h"
#include "sandbox/template_path.h"
#include "unpack.h"

#define CHUNK 65536

/* One entry as it is applied: its clean path, its parent open. */
struct target {
    const char *entry; /* as the archive names it */
    char *path;        /* clean */
    const char *base;  /* in path */
    int parent_fd;
};

static int cmp_path(const void *a, const void *b)
{
    return strcmp(a, b);
}

static bool written_by_layer(struct entry_ctx *c, const char *path)
{
    return tfind(path, &c->this_layer, cmp_path) != NULL;
}

/* The path and every dir above it are the layer's: an opaque marker
 * that comes after `d/sub/x` keeps `d/sub`, which no entry named. */
static int remember(struct entry_ctx *c, const char *path, brig_error_t *err)
{
    for (const char *end = path + strlen(path); end > path;) {
        char *copy = strndup(path, (size_t) (end - path));
        if (copy == NULL)
            return brig_error_set(err, ENOMEM, "entry `%s`", path);
        if (written_by_layer(c, copy)) {
            free(copy);
            return 0;
        }
        if (tsearch(copy, &c->this_layer, cmp_path) == NULL) {
            free(copy);
            return brig_error_set(err, ENOMEM, "entry `%s`", path);
        }
        for (end--; end > path && *end != '/';)
            end--;
    }
    return 0;
}

/* What the dir `path` ("" the root, else ending in `/`) at dir_fd had
 * from lower layers removed: what this layer did not write goes, and its
 * own dirs are cleared the same way, since an opaque dir hides all below
 * it. */
static int clear_lower(struct entry_ctx *c, int dir_fd, const char *path, const char *entry,
                       brig_error_t *err)
{
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cleanup_dir DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return brig_error_set(err, errno, "entry `%s`: read `%s`", entry, path);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_free char *child = NULL;
        struct stat st;
        if (asprintf(&child, "%s%s", path, de->d_name) < 0)
            return brig_error_set(err, ENOMEM, "entry `%s`", entry);
        if (!written_by_layer(c, child)) {
            if (unpack_remove(dirfd(d), de->d_name, err) < 0)
                return brig_error_wrap(err, "entry `%s`", entry);
            continue;
        }
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        cleanup_close int sub = openat(dirfd(d), de->d_name,
                                       O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        cleanup_free char *sub_path = NULL;
        if (sub < 0 || asprintf(&sub_path, "%s/", child) < 0)
            return brig_error_set(err, sub < 0 ? errno : ENOMEM, "entry `%s`", entry);
        if (clear_lower(c, sub, sub_path, entry, err) < 0)
            return -1;
    }
    return 0;
}

/* `.wh..wh..opq`: what the dir had from lower layers goes. */
static int make_opaque(struct entry_ctx *c, struct target *t, brig_error_t *err)
{
    cleanup_free char *dir = strndup(t->path, (size_t) (t->base - t->path));
    if (dir == NULL)
        return brig_error_set(err, ENOMEM, "entry `%s`", t->entry);
    return clear_lower(c, t->parent_fd, dir, t->entry, err);
}

/* A whiteout applied; 1 when the entry was one, 0 when not. */
static int whiteout(struct entry_ctx *c, struct target *t, brig_error_t *err)
{
    const char *victim;
    bool bad;
    switch (brig_template_whiteout(t->base, &victim, &bad)) {
    case BRIG_WHITEOUT_OPAQUE:
        return make_opaque(c, t, err) < 0 ? -1 : 1;
    case BRIG_WHITEOUT_FILE:
        if (unpack_remove(t->parent_fd, victim, err) < 0)
            return brig_error_wrap(err, "entry `%s`", t->entry);
        return 1;
    case BRIG_WHITEOUT_NONE:
        break;
    }
    if (bad)
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: a whiteout of nothing", t->entry);
    return 0;
}

static int set_owner_mode(int fd, struct archive_entry *e, const struct target *t,
                          brig_error_t *err)
{
    if (fchown(fd, (uid_t) archive_entry_uid(e), (gid_t) archive_entry_gid(e)) < 0
        || fchmod(fd, archive_entry_perm(e) & 07777) < 0)
        return brig_error_set(err, errno, "entry `%s`: owner and mode", t->entry);
    return 0;
}

static struct timespec entry_mtime(struct archive_entry *e)
{
    return (struct timespec){ archive_entry_mtime(e), archive_entry_mtime_nsec(e) };
}

static int write_data(struct entry_ctx *c, struct archive *a, int fd, const struct target *t,
                      brig_error_t *err)
{
    static char buf[CHUNK];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) {
        if (brig_write_all(fd, buf, (size_t) n) < 0)
            return brig_error_set(err, errno, "entry `%s`: write", t->entry);
        c->bytes += (uint64_t) n;
    }
    if (n < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: %s", t->entry,
                               archive_error_string(a) ? archive_error_string(a) : "read error");
    return 0;
}

static int make_file(struct entry_ctx *c, struct archive *a, struct archive_entry *e,
                     const struct target *t, brig_error_t *err)
{
    if (archive_entry_size(e) < 0 || (uint64_t) archive_entry_size(e) > UNPACK_FILE_MAX)
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: size %lld is absurd", t->entry,
                               (long long) archive_entry_size(e));
    cleanup_close int fd = openat(t->parent_fd, t->base,
                                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return brig_error_set(err, errno, "entry `%s`: create", t->entry);
    const struct timespec times[2] = { entry_mtime(e), entry_mtime(e) };
    if (write_data(c, a, fd, t, err) < 0 || set_owner_mode(fd, e, t, err) < 0)
        return -1;
    if (futimens(fd, times) < 0)
        return brig_error_set(err, errno, "entry `%s`: times", t->entry);
    return 0;
}

static int remember_dir_time(struct entry_ctx *c, const struct target *t, struct timespec mtime,
                             brig_error_t *err)
{
    struct dir_time *bigger = realloc(c->dirs, (c->n_dirs + 1) * sizeof *bigger);
    if (bigger == NULL)
        return brig_error_set(err, ENOMEM, "entry `%s`", t->entry);
    c->dirs = bigger;
    if ((bigger[c->n_dirs].path = strdup(t->path)) == NULL)
        return brig_error_set(err, ENOMEM, "entry `%s`", t->entry);
    bigger[c->n_dirs++].mtime = mtime;
    return 0;
}

static int make_dir(struct entry_ctx *c, struct archive_entry *e, const struct target *t,
                    brig_error_t *err)
{
    if (mkdirat(t->parent_fd, t->base, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "entry `%s`: mkdir", t->entry);
    cleanup_close int fd = openat(t->parent_fd, t->base,
                                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "entry `%s`: open", t->entry);
    if (set_owner_mode(fd, e, t, err) < 0)
        return -1;
    return remember_dir_time(c, t, entry_mtime(e), err);
}

/* A symlink's owner and time, without following it. */
static int link_meta(struct archive_entry *e, const struct target *t, brig_error_t *err)
{
    const struct timespec times[2] = { entry_mtime(e), entry_mtime(e) };
    if (fchownat(t->parent_fd, t->base, (uid_t) archive_entry_uid(e), (gid_t) archive_entry_gid(e),
                 AT_SYMLINK_NOFOLLOW)
            < 0
        || utimensat(t->parent_fd, t->base, times, AT_SYMLINK_NOFOLLOW) < 0)
        return brig_error_set(err, errno, "entry `%s`: owner and time", t->entry);
    return 0;
}

static int make_symlink(struct archive_entry *e, const struct target *t, brig_error_t *err)
{
    const char *to = archive_entry_symlink(e);
    if (to == NULL || strlen(to) > BRIG_TEMPLATE_NAME_MAX
        || !brig_template_link_inside(t->path, to))
        return brig_error_kind(err, BRIG_E_INPUT,
                               "entry `%s`: symlink to `%s` climbs out of the image", t->entry,
                               to ? to : "");
    if (symlinkat(to, t->parent_fd, t->base) < 0)
        return brig_error_set(err, errno, "entry `%s`: symlink", t->entry);
    return link_meta(e, t, err);
}

/* A hard link to an entry unpacked before: its name checked like any
 * entry's, its dir opened the same way; never a dir. */
static int make_hardlink(struct entry_ctx *c, const char *to, const struct target *t,
                         brig_error_t *err)
{
    cleanup_free char *clean = NULL;
    if (brig_template_entry_path(to, &clean, err) < 0)
        return brig_error_wrap(err, "entry `%s`: hard link", t->entry);
    char *slash = strrchr(clean, '/');
    const char *base = slash ? slash + 1 : clean;
    if (slash)
        *slash = '\0';
    cleanup_close int dir = base[0] ? unpack_open_dir(c->root_fd, slash ? clean : "", false,
                                                      t->entry, err)
                                    : -1;
    if (base[0] == '\0')
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: hard link to the root", t->entry);
    if (dir < 0)
        return -1;
    struct stat st;
    if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: hard link to `%s`: %s", t->entry, to,
                               strerror(errno));
    if (S_ISDIR(st.st_mode))
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: hard link to the dir `%s`", t->entry,
                               to);
    if (linkat(dir, base, t->parent_fd, t->base, 0) < 0)
        return brig_error_set(err, errno, "entry `%s`: hard link to `%s`", t->entry, to);
    return 0;
}

static int make_fifo(struct archive_entry *e, const struct target *t, brig_error_t *err)
{
    if (mknodat(t->parent_fd, t->base, S_IFIFO | 0600, 0) < 0)
        return brig_error_set(err, errno, "entry `%s`: mkfifo", t->entry);
    cleanup_close int fd = openat(t->parent_fd, t->base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    const struct timespec times[2] = { entry_mtime(e), entry_mtime(e) };
    /* An O_PATH fd can't be chowned; its /proc name can. */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (fd < 0 || chown(proc, (uid_t) archive_entry_uid(e), (gid_t) archive_entry_gid(e)) < 0
        || chmod(proc, archive_entry_perm(e) & 07777) < 0
        || utimensat(AT_FDCWD, proc, times, 0) < 0)
        return brig_error_set(err, errno, "entry `%s`: owner and mode", t->entry);
    return 0;
}

/* What the lower layers had at the name goes, but a dir that stays one. */
static int clear_place(const struct target *t, bool dir, brig_error_t *err)
{
    struct stat st;
    if (fstatat(t->parent_fd, t->base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "entry `%s`", t->entry);
    if (dir && S_ISDIR(st.st_mode))
        return 0;
    if (unpack_remove(t->parent_fd, t->base, err) < 0)
        return brig_error_wrap(err, "entry `%s`", t->entry);
    return 0;
}

static int make(struct entry_ctx *c, struct archive *a, struct archive_entry *e,
                const struct target *t, brig_error_t *err)
{
    const char *hardlink = archive_entry_hardlink(e);
    mode_t type = archive_entry_filetype(e);
    if (!hardlink && (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFSOCK))
        return 0;
    if (clear_place(t, !hardlink && type == AE_IFDIR, err) < 0)
        return -1;
    if (hardlink)
        return make_hardlink(c, hardlink, t, err);
    switch (type) {
    case AE_IFREG:
        return make_file(c, a, e, t, err);
    case AE_IFDIR:
        return make_dir(c, e, t, err);
    case AE_IFLNK:
        return make_symlink(e, t, err);
    case AE_IFIFO:
        return make_fifo(e, t, err);
    default:
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%s`: unknown file type 0%o", t->entry,
                               (unsigned) type);
    }
}

int entry_apply(struct entry_ctx *c, struct archive *a, struct archive_entry *e, brig_error_t *err)
{
    struct target t = { .entry = archive_entry_pathname(e), .parent_fd = -1 };
    if (t.entry == NULL)
        return brig_error_kind(err, BRIG_E_INPUT, "layer `%s`: an entry without a name", c->blob);
    if (brig_template_entry_path(t.entry, &t.path, err) < 0)
        return brig_error_wrap(err, "layer `%s`", c->blob);
    cleanup_free char *path = t.path;
    if (path[0] == '\0')
        return 0; /* the root: the tree's own */
    char *slash = strrchr(path, '/');
    t.base = slash ? slash + 1 : path;
    cleanup_free char *parent = strndup(path, slash ? (size_t) (slash - path) : 0);
    if (parent == NULL)
        return brig_error_set(err, ENOMEM, "entry `%s`", t.entry);
    cleanup_close int parent_fd = t.parent_fd = unpack_open_dir(c->root_fd, parent, true, t.entry,
                                                                err);
    int r = parent_fd < 0 ? -1 : whiteout(c, &t, err);
    if (r == 0)
        r = remember(c, path, err);
    if (r == 0)
        r = make(c, a, e, &t, err);
    return r < 0 ? brig_error_wrap(err, "layer `%s`", c->blob) : 0;
}

void entry_layer_done(struct entry_ctx *c)
{
    tdestroy(c->this_layer, free);
    c->this_layer = NULL;
}

int entry_dir_times(struct entry_ctx *c, brig_error_t *err)
{
    for (size_t i = 0; i < c->n_dirs; i++) {
        const struct timespec times[2] = { c->dirs[i].mtime, c->dirs[i].mtime };
        /* A dir a later layer removed, or made a symlink, is left alone. */
        cleanup_close int at = unpack_open_dir(c->root_fd, c->dirs[i].path, false, c->dirs[i].path,
                                               err);
        if (at < 0) {
            brig_error_release(err);
            continue;
        }
        cleanup_close int fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || futimens(fd, times) < 0)
            return brig_error_set(err, errno, "dir `%s`: times", c->dirs[i].path);
    }
    return 0;
}

void entry_ctx_clear(struct entry_ctx *c)
{
    entry_layer_done(c);
    for (size_t i = 0; i < c->n_dirs; i++)
        free(c->dirs[i].path);
    free(c->dirs);
    c->dirs = NULL;
    c->n_dirs = 0;
}
