#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "selfexe/selfexe.h"
#include "container/container.h"
#include "sandbox/dataimage.h"
#include "sandbox/profile.h"
#include "spec/spec.h"
#include "container/state.h"
#include "base/utils.h"

/* The sandbox profile's link to a container's life: settings resolved and
 * kept in the state dir at create, the data image mounted, the spec
 * rewritten; the same rewrite whenever the spec is read back (exec), and
 * the data unmounted at delete. */

#define PROFILE_FILE "profile"

/* A file next to the running brig (the build tree), or NULL. */
static char *beside_self(const char *name)
{
    char self[PATH_MAX];
    if (brig_selfexe_path(self, sizeof self) < 0)
        return NULL;
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dirname(self), name) < 0)
        return NULL;
    if (access(path, R_OK) != 0) {
        free(path);
        return NULL;
    }
    return path;
}

/* brig-init: $BRIG_INIT, the installed one, or the build tree's. */
static int locate_init(char **out, brig_error_t *err)
{
    const char *env = getenv("BRIG_INIT");
    char *found = NULL;
    if (env && *env)
        found = strdup(env);
#ifdef BRIG_INIT_PATH
    else if (access(BRIG_INIT_PATH, X_OK) == 0)
        found = strdup(BRIG_INIT_PATH);
#endif
    else
        found = beside_self("brig-init");
    if (found == NULL)
        return brig_error_set(err, 0, "sandbox profile: brig-init not found (set BRIG_INIT)");
    if (access(found, X_OK) != 0) {
        int saved = errno;
        brig_error_set(err, saved, "sandbox profile: brig-init `%s`", found);
        free(found);
        return -1;
    }
    *out = found;
    return 0;
}

