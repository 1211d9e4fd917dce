/* Files in and out of a sandbox's /mnt/data, and nowhere else (`brig
 * sandbox cp`). A path inside is resolved with the data tree as its root
 * (base/path.h): `..` stops there, and a symlink the sandbox planted is
 * followed as if the data tree were the whole file system, so no path
 * reaches the host through one. A final symlink is never followed at all.
 * Files copied in belong to the sandbox user.
 *
 * The fd-level functions take the data tree open (dataimage.h); the
 * copies find it from the sandbox's id. */
#ifndef BRIG_SANDBOX_TRANSFER_H
#define BRIG_SANDBOX_TRANSFER_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

/* A path as the sandbox sees it (/mnt/data/x, or x relative to /mnt/data)
 * → the same path relative to the data tree ("." for its top). Pure; any
 * other absolute path is the error "only /mnt/data is reachable". */
int brig_sandbox_data_relpath(const char *path, char **rel, brig_error_t *err);

/* The data tree of a sandbox, a directory fd: the host's mount of its
 * image where there is one, else its init's (a running sandbox holds the
 * only mount), else, when `mount` is set, the image mounted on the host
 * again (a stopped sandbox's). Each is checked to be the image's own file
 * system first. ENOENT when there is none. */
int brig_sandbox_data_open(const char *id, bool mount, brig_error_t *err);

/* brig_sandbox_data_open, mounting when it has to. */
int brig_sandbox_data_open_tree(const char *id, brig_error_t *err);

/* Where a running sandbox's init is recorded (its host pid), once its
 * host mount of the data is gone. */
int brig_sandbox_data_record_init(const char *dir, pid_t pid, brig_error_t *err);

/* Where a file named `src` (a path: its last component counts) copied to
 * `rel` lands in the tree: `rel`, or rel/NAME when `rel` is a directory
 * there or ends in `/`. */
int brig_sandbox_data_target(int tree_fd, const char *rel, const char *src, char **name,
                             brig_error_t *err);

/* A file put in place whole or not at all (a download, a copy): an unnamed file
 * (O_TMPFILE) in the directory of the tree `name` goes into, owned by the
 * sandbox user, that no one sees until brig_sandbox_data_publish links it
 * in under its name, in place of whatever had it (a symlink there is
 * replaced, never followed). Closed unpublished, or its writer killed,
 * it leaves nothing behind. */
struct brig_sandbox_data_file {
    int fd;     /* write the contents here */
    int dir_fd; /* the directory it goes into */
    char *leaf; /* its name there */
};
#define BRIG_SANDBOX_DATA_FILE_INIT \
    {                               \
        -1, -1, NULL                \
    }

int brig_sandbox_data_create_unseen(int tree_fd, const char *name, struct brig_sandbox_data_file *f,
                                    brig_error_t *err);
int brig_sandbox_data_publish(struct brig_sandbox_data_file *f, brig_error_t *err);
void brig_sandbox_data_file_close(struct brig_sandbox_data_file *f);

/* A regular file of the tree opened for reading; anything else is the
 * error "not a regular file". */
int brig_sandbox_data_read(int tree_fd, const char *rel, brig_error_t *err);

/* The host file `src` copied into the sandbox at `rel` (relative to
 * /mnt/data, see brig_sandbox_data_target), owned by the sandbox user. */
int brig_sandbox_copy_in(const char *src, const char *id, const char *rel, brig_error_t *err);

/* The sandbox's regular file at `rel` copied to the host at `dst`, or into
 * it under the file's name when `dst` is a directory or ends in `/`. */
int brig_sandbox_copy_out(const char *id, const char *rel, const char *dst, brig_error_t *err);

#endif
