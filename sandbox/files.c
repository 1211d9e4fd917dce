#define _GNU_SOURCE
/* The workspace's files for remote clients, as files.h tells. */
#include "sandbox/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "base/utils.h"
#include "sandbox/lifetime.h"
#include "sandbox/profile.h"
#include "sandbox/transfer.h"

/* The tree of a sandbox whose workspace is mounted; a sandbox that isn't
 * there is ENOENT. */
static int open_tree(const char *id, brig_error_t *err)
{
    int fd = brig_sandbox_data_open_tree(id, err);
    if (fd < 0 && (*err)->errnum == ENOENT)
        brig_error_kind(err, ENOENT, "no sandbox `%s`", id);
    return fd;
}

/* `path` as the tree sees it, cleaned: "." for the top. */
static int tree_path(const char *path, char **rel, brig_error_t *err)
{
    cleanup_free char *raw = NULL;
    if (brig_sandbox_data_relpath(path, &raw, err) < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "`%s`: only %s is reachable", path,
                               BRIG_SANDBOX_DATA);
    *rel = brig_path_clean(raw);
    return *rel ? 0 : brig_error_set(err, ENOMEM, "path");
}

/* An error of a lookup in the tree, classified for the front ends. */
static int lookup_failed(brig_error_t *err, const char *path)
{
    int e = (*err)->errnum;
    if (e == ENOENT || e == ELOOP || e == EXDEV)
        return brig_error_kind(err, ENOENT, "%s/%s: no such file or directory", BRIG_SANDBOX_DATA,
                               path);
    if (e == ENOTDIR)
        return brig_error_kind(err, BRIG_E_INPUT, "%s/%s: not a directory", BRIG_SANDBOX_DATA,
                               path);
    return brig_error_wrap(err, "%s/%s", BRIG_SANDBOX_DATA, path);
}

static int split(const char *rel, char **dir, char **base, brig_error_t *err)
{
    const char *slash = strrchr(rel, '/');
    *dir = slash ? strndup(rel, (size_t) (slash - rel)) : strdup(".");
    *base = strdup(slash ? slash + 1 : rel);
    return *dir && *base ? 0 : brig_error_set(err, ENOMEM, "path");
}

static int make_temp(struct brig_sandbox_upload *u, brig_error_t *err)
{
    for (int tries = 0; tries < 8; tries++) {
        unsigned int r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t) sizeof r)
            r = (unsigned int) getpid() ^ (unsigned int) tries;
        free(u->tmp);
        if (asprintf(&u->tmp, ".brig-upload-%08x", r) < 0) {
            u->tmp = NULL;
            return brig_error_set(err, ENOMEM, "upload");
        }
        u->fd = openat(u->dir_fd, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0644);
        if (u->fd >= 0)
            return 0;
        if (errno != EEXIST)
            return brig_error_set(err, errno, "%s: create", u->path);
    }
    return brig_error_set(err, EEXIST, "%s: create", u->path);
}

int brig_sandbox_upload_begin(const char *id, const char *path, struct brig_sandbox_upload *u,
                              brig_error_t *err)
{
    *u = (struct brig_sandbox_upload) BRIG_SANDBOX_UPLOAD_INIT;
    cleanup_close int tree = open_tree(id, err);
    cleanup_free char *rel = NULL, *dir = NULL;
    if (tree < 0 || tree_path(path, &rel, err) < 0)
        return -1;
    if (strcmp(rel, ".") == 0)
        return brig_error_kind(err, BRIG_E_INPUT, "`%s` names the workspace, not a file", path);
    if (split(rel, &dir, &u->name, err) < 0)
        return -1;
    if (asprintf(&u->path, "%s/%s", BRIG_SANDBOX_DATA, rel) < 0) {
        u->path = NULL;
        return brig_error_set(err, ENOMEM, "upload");
    }
    u->dir_fd = brig_path_open_in_root(tree, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, err);
    if (u->dir_fd < 0)
        return lookup_failed(err, dir);
    struct statvfs vfs;
    if (fstatvfs(u->dir_fd, &vfs) == 0)
        u->room = (uint64_t) vfs.f_bavail * vfs.f_frsize;
    brig_sandbox_mark_active(id);
    return make_temp(u, err);
}

int brig_sandbox_upload_write(struct brig_sandbox_upload *u, const void *data, size_t n,
                              brig_error_t *err)
{
    if (u->size + n > u->room)
        return brig_error_kind(err, ENOSPC, "%s: /mnt/data is full (quota)", u->path);
    if (brig_write_all(u->fd, data, n) < 0) {
        if (errno == ENOSPC || errno == EDQUOT)
            return brig_error_kind(err, ENOSPC, "%s: /mnt/data is full (quota)", u->path);
        return brig_error_set(err, errno, "%s: write", u->path);
    }
    u->size += n;
    return 0;
}

