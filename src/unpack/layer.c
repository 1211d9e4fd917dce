#define _GNU_SOURCE
/* unpack.h: a layer is three libarchive readers deep. The outer archive's
 * file is the blob, hashed as read (OCI: its digest); a raw reader with
 * every filter undoes its compression (gzip, zstd, xz or none), its
 * output hashed as read (the diff_id); a tar reader over that yields the
 * entries, applied by entry.c. A hash is compared once its stream is
 * read to the end, so a layer that fails its check has been written:
 * the caller's dir is a temp dir, removed on failure. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "entry.h"
#include "unpack.h"

#define CHUNK 65536

/* One reader's input: the reader below it, hashed. */
struct hashed {
    struct archive *from;
    struct brig_sha256 sha;
    char buf[CHUNK];
};

static la_ssize_t read_hashed(struct archive *a, void *data, const void **out)
{
    struct hashed *h = data;
    la_ssize_t n = archive_read_data(h->from, h->buf, sizeof h->buf);
    if (n < 0) {
        archive_set_error(a, archive_errno(h->from) ? archive_errno(h->from) : EIO, "%s",
                          archive_error_string(h->from) ? archive_error_string(h->from)
                                                        : "read error");
        return -1;
    }
    brig_sha256_update(&h->sha, h->buf, (size_t) n);
    *out = h->buf;
    return n;
}

/* What is left of a stream read (and so hashed) to its end. */
static int drain(struct archive *a, const char *blob, brig_error_t *err)
{
    static char sink[CHUNK];
    la_ssize_t n;
    while ((n = archive_read_data(a, sink, sizeof sink)) > 0)
        ;
    if (n < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "layer `%s`: %s", blob,
                               archive_error_string(a) ? archive_error_string(a) : "read error");
    return 0;
}

static int reader_error(struct archive *a, const char *blob, brig_error_t *err)
{
    const char *why = archive_error_string(a);
    return brig_error_kind(err, BRIG_E_INPUT, "layer `%s`: %s", blob, why ? why : "unreadable");
}

/* The tar's entries applied, each checked. */
static int apply_entries(struct archive *tar, struct entry_ctx *ctx, brig_error_t *err)
{
    struct archive_entry *e;
    int r;
    while ((r = archive_read_next_header(tar, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN)
        if (entry_apply(ctx, tar, e, err) < 0)
            return -1;
    return r == ARCHIVE_EOF ? 0 : reader_error(tar, ctx->blob, err);
}

static int check_hash(struct brig_sha256 *sha, const char *want, const char *what, const char *blob,
                      brig_error_t *err)
{
    char got[65];
    brig_sha256_final_hex(sha, got);
    if (want[0] && strcmp(got, want) != 0)
        return brig_error_kind(err, BRIG_E_INPUT,
                               "layer `%s`: %s mismatch (sha256:%s expected, its content is "
                               "sha256:%s)",
                               blob, what, want, got);
    return 0;
}

/* The raw (decompressed) stream's tar applied; *tar_out for the caller
 * to free. */
static int open_tar(struct hashed *raw, struct archive **tar_out, const char *blob,
                    brig_error_t *err)
{
    struct archive *tar = *tar_out = archive_read_new();
    if (tar == NULL)
        return brig_error_set(err, ENOMEM, "libarchive");
    archive_read_support_format_tar(tar);
    if (archive_read_open(tar, raw, NULL, read_hashed, NULL) != ARCHIVE_OK)
        return reader_error(tar, blob, err);
    return 0;
}

static int apply_layer(const struct unpack_layer *l, struct archive *outer, struct entry_ctx *ctx,
                       brig_error_t *err)
{
    cleanup_free struct hashed *blob = calloc(1, sizeof *blob);
    cleanup_free struct hashed *raw = calloc(1, sizeof *raw);
    if (blob == NULL || raw == NULL)
        return brig_error_set(err, ENOMEM, "layer `%s`", l->blob);
    blob->from = outer;
    brig_sha256_init(&blob->sha);
    brig_sha256_init(&raw->sha);
    struct archive *tar = NULL;
    struct archive *plain = raw->from = archive_read_new();
    struct archive_entry *e;
    int r = plain ? 0 : brig_error_set(err, ENOMEM, "libarchive");
    if (r == 0) {
        archive_read_support_filter_all(plain);
        archive_read_support_format_raw(plain);
        if (archive_read_open(plain, blob, NULL, read_hashed, NULL) != ARCHIVE_OK
            || archive_read_next_header(plain, &e) != ARCHIVE_OK)
            r = reader_error(plain, l->blob, err);
    }
    if (r == 0)
        r = open_tar(raw, &tar, l->blob, err);
    if (r == 0)
        r = apply_entries(tar, ctx, err);
    if (r == 0)
        r = drain(plain, l->blob, err);
    if (r == 0)
        r = drain(outer, l->blob, err);
    if (r == 0)
        r = check_hash(&blob->sha, l->blob_hex, "digest", l->blob, err);
    if (r == 0)
        r = check_hash(&raw->sha, l->diff_hex, "diff_id", l->blob, err);
    if (tar)
        archive_read_free(tar);
    if (plain)
        archive_read_free(plain);
    return r;
}

int unpack_layers(const struct unpack_image *im, int root_fd, uint64_t *size, brig_error_t *err)
{
    struct entry_ctx ctx = { .root_fd = root_fd };
    int r = 0;
    for (size_t i = 0; r == 0 && i < im->n_layers; i++) {
        struct archive *outer;
        ctx.blob = im->layers[i].blob;
        if (unpack_open_file(im->archive, im->layers[i].blob, &outer, err) < 0)
            return brig_error_wrap(err, "layer %zu", i + 1), entry_ctx_clear(&ctx), -1;
        r = apply_layer(&im->layers[i], outer, &ctx, err);
        archive_read_free(outer);
        entry_layer_done(&ctx);
    }
    if (r == 0)
        r = entry_dir_times(&ctx, err);
    *size += ctx.bytes;
    entry_ctx_clear(&ctx);
    return r;
}
