/* brig-unpack's entries: one tar entry of a layer applied to the tree
 * (entry.c), the dirs it needs opened without following a symlink
 * (tree.c). */
#ifndef BRIG_UNPACK_ENTRY_H
#define BRIG_UNPACK_ENTRY_H

#include <stdint.h>
#include <time.h>

#include "base/error.h"

struct archive;
struct archive_entry;

struct dir_time {
    char *path;
    struct timespec mtime;
};

struct entry_ctx {
    int root_fd;
    const char *blob;      /* the layer under way, for messages */
    void *this_layer;      /* tsearch(3) tree of the paths it wrote: an opaque dir keeps them */
    struct dir_time *dirs; /* dirs' times, set once every layer is in */
    size_t n_dirs;
    uint64_t bytes; /* of regular files */
};

/* The entry `e` of the tar `a` (its data next to read) applied. */
int entry_apply(struct entry_ctx *c, struct archive *a, struct archive_entry *e, brig_error_t *err);
/* The layer under way is done: its paths forgotten. */
void entry_layer_done(struct entry_ctx *c);
/* Every dir's time set, last layer's last word. */
int entry_dir_times(struct entry_ctx *c, brig_error_t *err);
void entry_ctx_clear(struct entry_ctx *c);

#endif
