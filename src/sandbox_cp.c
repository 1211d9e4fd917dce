#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cli.h"
#include "sandbox/dataimage.h"
#include "base/path.h"
#include "sandbox/profile.h"
#include "sandbox_cmd.h"

static const char cp_usage[] =
    "Usage: brig sandbox cp FILE ID:PATH\n"
    "       brig sandbox cp ID:PATH FILE\n\n"
    "Copy a file into the sandbox's /mnt/data or out of it. PATH is inside\n"
    "/mnt/data (absolute, or relative to it); a PATH or FILE that is a\n"
    "directory (or ends in /) receives the file under its own name. Symlinks\n"
    "in the sandbox resolve inside /mnt/data and never out of it. Files\n"
    "copied in belong to the sandbox user.\n";

/* "ID:PATH" → id and the path relative to /mnt/data; 0 when `arg` names no
 * sandbox. */
static int split_remote(const char *arg, char **id, char **rel)
{
    const char *colon = strchr(arg, ':');
    if (colon == NULL || colon == arg || memchr(arg, '/', (size_t) (colon - arg)))
        return 0;
    const char *path = colon + 1;
    size_t dlen = strlen(BRIG_SANDBOX_DATA);
    if (strncmp(path, BRIG_SANDBOX_DATA, dlen) == 0 && (path[dlen] == '\0' || path[dlen] == '/'))
        path += dlen;
    else if (path[0] == '/')
        return brig_fail_msg("sandbox cp: `%s`: only %s is reachable", arg, BRIG_SANDBOX_DATA) * -1;
    while (*path == '/')
        path++;
    *id = strndup(arg, (size_t) (colon - arg));
    *rel = strdup(*path ? path : ".");
    return *id && *rel ? 1 : brig_fail_msg("sandbox cp: out of memory") * -1;
}

static int open_data(const char *id, brig_error_t *err)
{
    cleanup_free char *dir = NULL, *mnt = NULL;
    if (sandbox_dir(id, &dir))
        return -2;
    uint64_t used, size;
    if (brig_data_image_usage(dir, &used, &size, err) < 0)
        return brig_error_wrap(err, "sandbox `%s`", id);
    if (asprintf(&mnt, "%s/%s", dir, BRIG_DATA_MOUNT) < 0)
        return brig_error_set(err, ENOMEM, "sandbox cp");
    int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    return fd < 0 ? brig_error_set(err, errno, "open `%s`", mnt) : fd;
}

static int copy_fd(int from, int to)
{
    for (;;) {
        ssize_t n = sendfile(to, from, NULL, 1 << 20);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
    }
}

/* Where a copy lands: `dst`, or dst/NAME when dst is a directory. */
static char *target_name(const char *dst, bool is_dir, const char *src)
{
    cleanup_free char *copy = strdup(src);
    char *out = NULL;
    if (copy == NULL)
        return NULL;
    if (!is_dir)
        return strdup(dst);
    if (asprintf(&out, "%s/%s", dst, basename(copy)) < 0)
        return NULL;
    return out;
}

static int copy_in(const char *src, const char *id, const char *rel)
{
    brig_error_t err = NULL;
    cleanup_close int in = open(src, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) < 0)
        return brig_fail_msg("sandbox cp: `%s`: %s", src, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return brig_fail_msg("sandbox cp: `%s`: not a regular file", src);
    cleanup_close int root = open_data(id, &err);
    if (root < 0)
        return root == -2 ? 1 : brig_fail(&err);
    cleanup_close int probe = brig_path_open_in_root(root, rel, O_PATH | O_DIRECTORY, 0, &err);
    brig_error_release(&err);
    size_t len = strlen(rel);
    bool is_dir = probe >= 0 || rel[len - 1] == '/';
    cleanup_free char *name = target_name(rel, is_dir, src);
    if (name == NULL)
        return brig_fail_msg("sandbox cp: out of memory");
    cleanup_close int out = brig_path_open_in_root(root, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW,
                                                   0644, &err);
    if (out < 0)
        return brig_error_wrap(&err, "sandbox cp: `%s:%s/%s`", id, BRIG_SANDBOX_DATA, name), brig_fail(&err);
    if (fchown(out, BRIG_SANDBOX_UID, BRIG_SANDBOX_GID) < 0 || copy_fd(in, out) < 0)
        return brig_fail_msg("sandbox cp: `%s:%s/%s`: %s", id, BRIG_SANDBOX_DATA, name, strerror(errno));
    return 0;
}

static int copy_out(const char *id, const char *rel, const char *dst)
{
    brig_error_t err = NULL;
    cleanup_close int root = open_data(id, &err);
    if (root < 0)
        return root == -2 ? 1 : brig_fail(&err);
    cleanup_close int in = brig_path_open_in_root(root, rel, O_RDONLY | O_NOFOLLOW, 0, &err);
    if (in < 0)
        return brig_error_wrap(&err, "sandbox cp: `%s:%s/%s`", id, BRIG_SANDBOX_DATA, rel), brig_fail(&err);
    struct stat st;
    if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
        return brig_fail_msg("sandbox cp: `%s:%s/%s`: not a regular file", id, BRIG_SANDBOX_DATA, rel);
    struct stat dst_st;
    size_t len = strlen(dst);
    bool is_dir = (stat(dst, &dst_st) == 0 && S_ISDIR(dst_st.st_mode)) || dst[len - 1] == '/';
    cleanup_free char *name = target_name(dst, is_dir, rel);
    if (name == NULL)
        return brig_fail_msg("sandbox cp: out of memory");
    cleanup_close int out = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || copy_fd(in, out) < 0)
        return brig_fail_msg("sandbox cp: `%s`: %s", name, strerror(errno));
    return 0;
}

int sandbox_cmd_cp(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, cp_usage, 2, "source and destination");
    if (done >= 0)
        return done;
    const char *src = argv[optind], *dst = argv[optind + 1];
    cleanup_free char *src_id = NULL, *src_rel = NULL, *dst_id = NULL, *dst_rel = NULL;
    int src_remote = split_remote(src, &src_id, &src_rel);
    int dst_remote = split_remote(dst, &dst_id, &dst_rel);
    if (src_remote < 0 || dst_remote < 0)
        return 1;
    if (src_remote == dst_remote)
        return brig_fail_msg("sandbox cp: exactly one of `%s` and `%s` must be ID:PATH", src, dst);
    return dst_remote ? copy_in(src, dst_id, dst_rel) : copy_out(src_id, src_rel, dst);
}
