#define _GNU_SOURCE
#include "sandbox/pod_userns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "container/state.h"
#include "base/path.h"
#include "process/idmap.h"
#include "rootfs/idmap_tree.h"
#include "sandbox/sandbox.h"
#include "sandbox/userns.h"

#define CRI_SANDBOX_ID "io.kubernetes.cri.sandbox-id"

static int set_host(struct brig_profile_settings *s, brig_error_t *err)
{
    free(s->userns);
    if ((s->userns = strdup(BRIG_USERNS_HOST)) == NULL)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    return 0;
}

/* The init of the pause container `id`, running. */
static int pause_init(const char *root, const char *id, pid_t *pid, brig_error_t *err)
{
    cleanup_close int root_fd = brig_state_root_open(root, false, err);
    if (root_fd < 0)
        return -1;
    cleanup_close int dir_fd = brig_state_dir_open(root_fd, id, false, err);
    cleanup_state struct brig_state *st = NULL;
    if (dir_fd < 0 || brig_state_read(dir_fd, id, &st, err) < 0)
        return -1;
    if (!brig_state_init_alive(st))
        return brig_error_set(err, 0, "the pod's sandbox container `%s` is not running", id);
    *pid = st->pid;
    return 0;
}

/* The pause container's range and namespace, if it has them; else none. */
static int join_pause(const char *root, const char *id, struct brig_profile_settings *s,
                      brig_error_t *err)
{
    struct brig_profile_settings pause;
    if (id == NULL || brig_sandbox_settings_read(root, id, &pause, err) < 0) {
        if (id && (*err)->errnum != ENOENT)
            return brig_error_wrap(err, "the pod's sandbox container");
        brig_error_release(err);
        return set_host(s, err);
    }
    bool has = brig_profile_userns_auto(&pause) && pause.userns_uid > 0 && pause.userns_gid > 0;
    s->userns_uid = pause.userns_uid;
    s->userns_gid = pause.userns_gid;
    brig_profile_settings_clear(&pause);
    if (!has)
        return set_host(s, err);
    pid_t pid = 0;
    if (pause_init(root, id, &pid, err) < 0)
        return brig_error_wrap(err, "the pod's user namespace");
    free(s->pod_userns);
    if (asprintf(&s->pod_userns, "/proc/%d/ns/user", (int) pid) < 0) {
        s->pod_userns = NULL;
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    return 0;
}

static int root_path(const char *bundle, const struct brig_spec *spec, char **out,
                     brig_error_t *err)
{
    if (spec->root == NULL || spec->root->path == NULL)
        return brig_error_set(err, 0, "sandbox profile: the pod's container has no root");
    cleanup_free char *joined = NULL;
    const char *path = spec->root->path;
    if (path[0] != '/' && bundle && asprintf(&joined, "%s/%s", bundle, path) < 0) {
        joined = NULL;
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    char *abs = realpath(joined ? joined : path, NULL);
    if (abs == NULL)
        return brig_error_set(err, errno, "root `%s`", joined ? joined : path);
    free(*out);
    *out = abs;
    return 0;
}

int brig_sandbox_pod_userns_prepare(const char *root, const char *bundle,
                                    const struct brig_spec *spec, struct brig_profile_settings *s,
                                    brig_error_t *err)
{
    free(s->pod_userns);
    s->pod_userns = NULL;
    s->userns_uid = s->userns_gid = 0;
    if (!brig_profile_userns_auto(s))
        return 0;
    if (brig_profile_is_pod_app(spec)
        && join_pause(root, brig_spec_annotation(spec, CRI_SANDBOX_ID), s, err) < 0)
        return -1;
    if (!brig_profile_userns_auto(s))
        return 0;
    return root_path(bundle, spec, &s->rootfs, err);
}

/* ---- the binds ---- */

/* Only what comes from the host's files: not its /proc, /sys or /dev. */
static bool mapped_source(const struct brig_mount *m, struct stat *st)
{
    static const char *const skip[] = { "/proc", "/sys", "/dev" };
    if (!brig_profile_mount_is_bind(m) || m->source == NULL || m->source[0] != '/')
        return false;
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++) {
        size_t n = strlen(skip[i]);
        if (strncmp(m->source, skip[i], n) == 0 && (m->source[n] == '/' || !m->source[n]))
            return false;
    }
    return stat(m->source, st) == 0 && (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode));
}

/* One bind at `target`: id-mapped, or as it is where its file system
 * can't map ids. */