int brig_sandbox_upload_commit(struct brig_sandbox_upload *u, brig_error_t *err)
{
    /* The sandbox user's, as the host sees it: the owner of /mnt/data. */
    struct stat top;
    if (fstat(u->dir_fd, &top) < 0 || fchown(u->fd, top.st_uid, top.st_gid) < 0)
        return brig_error_set(err, errno, "%s: chown", u->path);
    if (fsync(u->fd) < 0 && (errno == ENOSPC || errno == EDQUOT))
        return brig_error_kind(err, ENOSPC, "%s: /mnt/data is full (quota)", u->path);
    if (renameat(u->dir_fd, u->tmp, u->dir_fd, u->name) < 0) {
        if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
            return brig_error_kind(err, BRIG_E_INPUT, "%s is a directory", u->path);
        return brig_error_set(err, errno, "%s: rename", u->path);
    }
    free(u->tmp);
    u->tmp = NULL;
    return 0;
}

void brig_sandbox_upload_end(struct brig_sandbox_upload *u)
{
    if (u->tmp && u->dir_fd >= 0)
        unlinkat(u->dir_fd, u->tmp, 0);
    if (u->fd >= 0)
        close(u->fd);
    if (u->dir_fd >= 0)
        close(u->dir_fd);
    free(u->name);
    free(u->tmp);
    free(u->path);
    *u = (struct brig_sandbox_upload) BRIG_SANDBOX_UPLOAD_INIT;
}

int brig_sandbox_file_open(const char *id, const char *path, uint64_t *size, brig_error_t *err)
{
    cleanup_close int tree = open_tree(id, err);
    cleanup_free char *rel = NULL;
    if (tree < 0 || tree_path(path, &rel, err) < 0)
        return -1;
    /* Checked first: brig_sandbox_data_read says only "not a regular file". */
    struct stat st;
    cleanup_close int probe = brig_path_try_open_in_root(tree, rel, O_PATH | O_NOFOLLOW, 0);
    if (probe < 0) {
        brig_error_set(err, errno, "open");
        return lookup_failed(err, rel);
    }
    if (fstat(probe, &st) == 0 && S_ISDIR(st.st_mode))
        return brig_error_kind(err, BRIG_E_INPUT,
                               "%s/%s is a directory (list it with a trailing /)",
                               BRIG_SANDBOX_DATA, rel);
    int fd = brig_sandbox_data_read(tree, rel, err);
    if (fd < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "%s/%s: not a regular file", BRIG_SANDBOX_DATA,
                               rel);
    *size = fstat(fd, &st) == 0 ? (uint64_t) st.st_size : 0;
    brig_sandbox_mark_active(id);
    return fd;
}

const char *brig_sandbox_file_type_name(enum brig_sandbox_file_type type)
{
    static const char *const names[] = { "file", "dir", "symlink", "other" };
    return names[type];
}

static enum brig_sandbox_file_type type_of(mode_t mode)
{
    return S_ISREG(mode)   ? BRIG_FILE_REGULAR
           : S_ISDIR(mode) ? BRIG_FILE_DIR
           : S_ISLNK(mode) ? BRIG_FILE_SYMLINK
                           : BRIG_FILE_OTHER;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct brig_sandbox_file_entry *) a)->name,
                  ((const struct brig_sandbox_file_entry *) b)->name);
}

static int add_entry(int dir_fd, const char *name, struct brig_sandbox_file_entry **out, size_t *n,
                     brig_error_t *err)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0; /* gone since readdir */
    struct brig_sandbox_file_entry *bigger = realloc(*out, (*n + 1) * sizeof **out);
    if (bigger == NULL)
        return brig_error_set(err, ENOMEM, "list");
    *out = bigger;
    struct brig_sandbox_file_entry *e = &bigger[*n];
    *e = (struct brig_sandbox_file_entry){ strdup(name), type_of(st.st_mode), (uint64_t) st.st_size,
                                           st.st_mtime };
    if (e->name == NULL)
        return brig_error_set(err, ENOMEM, "list");
    (*n)++;
    return 0;
}

int brig_sandbox_file_list(const char *id, const char *path, struct brig_sandbox_file_entry **out,
                           size_t *n, brig_error_t *err)
{
    *out = NULL;
    *n = 0;
    cleanup_close int tree = open_tree(id, err);
    cleanup_free char *rel = NULL;
    if (tree < 0 || tree_path(path, &rel, err) < 0)
        return -1;
    int fd = brig_path_open_in_root(tree, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, err);
    if (fd < 0)
        return lookup_failed(err, rel);
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return brig_error_set(err, errno, "%s/%s", BRIG_SANDBOX_DATA, rel);
    }
    int r = 0;
    for (struct dirent *de; r == 0 && (de = readdir(d)) != NULL;)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            r = add_entry(dirfd(d), de->d_name, out, n, err);
    closedir(d);
    if (r < 0) {
        brig_sandbox_file_list_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, by_name);
    brig_sandbox_mark_active(id);
    return 0;
}

void brig_sandbox_file_list_free(struct brig_sandbox_file_entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(entries[i].name);
    free(entries);
}
