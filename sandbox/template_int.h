/* Internal to templates (template_store.c, template_import.c,
 * template_tree.c): the store's files and the tree's preparation. */
#ifndef BRIG_SANDBOX_TEMPLATE_INT_H
#define BRIG_SANDBOX_TEMPLATE_INT_H

#include "sandbox/template.h"

#define TEMPLATE_TREES "trees"
#define TEMPLATE_NAMES "names"
#define TEMPLATE_USERS "users"
#define TEMPLATE_TMP "tmp"

/* The store at `store` (NULL: brig_template_store()) opened
 * (O_DIRECTORY); with `create`, it and its dirs made, root's alone.
 * Without, a missing store is ENOENT. */
int brig_template_store_open(const char *store, bool create, brig_error_t *err);

/* A copy of v in *field (the old value freed), and one appended to
 * t->env: -1 on out-of-memory. */
int brig_template_set_str(char **field, const char *v);
int brig_template_add_env(struct brig_template *t, const char *v);

/* The store's lock taken (flock, exclusive) until the fd is closed. */
int brig_template_lock(int store_fd, brig_error_t *err);

/* A name's record in the store (ENOENT: none, the message "no template
 * `NAME`"), and written whole or not at all. */
int brig_template_record_read(int store_fd, const char *name, struct brig_template *t,
                              brig_error_t *err);
int brig_template_record_write(int store_fd, const struct brig_template *t, brig_error_t *err);

/* The size of the tree `digest` as another name's record has it (0 for
 * none), under the lock. */
int brig_template_tree_size(int store_fd, const char *digest, int64_t *size, brig_error_t *err);

/* template_use.c: the sandboxes using `name` (stale records of removed
 * ones dropped on the way), under the lock; the id of one in *example
 * (NULL: not wanted). */
int brig_template_count_users(int store_fd, const char *name, size_t *n, char **example,
                              brig_error_t *err);

/* The user of an image's config (`User`: uid, name, uid:gid, name:group;
 * empty or root: the sandbox's 1000:1000) as the tree's /etc/passwd and
 * /etc/group say, into t->uid, gid and user_name; the jemalloc the tree
 * has into t->jemalloc. Reads the tree only. */
int brig_template_tree_resolve(int tree_fd, const char *user, struct brig_template *t,
                               brig_error_t *err);

/* What a sandbox mounts over made in the tree (mount points, brig-init's
 * file, /etc/brig), /mnt/data the user's, the workdir made, the root
 * 0755; /etc/brig/jemalloc-path written when it has one. */
int brig_template_tree_prepare(int tree_fd, const struct brig_template *t, brig_error_t *err);

#endif