static int bind_one(const char *source, bool dir, const char *target, int userns, brig_error_t *err)
{
    int fd = dir ? mkdir(target, 0700)
                 : open(target, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return brig_error_set(err, errno, "create `%s`", target);
    if (!dir)
        close(fd);
    if (brig_idmap_bind(source, target, userns, false, err) == 0)
        return 0;
    if (!brig_idmap_unsupported((*err)->errnum))
        return -1;
    brig_error_release(err);
    if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
        return brig_error_set(err, errno, "bind `%s` on `%s`", source, target);
    return 0;
}

static int bind_all(const struct brig_profile_settings *s, struct brig_spec *spec, int userns,
                    brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (asprintf(&dir, "%s/%s", s->data_dir, BRIG_SANDBOX_BINDS) < 0) {
        dir = NULL;
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    if (mkdir(dir, 0711) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", dir);
    for (size_t i = 0; i < spec->n_mounts; i++) {
        struct brig_mount *m = &spec->mounts[i];
        struct stat st;
        if (!mapped_source(m, &st))
            continue;
        char *target = NULL;
        if (asprintf(&target, "%s/%zu", dir, i) < 0)
            return brig_error_set(err, ENOMEM, "sandbox profile");
        if (bind_one(m->source, S_ISDIR(st.st_mode), target, userns, err) < 0) {
            free(target);
            return brig_error_wrap(err, "mounts[%zu] (%s)", i, m->destination);
        }
        free(m->source);
        m->source = target;
    }
    return 0;
}

/* ---- the root ---- */

/* Every mount's destination made in the image's root while it is
 * writable: the id-mapped root is read-only from the start. Best effort:
 * one that can't be made here is the runtime's to report. */
static void mount_points(const char *rootfs, const struct brig_spec *spec)
{
    cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; root >= 0 && i < spec->n_mounts; i++) {
        const struct brig_mount *m = &spec->mounts[i];
        struct stat st;
        bool file = brig_profile_mount_is_bind(m) && m->source && stat(m->source, &st) == 0
                    && !S_ISDIR(st.st_mode);
        brig_error_t ignored = NULL;
        int fd = file ? brig_path_mkfile_in_root(root, m->destination, 0644, &ignored)
                      : brig_path_mkdir_in_root(root, m->destination, 0755, &ignored);
        if (fd >= 0)
            close(fd);
        brig_error_release(&ignored);
    }
}

/* The image's root at DATA_DIR/tree, id-mapped (rootfs/idmap_tree.h). */
static int pod_tree(const struct brig_profile_settings *s, const struct brig_spec *spec, int userns,
                    brig_error_t *err)
{
    cleanup_free char *tree = NULL, *scratch = NULL;
    if (asprintf(&tree, "%s/%s", s->data_dir, BRIG_SANDBOX_TREE) < 0
        || asprintf(&scratch, "%s/%s", s->data_dir, BRIG_SANDBOX_LAYERS) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    mount_points(s->rootfs, spec);
    if (brig_sandbox_tree_unmount(s->data_dir, err) < 0)
        return -1;
    if ((mkdir(tree, 0755) < 0 && errno != EEXIST) || (mkdir(scratch, 0700) < 0 && errno != EEXIST))
        return brig_error_set(err, errno, "mkdir in `%s`", s->data_dir);
    int r = brig_idmap_tree(s->rootfs, tree, scratch, userns, err);
    rmdir(scratch);
    if (r < 0) {
        rmdir(tree);
        if (brig_idmap_unsupported((*err)->errnum))
            return brig_error_wrap(err, "the pod's root (without id-mapped mounts, set userns = "
                                        "\"host\" in the runtime's options file)");
        return brig_error_wrap(err, "the pod's root");
    }
    return 0;
}

int brig_sandbox_pod_userns_mount(const struct brig_profile_settings *s, struct brig_spec *spec,
                                  brig_error_t *err)
{
    if (brig_sandbox_make_reachable(s->data_dir, err) < 0)
        return -1;
    struct brig_id_mapping uids = { 0, (uint32_t) s->userns_uid, BRIG_SANDBOX_IDS };
    struct brig_id_mapping gids = { 0, (uint32_t) s->userns_gid, BRIG_SANDBOX_IDS };
    cleanup_close int userns = brig_userns_for_maps(&uids, 1, &gids, 1, err);
    if (userns < 0)
        return brig_error_wrap(err, "user namespace");
    if (pod_tree(s, spec, userns, err) < 0)
        return -1;
    if (bind_all(s, spec, userns, err) < 0)
        return brig_error_wrap(err, "the pod's binds");
    return brig_profile_apply_userns(spec, s, err);
}

/* DATA_DIR/NAME's mounts detached, its entries and itself removed. */
static int remove_mounted(const char *data_dir, const char *name, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (asprintf(&dir, "%s/%s", data_dir, name) < 0) {
        dir = NULL;
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    cleanup_dir DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open `%s`", dir);
    struct dirent *de;
    char path[PATH_MAX];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (brig_sandbox_unmount_all(path, err) < 0)
            return -1;
        if (unlink(path) < 0 && (errno != EISDIR || rmdir(path) < 0) && errno != ENOENT)
            return brig_error_set(err, errno, "remove `%s`", path);
    }
    if (rmdir(dir) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "remove `%s`", dir);
    return 0;
}

int brig_sandbox_pod_binds_remove(const char *data_dir, brig_error_t *err)
{
    if (remove_mounted(data_dir, BRIG_SANDBOX_BINDS, err) < 0)
        return -1;
    return remove_mounted(data_dir, BRIG_SANDBOX_LAYERS, err);
}
