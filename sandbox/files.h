/* The workspace's files as a remote client reaches them (the API's
 * files routes): an upload written to a temporary name beside its target
 * and renamed over it only once complete, a directory listed, both
 * resolved inside /mnt/data as transfer.h resolves paths (nothing
 * reaches the host through `..` or a symlink the sandbox made). Every
 * operation marks the sandbox active (lifetime.h). */
#ifndef BRIG_SANDBOX_FILES_H
#define BRIG_SANDBOX_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"

struct brig_sandbox_upload {
    int dir_fd;    /* the target's directory in the tree */
    int fd;        /* the temporary file */
    char *name;    /* the target's name in dir_fd */
    char *tmp;     /* the temporary's */
    char *path;    /* /mnt/data/REL, for messages and answers */
    uint64_t size; /* bytes written so far */
    uint64_t room; /* bytes free in the workspace when it began */
};
#define BRIG_SANDBOX_UPLOAD_INIT       \
    {                                  \
        -1, -1, NULL, NULL, NULL, 0, 0 \
    }

/* Begins an upload to `path` (relative to /mnt/data, or under it). A
 * missing parent is ENOENT, a path naming the workspace itself or a
 * directory BRIG_E_INPUT, a missing sandbox ENOENT. */
int brig_sandbox_upload_begin(const char *id, const char *path, struct brig_sandbox_upload *u,
                              brig_error_t *err);
/* Appends bytes; a full workspace is ENOSPC. */
int brig_sandbox_upload_write(struct brig_sandbox_upload *u, const void *data, size_t n,
                              brig_error_t *err);
/* Gives the file to the sandbox's user and renames it over the target. */
int brig_sandbox_upload_commit(struct brig_sandbox_upload *u, brig_error_t *err);
/* Removes the temporary file, if any, and frees; safe after commit. */
void brig_sandbox_upload_end(struct brig_sandbox_upload *u);

/* A regular file of the workspace opened for reading, its size in *size. */
int brig_sandbox_file_open(const char *id, const char *path, uint64_t *size, brig_error_t *err);

enum brig_sandbox_file_type {
    BRIG_FILE_REGULAR,
    BRIG_FILE_DIR,
    BRIG_FILE_SYMLINK,
    BRIG_FILE_OTHER,
};

struct brig_sandbox_file_entry {
    char *name;
    enum brig_sandbox_file_type type;
    uint64_t size;
    time_t mtime;
};

/* The entries of a directory of the workspace, sorted by name, without
 * `.` and `..`; a symlink is listed, never followed. */
int brig_sandbox_file_list(const char *id, const char *path, struct brig_sandbox_file_entry **out,
                           size_t *n, brig_error_t *err);
void brig_sandbox_file_list_free(struct brig_sandbox_file_entry *entries, size_t n);

const char *brig_sandbox_file_type_name(enum brig_sandbox_file_type type);

#endif
