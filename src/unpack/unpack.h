/* brig-unpack: an OCI image archive or a docker-archive read for
 * `brig sandbox template import` (sandbox/template.h), with libarchive,
 * which brig's static binary can't carry. It finds the image's manifest
 * and config (image.c), checks every blob it reads against its sha256
 * and every layer's uncompressed stream against the config's diff_ids
 * (blob.c, layer.c), and applies the layers in order to a directory
 * (layer.c, tree.c): whiteouts, hard links, symlinks, owners, modes and
 * times kept, every name checked by sandbox/template_path.h's rules and
 * every parent opened without following a symlink. */
#ifndef BRIG_UNPACK_H
#define BRIG_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/sha256.h"

/* JSON blobs (index, manifests, configs) are read whole up to this. */
#define UNPACK_JSON_MAX (16u << 20)
/* More layers than this is not an image anyone built. */
#define UNPACK_LAYERS_MAX 256
/* One file past this is refused. */
#define UNPACK_FILE_MAX (UINT64_C(64) << 30)

struct unpack_layer {
    char *blob;        /* its name in the archive */
    char blob_hex[65]; /* the sha256 the blob must have; "" (docker-archive): unchecked */
    char diff_hex[65]; /* the sha256 of its uncompressed tar (the config's diff_ids) */
};

struct unpack_image {
    const char *archive; /* the file */
    bool oci;            /* else a docker-archive */
    char config_hex[65];
    char *user, *workdir; /* the config's, "" when unset */
    char **env;           /* NULL-terminated */
    struct unpack_layer *layers;
    size_t n_layers;
};

/* blob.c: a file of the archive, found by name (`./` ignored) and read
 * whole (at most `max` bytes; a larger one is refused); its sha256 in
 * hex. ENOENT when the archive has no such regular file. */
int unpack_read_file(const char *archive, const char *name, size_t max, char **data, size_t *len,
                     char hex[65], brig_error_t *err);

/* blob.c: the archive opened and positioned at the file `name`'s data
 * (struct archive *, freed with archive_read_free). */
struct archive;
int unpack_open_file(const char *archive, const char *name, struct archive **out,
                     brig_error_t *err);

/* image.c: the image's manifest and config found and checked. */
int unpack_image_load(const char *archive, struct unpack_image *im, brig_error_t *err);
void unpack_image_clear(struct unpack_image *im);
/* image.c: whether `s` is 64 lowercase hex digits. */
bool unpack_is_hex64(const char *s);

/* layer.c: every layer applied in order to the dir `root_fd`; the bytes
 * of regular files written added to *size. */
int unpack_layers(const struct unpack_image *im, int root_fd, uint64_t *size, brig_error_t *err);

/* tree.c: the parent dirs of entries, never through a symlink. */
/* The dir at `path` (relative to the root, "" the root itself), opened
 * O_PATH one component at a time without following a symlink; missing
 * components made (0755, root's) when `create`. The error names `entry`
 * and the component that is a symlink or not a dir. */
int unpack_open_dir(int root_fd, const char *path, bool create, const char *entry,
                    brig_error_t *err);
/* `name` in dir_fd removed, whatever it is (a dir with its contents);
 * none is not an error. */
int unpack_remove(int dir_fd, const char *name, brig_error_t *err);

#endif