static int locate_seccomp(char **out, brig_error_t *err)
{
    char *path = NULL;
    if (asprintf(&path, "%s/sandbox.json", BRIG_SECCOMP_DIR) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (access(path, R_OK) != 0) {
        free(path);
        path = beside_self("seccomp-profiles/sandbox.json");
    }
    if (path == NULL)
        return brig_error_set(err, ENOENT, "sandbox profile: seccomp profile `%s/sandbox.json`",
                              BRIG_SECCOMP_DIR);
    *out = path;
    return 0;
}

static int load_seccomp(const char *path, struct brig_seccomp **out, brig_error_t *err)
{
    cleanup_free char *json = NULL;
    size_t len = 0;
    if (brig_read_file(path, &json, &len, err) < 0)
        return brig_error_wrap(err, "sandbox profile");
    return brig_seccomp_parse(json, len, path, out, err);
}

/* Everything the settings lack, filled in; the rootfs checked. */
static int resolve_settings(const struct brig_create_options *o, struct brig_profile_settings *s,
                            brig_error_t *err)
{
    if (s->init_path == NULL && locate_init(&s->init_path, err) < 0)
        return -1;
    if (s->seccomp_path == NULL && locate_seccomp(&s->seccomp_path, err) < 0)
        return -1;
    if (s->data_dir == NULL) {
        /* A bundle's data lives with its state and goes with it. */
        cleanup_free char *root = realpath(o->root, NULL);
        if (root == NULL)
            return brig_error_set(err, errno, "state root `%s`", o->root);
        if (asprintf(&s->data_dir, "%s/%s", root, o->id) < 0)
            return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    struct stat st;
    if (stat(s->rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
        return brig_error_set(err, stat(s->rootfs, &st) < 0 ? errno : ENOTDIR,
                              "sandbox rootfs `%s` (build it with `make rootfs`)", s->rootfs);
    cleanup_free char *jemalloc = NULL;
    if (asprintf(&jemalloc, "%s%s", s->rootfs, BRIG_SANDBOX_JEMALLOC) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (access(jemalloc, R_OK) != 0)
        return brig_error_set(err, errno,
                              "sandbox rootfs `%s` has no jemalloc at %s (rebuild it with `make rootfs`)",
                              s->rootfs, BRIG_SANDBOX_JEMALLOC);
    if (s->init_config && access(s->init_config, R_OK) != 0)
        return brig_error_set(err, errno, "services file `%s`", s->init_config);
    return 0;
}

/* The settings kept in the state dir (written before anything is mounted,
 * so delete knows what to undo), the data image mounted, the spec rewritten. */
static int install(int dir_fd, const struct brig_profile_settings *s, struct brig_spec *spec,
                   brig_error_t *err)
{
    cleanup_free char *text = NULL;
    struct brig_seccomp *seccomp = NULL;
    int r = brig_profile_settings_format(s, &text, err);
    if (r == 0)
        r = brig_write_file_atomic_at(dir_fd, PROFILE_FILE, text, strlen(text), 0600, err);
    if (r == 0)
        r = load_seccomp(s->seccomp_path, &seccomp, err);
    if (r == 0)
        r = brig_data_image_setup(s->data_dir, s->data_size, BRIG_SANDBOX_UID, BRIG_SANDBOX_GID, err);
    if (r == 0)
        r = brig_profile_apply(spec, s, brig_steal_ptr(seccomp), err);
    brig_seccomp_free_spec(seccomp);
    return r;
}

int brig_container_profile_setup(const struct brig_create_options *o, struct brig_spec *spec,
                                 int dir_fd, brig_error_t *err)
{
    int asked = brig_profile_requested(spec, err);
    if (asked < 0)
        return -1;
    if (o->profile && strcmp(o->profile, BRIG_PROFILE_SANDBOX) != 0)
        return brig_error_set(err, 0, "--profile: unknown profile `%s` (known: sandbox)", o->profile);
    if (!asked && o->profile == NULL && o->profile_settings == NULL)
        return 0;
    struct brig_profile_settings s = { 0 };
    int r = 0;
    if (o->profile_settings) {
        cleanup_free char *text = NULL;
        r = brig_profile_settings_format(o->profile_settings, &text, err);
        if (r == 0)
            r = brig_profile_settings_parse(text, &s, err);
    } else {
        r = brig_profile_settings_default(&s, err);
    }
    if (r == 0)
        r = resolve_settings(o, &s, err);
    if (r == 0)
        r = install(dir_fd, &s, spec, err);
    brig_profile_settings_clear(&s);
    return r;
}

static int read_settings(int dir_fd, const char *name, struct brig_profile_settings *s,
                         brig_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len = 0;
    *s = (struct brig_profile_settings) { 0 };
    if (brig_read_file_at(dir_fd, name, &text, &len, err) < 0) {
        if ((*err)->errnum == ENOENT) {
            brig_error_release(err);
            return 0;
        }
        return -1;
    }
    if (brig_profile_settings_parse(text, s, err) < 0) {
        brig_profile_settings_clear(s);
        return -1;
    }
    return 1;
}

int brig_container_profile_reapply(int dir_fd, struct brig_spec *spec, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r <= 0)
        return r;
    struct brig_seccomp *seccomp = NULL;
    r = load_seccomp(s.seccomp_path, &seccomp, err);
    if (r == 0)
        r = brig_profile_apply(spec, &s, seccomp, err);
    brig_profile_settings_clear(&s);
    return r;
}

int brig_container_profile_teardown(int dir_fd, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r <= 0)
        return r;
    r = s.data_dir ? brig_data_image_unmount(s.data_dir, err) : 0;
    brig_profile_settings_clear(&s);
    return r;
}

/* The data image of a bundle run with --profile lives in the state dir,
 * which checkpoint's delete removes: a restore would find it gone and make
 * an empty one, in a dir of the state root that no container owns (and a
 * --leave-running snapshot fares the same once the container is deleted). */
static bool data_in_state_dir(const struct brig_profile_settings *s, const char *root,
                              const char *id)
{
    cleanup_free char *real = realpath(root, NULL);
    cleanup_free char *state = NULL;
    if (real == NULL || asprintf(&state, "%s/%s", real, id) < 0)
        return false;
    return s->data_dir && strcmp(s->data_dir, state) == 0;
}

int brig_container_profile_export(int dir_fd, const char *root, const char *id, int image_fd,
                                  brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r <= 0)
        return r;
    cleanup_free char *text = NULL;
    if (data_in_state_dir(&s, root, id))
        r = brig_error_set(err, 0,
                           "its /mnt/data lives in its state dir and would not outlive it "
                           "(checkpoint a `brig sandbox`, whose data has a dir of its own)");
    else
        r = brig_profile_settings_format(&s, &text, err);
    if (r == 0)
        r = brig_write_file_atomic_at(image_fd, BRIG_PROFILE_IMAGE_FILE, text, strlen(text), 0600,
                                      err);
    brig_profile_settings_clear(&s);
    return r;
}

int brig_container_profile_import(int image_fd, int dir_fd, struct brig_spec *spec,
                                  brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(image_fd, BRIG_PROFILE_IMAGE_FILE, &s, err);
    if (r < 0)
        return brig_error_wrap(err, "%s", BRIG_PROFILE_IMAGE_FILE);
    if (r == 0)
        return 0;
    r = install(dir_fd, &s, spec, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 1;
}
