#define _GNU_SOURCE
/* unpack.h: the outer archive, a file of it at a time. libarchive reads
 * a tar as a stream, so each file is a pass from the start; on a plain
 * tar on disk, the files before it are skipped by seeking. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "unpack.h"

#define BLOCK_SIZE 65536

/* A name in the archive as the manifests spell it: without `./`. */
static const char *plain_name(const char *name)
{
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    while (name[0] == '/')
        name++;
    return name;
}

static int archive_error(struct archive *a, const char *archive, brig_error_t *err)
{
    const char *why = archive_error_string(a);
    return brig_error_kind(err, BRIG_E_INPUT, "`%s`: %s", archive,
                           why ? why : "not a readable archive");
}

int unpack_open_file(const char *archive, const char *name, struct archive **out, brig_error_t *err)
{
    *out = NULL;
    struct archive *a = archive_read_new();
    if (a == NULL)
        return brig_error_set(err, ENOMEM, "libarchive");
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, archive, BLOCK_SIZE) != ARCHIVE_OK) {
        int e = archive_errno(a);
        int r = e == ENOENT || e == EACCES || e == EISDIR
                    ? brig_error_kind(err, BRIG_E_INPUT, "`%s`: %s", archive, strerror(e))
                    : archive_error(a, archive, err);
        archive_read_free(a);
        return r;
    }
    struct archive_entry *e;
    int r;
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        const char *path = archive_entry_pathname(e);
        if (path && archive_entry_filetype(e) == AE_IFREG && archive_entry_hardlink(e) == NULL
            && strcmp(plain_name(path), name) == 0) {
            *out = a;
            return 0;
        }
    }
    if (r == ARCHIVE_EOF) {
        archive_read_free(a);
        return brig_error_kind(err, ENOENT, "`%s`: no file `%s` in the archive", archive, name);
    }
    archive_error(a, archive, err);
    archive_read_free(a);
    return -1;
}

int unpack_read_file(const char *archive, const char *name, size_t max, char **data, size_t *len,
                     char hex[65], brig_error_t *err)
{
    *data = NULL;
    struct archive *a;
    if (unpack_open_file(archive, name, &a, err) < 0)
        return -1;
    struct brig_sha256 h;
    brig_sha256_init(&h);
    cleanup_free char *buf = malloc(max + 1);
    size_t n = 0;
    int r = buf ? 0 : brig_error_set(err, ENOMEM, "`%s`", name);
    while (r == 0) {
        la_ssize_t got = archive_read_data(a, buf + n, max + 1 - n);
        if (got < 0)
            r = archive_error(a, archive, err);
        else if (got == 0)
            break;
        else if ((n += (size_t) got) > max)
            r = brig_error_kind(err, BRIG_E_INPUT, "`%s`: larger than %zu bytes", name, max);
    }
    archive_read_free(a);
    if (r < 0)
        return -1;
    brig_sha256_update(&h, buf, n);
    brig_sha256_final_hex(&h, hex);
    buf[n] = '\0';
    *data = brig_steal_ptr(buf);
    *len = n;
    return 0;
}
