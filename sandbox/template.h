/* Templates: sandboxes made from an OCI image archive or a
 * docker-archive (`brig sandbox template import NAME IMAGE.tar`, then
 * `brig sandbox create --template NAME ID`).
 *
 * The store ($BRIG_TEMPLATE_DIR, or /var/lib/brig/templates; root's
 * alone, 0700):
 *
 *   STORE/trees/HEX/        an image's layers unpacked, once, named by the
 *                           sha256 of its config; every sandbox of every
 *                           name of that image shares it read-only
 *   STORE/names/NAME        a name: its tree and the image's defaults
 *   STORE/users/NAME/HASH   a sandbox using it: its dir's path (the same
 *                           path's file `template` names the template back)
 *   STORE/tmp/              imports under way
 *   STORE/.lock             held while names, trees and users change
 *
 * An import reads the archive with brig-unpack (src/unpack/), which
 * checks every digest and unpacks the layers into STORE/tmp; the tree
 * gets what a sandbox mounts over (template_tree.c) and is renamed into
 * place, then the name written: a failed import leaves nothing. */
#ifndef BRIG_SANDBOX_TEMPLATE_H
#define BRIG_SANDBOX_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "sandbox/profile.h"

#define BRIG_TEMPLATE_DIR_ENV "BRIG_TEMPLATE_DIR"
#define BRIG_TEMPLATE_DIR_DEFAULT "/var/lib/brig/templates"
/* In a sandbox's dir: "STORE\nNAME\n", the template it was made from. */
#define BRIG_TEMPLATE_USE_FILE "template"

struct brig_template {
    char *name;
    char digest[65]; /* sha256 of the image's config, hex */
    char *format;    /* "oci" or "docker-archive" */
    int64_t layers, size, created;
    uint32_t uid, gid; /* the user its sandboxes run as */
    char *user_name;   /* NULL: sandbox */
    char *workdir;     /* NULL: /mnt/data */
    char *jemalloc;    /* its path in the tree; NULL: none */
    char **env;        /* NAME=VALUE, NULL-terminated */
    size_t users;      /* sandboxes using it (brig_template_list) */
};

/* $BRIG_TEMPLATE_DIR when set and not empty, else the default. */
const char *brig_template_store(void);

/* A name is one file name: letters, digits, `.`, `_`, `-`, not starting
 * with `.` or `-`, at most 128 bytes. Pure; BRIG_E_INPUT. */
int brig_template_name_validate(const char *name, brig_error_t *err);

/* The template `name`; ENOENT when there is none. */
int brig_template_read(const char *name, struct brig_template *t, brig_error_t *err);
void brig_template_clear(struct brig_template *t);

/* Every template, sorted by name, with its users counted. */
int brig_template_list(struct brig_template **out, size_t *n, brig_error_t *err);
void brig_template_list_free(struct brig_template *t, size_t n);

/* The name removed, and its tree when no other name has it. Refused
 * (EBUSY, the message naming a sandbox) while a sandbox uses it;
 * ENOENT when there is no such template. */
int brig_template_remove(const char *name, brig_error_t *err);

/* The settings of a sandbox made from `name`: its tree as the rootfs,
 * the image's user, WorkingDir, Env and jemalloc. */
int brig_template_settings(const char *name, struct brig_profile_settings *s, brig_error_t *err);

/* The sandbox in `sandbox_dir` uses the template its settings name
 * (s->template_name, its tree s->rootfs): recorded in the store and in
 * the dir, once the store says the name still has that tree. */
int brig_template_use(const struct brig_profile_settings *s, const char *sandbox_dir,
                      brig_error_t *err);
/* What brig_template_use recorded for the dir, forgotten; none is not an
 * error. */
int brig_template_unuse(const char *sandbox_dir, brig_error_t *err);

struct brig_template_import_result {
    bool reused;   /* the tree was there: another name's image */
    bool jemalloc; /* the image has libjemalloc.so.2 */
};

/* IMAGE.tar imported as `name` (template.h's top says how). Bad input
 * (an entry that would escape, a digest that doesn't match, no image)
 * is BRIG_E_INPUT, its message naming the entry or blob. */
int brig_template_import(const char *name, const char *archive,
                         struct brig_template_import_result *res, brig_error_t *err);

#endif
