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
#include "base/utils.h"
#include "container/state.h"
#include "sandbox/dataimage.h"
#include "sandbox/egress_client.h"
#include "sandbox/idrange.h"
#include "sandbox/layout.h"
#include "sandbox/limits_view.h"
#include "sandbox/tree_image.h"
#include "sandbox/locate.h"
#include "sandbox/sandbox.h"
#include "sandbox/pod_userns.h"
#include "sandbox/userns.h"
#include "selfexe/selfexe.h"
#include "spec/spec.h"

/* The sandbox's link to a container's life. Before create (the caller's
 * side of the seam): settings resolved, the spec rewritten. Through the
 * handler: the settings kept in the state dir and the data image mounted
 * at create; the same rewrite whenever the spec is read back; every exec
 * made to follow the profile; the data unmounted at delete; the settings
 * carried across a checkpoint. */

#define PROFILE_FILE "profile"
/* In a checkpoint's image dir, beside criu's images. */
#define BRIG_PROFILE_IMAGE_FILE "brig-profile"

/* brig-init: $BRIG_INIT, the installed one, or the build tree's. */
static int locate_init(char **out, brig_error_t *err)
{
    if (brig_sandbox_locate_helper("brig-init", out, err) < 0)
        return brig_error_wrap(err, "sandbox profile");
    return 0;
}

static int locate_seccomp(char **out, brig_error_t *err)
{
    char *path = NULL;
    if (asprintf(&path, "%s/sandbox.json", BRIG_SECCOMP_DIR) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (access(path, R_OK) != 0) {
        free(path);
        path = brig_beside_self("seccomp-profiles/sandbox.json");
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

/* The state dir create will make: its data lives there unless told
 * otherwise. The root may not exist yet (create makes it). */
static int state_dir_path(const char *root, const char *id, char **out, brig_error_t *err)
{
    cleanup_free char *real = realpath(root, NULL);
    cleanup_free char *cwd = NULL;
    if (real == NULL && errno != ENOENT)
        return brig_error_set(err, errno, "state root `%s`", root);
    if (real == NULL && root[0] != '/' && (cwd = getcwd(NULL, 0)) == NULL)
        return brig_error_set(err, errno, "current directory");
    int n = real ? asprintf(out, "%s/%s", real, id)
                 : asprintf(out, "%s%s%s/%s", cwd ? cwd : "", cwd ? "/" : "", root, id);
    if (n < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    return 0;
}

/* Its own view of its limits: lxcfs's files, and as many CPUs as its
 * quota. Without lxcfs it sees the host's numbers, and create says so. */
static int limits_view(const struct brig_create_options *o, struct brig_profile_settings *s,
                       brig_error_t *err)
{
    if (s->cpuset == NULL && brig_sandbox_cpuset(o->id, s->cpus_milli, &s->cpuset, err) < 0)
        return -1;
    if (s->lxcfs)
        return 0;
    brig_error_t why = NULL;
    if (brig_lxcfs_ensure(&s->lxcfs, &why) == 0)
        return 0;
    int n = asprintf(&s->notice,
                     "no view of its own limits (%s): it sees the host's CPUs and memory in "
                     "/proc and /sys",
                     why->msg);
    brig_error_release(&why);
    if (n < 0) {
        s->notice = NULL;
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    return 0;
}

/* Everything the settings lack, filled in; the rootfs checked. */
static int resolve_settings(const struct brig_create_options *o, struct brig_profile_settings *s,
                            brig_error_t *err)
{
    if (s->init_path == NULL && locate_init(&s->init_path, err) < 0)
        return -1;
    if (s->seccomp_path == NULL && locate_seccomp(&s->seccomp_path, err) < 0)
        return -1;
    /* The data lives in the state dir unless told otherwise; in a user
     * namespace the sandbox's root must reach its data and its tree, which
     * the state root (0700) hides: they get a dir of their own, named by
     * the state dir. */
    if (s->data_dir == NULL) {
        if (state_dir_path(o->root, o->id, &s->data_dir, err) < 0)
            return -1;
        if (brig_profile_userns_auto(s)) {
            cleanup_free char *state_dir = brig_steal_ptr(s->data_dir);
            if (brig_sandbox_private_dir(state_dir, &s->data_dir, err) < 0)
                return -1;
            s->data_private = 1;
        }
    }
    /* The default tree may have been shipped as its image. */
    if (brig_tree_ensure(s->rootfs, err) < 0)
        return -1;
    struct stat st;
    if (stat(s->rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
        return brig_error_set(err, stat(s->rootfs, &st) < 0 ? errno : ENOTDIR,
                              "sandbox rootfs `%s` (build it with `make rootfs`)", s->rootfs);
    /* A template's tree (s->jemalloc set) was searched at its import,
     * inside the tree, where a symlink resolves as the sandbox will. */
    cleanup_free char *jemalloc = NULL;
    if (asprintf(&jemalloc, "%s%s", s->rootfs, BRIG_SANDBOX_JEMALLOC) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (s->jemalloc == NULL && access(jemalloc, R_OK) != 0)
        return brig_error_set(
            err, errno, "sandbox rootfs `%s` has no jemalloc at %s (rebuild it with `make rootfs`)",
            s->rootfs, BRIG_SANDBOX_JEMALLOC);
    if (s->init_config && access(s->init_config, R_OK) != 0)
        return brig_error_set(err, errno, "services file `%s`", s->init_config);
    if (brig_profile_on_packages(s) && brig_egress_check_conf(err) < 0)
        return -1;
    if (limits_view(o, s, err) < 0)
        return -1;
    /* Where both have one, TLS through the proxy trusts what the host does. */
    cleanup_free char *tree_ca = NULL;
    if (asprintf(&tree_ca, "%s%s", s->rootfs, BRIG_SANDBOX_CA_BUNDLE) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (brig_profile_on_packages(s) && s->ca_bundle == NULL
        && access(BRIG_SANDBOX_CA_BUNDLE, R_OK) == 0 && access(tree_ca, F_OK) == 0
        && (s->ca_bundle = strdup(BRIG_SANDBOX_CA_BUNDLE)) == NULL)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    return 0;
}

/* A pod's container (profile_pod.c): its image, mounts and namespaces
 * are the pod's, so no tree, data image or proxy; the seccomp profile and
 * the limits are the sandbox's, the user namespace the pod's
 * (pod_userns.h), with a private dir for its binds. */
static int pod_settings(const struct brig_create_options *o, struct brig_profile_settings *s,
                        brig_error_t *err)
{
    s->pod = 1;
    free(s->network);
    s->network = NULL;
    free(s->data_dir);
    s->data_dir = NULL;
    if ((s->seccomp_path == NULL && locate_seccomp(&s->seccomp_path, err) < 0)
        || (s->init_path == NULL && locate_init(&s->init_path, err) < 0))
        return -1;
    if (brig_sandbox_pod_userns_prepare(o->root, o->bundle, o->config->spec, s, err) < 0)
        return -1;
    if (!brig_profile_userns_auto(s))
        return 0;
    cleanup_free char *state_dir = NULL;
    if (state_dir_path(o->root, o->id, &state_dir, err) < 0
        || brig_sandbox_private_dir(state_dir, &s->data_dir, err) < 0)
        return -1;
    s->data_private = 1;
    return 0;
}

/* The spec rewritten into the sandbox's, with its seccomp profile. */
static int rewrite_spec(struct brig_spec *spec, const struct brig_profile_settings *s,
                        brig_error_t *err)
{
    struct brig_seccomp *seccomp = NULL;
    if (load_seccomp(s->seccomp_path, &seccomp, err) < 0)
        return -1;
    return brig_profile_apply(spec, s, seccomp, err);
}

static int copy_settings(const struct brig_profile_settings *from, struct brig_profile_settings *to,
                         brig_error_t *err)
{
    cleanup_free char *text = NULL;
    *to = (struct brig_profile_settings){ 0 };
    if (brig_profile_settings_format(from, &text, err) < 0)
        return -1;
    return brig_profile_settings_parse(text, to, err);
}

int brig_sandbox_prepare(struct brig_create_options *o, const char *profile,
                         const struct brig_profile_settings *settings,
                         struct brig_profile_settings *use, brig_error_t *err)
{
    *use = (struct brig_profile_settings){ 0 };
    int asked = brig_profile_requested(o->config->spec, err);
    if (asked < 0)
        return brig_error_wrap(err, "%s", o->config->config_path);
    if (profile && strcmp(profile, BRIG_PROFILE_SANDBOX) != 0)
        return brig_error_set(err, 0, "unknown profile `%s` (known: sandbox)", profile);
    if (!asked && profile == NULL && settings == NULL)
        return 0;
    int r = settings ? copy_settings(settings, use, err) : brig_profile_settings_default(use, err);
    if (r == 0 && brig_profile_is_pod_container(o->config->spec))
        r = pod_settings(o, use, err);
    else if (r == 0)
        r = resolve_settings(o, use, err);
    if (r == 0)
        r = rewrite_spec(o->config->spec, use, err);
    if (r < 0) {
        brig_profile_settings_clear(use);
        return -1;
    }
    o->handler = &brig_sandbox_handler;
    o->handler_data = use;
    return 0;
}

/* ---- the handler ---- */

/* The settings kept in a dir; 0 when there are none. */
static int read_settings(int dir_fd, const char *name, struct brig_profile_settings *s,
                         brig_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len = 0;
    *s = (struct brig_profile_settings){ 0 };
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

int brig_sandbox_settings_read(const char *root, const char *id, struct brig_profile_settings *s,
                               brig_error_t *err)
{
    cleanup_free char *path = NULL;
    *s = (struct brig_profile_settings){ 0 };
    if (asprintf(&path, "%s/%s", root, id) < 0) {
        path = NULL;
        return brig_error_set(err, ENOMEM, "sandbox settings");
    }
    cleanup_close int dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0)
        return brig_error_kind(err, ENOENT, "no sandbox container `%s`", id);
    int r = read_settings(dir_fd, PROFILE_FILE, s, err);
    if (r == 0)
        return brig_error_kind(err, ENOENT, "`%s` is not a sandbox", id);
    return r < 0 ? -1 : 0;
}

static int write_settings(int dir_fd, const char *name, const struct brig_profile_settings *s,
                          brig_error_t *err)
{
    cleanup_free char *text = NULL;
    if (brig_profile_settings_format(s, &text, err) < 0)
        return -1;
    return brig_write_file_atomic_at(dir_fd, name, text, strlen(text), 0600, err);
}

/* A new sandbox's range picked (or a restored one's claimed again), the
 * settings kept with it, and the spec completed with its user namespace. */
static int setup_userns(int dir_fd, struct brig_profile_settings *s, struct brig_spec *spec,
                        brig_error_t *err)
{
    if (!brig_profile_userns_auto(s))
        return 0;
    /* What the init binds from the host, it looks up as the sandbox's root. */
    if (brig_sandbox_check_reachable(s->init_path, err) < 0
        || (s->init_config && brig_sandbox_check_reachable(s->init_config, err) < 0))
        return -1;
    if (brig_sandbox_userns_acquire(s, err) < 0 || write_settings(dir_fd, PROFILE_FILE, s, err) < 0)
        return -1;
    if (brig_sandbox_tree_mount(s, err) < 0)
        return -1;
    return brig_profile_apply_userns(spec, s, err);
}

/* A pause container's own range (the others' is the pause's), kept with
 * the settings before anything is mounted. */
static int pod_userns_setup(int dir_fd, struct brig_profile_settings *s, struct brig_spec *spec,
                            brig_error_t *err)
{
    if (s->pod_userns == NULL
        && (brig_sandbox_userns_acquire(s, err) < 0
            || write_settings(dir_fd, PROFILE_FILE, s, err) < 0))
        return -1;
    return brig_sandbox_pod_userns_mount(s, spec, err);
}

/* The settings are kept before anything is mounted, so delete knows what
 * to undo; then the user namespace and the data image, owned by the
 * sandbox user as the host sees it. At restore the settings are there
 * already. */
static int sandbox_setup(const void *data, int dir_fd, struct brig_spec *spec, brig_error_t *err)
{
    struct brig_profile_settings s;
    if (data && write_settings(dir_fd, PROFILE_FILE, data, err) < 0)
        return -1;
    /* A new container's private data dir is new: what a crashed one of
     * the same state dir left there (its data, its range) goes first. */
    const struct brig_profile_settings *given = data;
    if (given && given->data_private && brig_sandbox_private_reset(given->data_dir, err) < 0)
        return -1;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r == 0)
        return brig_error_set(err, ENOENT, "no sandbox settings in the state dir");
    if (r > 0 && s.pod) {
        /* the pod's own volumes are its workspace */
        if (brig_profile_userns_auto(&s))
            r = pod_userns_setup(dir_fd, &s, spec, err);
        brig_profile_settings_clear(&s);
        return r < 0 ? -1 : 0;
    }
    if (r > 0)
        r = setup_userns(dir_fd, &s, spec, err);
    uint32_t uid, gid;
    brig_profile_user(&s, &uid, &gid);
    if (r >= 0 && brig_profile_userns_auto(&s))
        brig_sandbox_user_on_host(&s, &uid, &gid);
    if (r >= 0)
        r = brig_data_image_setup(s.data_dir, s.data_size, uid, gid, err);
    /* Its dirs are searchable by others now: the data's own root is not. */
    if (r >= 0 && brig_profile_userns_auto(&s))
        r = brig_sandbox_data_close(s.data_dir, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

static int sandbox_load_spec(int dir_fd, struct brig_spec *spec, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r > 0)
        r = rewrite_spec(spec, &s, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

/* The state dir's path, as the proxy's registry names a sandbox. */
static int state_dir_of(int dir_fd, char *out, size_t size, brig_error_t *err)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
    ssize_t n = readlink(link, out, size - 1);
    if (n <= 0)
        return brig_error_set(err, errno, "state dir");
    out[n] = '\0';
    return 0;
}

static int sandbox_exec_process(int dir_fd, const struct brig_spec *spec, struct brig_process *p,
                                brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r == 0)
        r = brig_error_set(err, ENOENT, "no sandbox settings in the state dir");
    else if (r > 0 && spec->process == NULL)
        r = brig_error_set(err, 0, "the sandbox's config has no process");
    else if (r > 0)
        r = brig_profile_impose_exec(p, spec->process, &s, err);
    /* A proxy that died since is started again, and listens in this
     * sandbox (and every other it served) before this exec runs. */
    char dir[PATH_MAX];
    if (r >= 0 && brig_profile_on_packages(&s)
        && (state_dir_of(dir_fd, dir, sizeof dir, err) < 0 || brig_egress_relisten(dir, err) < 0))
        r = -1;
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

int brig_sandbox_port_prepare(int dir_fd, struct brig_strv *forced, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r > 0 && (s.pod || !s.detached_init))
        r = 0;
    if (r > 0 && brig_profile_exec_forced_env(&s, forced) < 0)
        r = brig_error_set(err, ENOMEM, "sandbox profile");
    char dir[PATH_MAX];
    if (r > 0 && brig_profile_on_packages(&s)
        && (state_dir_of(dir_fd, dir, sizeof dir, err) < 0 || brig_egress_relisten(dir, err) < 0))
        r = -1;
    brig_profile_settings_clear(&s);
    return r;
}

static bool is_dir_of(int dir_fd, const char *path);

/* The packages-only network: the proxy listening in the sandbox's network
 * namespace before anyone hears of the sandbox. */
static int sandbox_spawned(int dir_fd, pid_t pid, brig_error_t *err)
{
    struct brig_profile_settings s;
    char dir[PATH_MAX];
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r > 0 && brig_profile_on_packages(&s))
        r = state_dir_of(dir_fd, dir, sizeof dir, err) < 0 ? -1
                                                           : brig_egress_register(dir, pid, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

/* The data and the tree unmounted; the range freed when the data dir is
 * the state dir (a `brig sandbox` keeps its range with its data until
 * `rm`). */
static int sandbox_teardown(int dir_fd, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    if (r <= 0 || s.data_dir == NULL) {
        brig_profile_settings_clear(&s);
        return r < 0 ? -1 : 0;
    }
    /* Best effort: a proxy that can't be told finds the sandbox gone from
     * its registry, or its init dead, at its next look. */
    char state_dir[PATH_MAX];
    if (brig_profile_on_packages(&s) && state_dir_of(dir_fd, state_dir, sizeof state_dir, err) == 0)
        brig_egress_unregister(state_dir, err);
    brig_error_release(err);
    r = brig_data_image_unmount(s.data_dir, err);
    if (r == 0)
        r = brig_sandbox_pod_binds_remove(s.data_dir, err);
    if (r == 0)
        r = brig_sandbox_tree_unmount(s.data_dir, err);
    if (r == 0 && (s.data_private || is_dir_of(dir_fd, s.data_dir)))
        r = brig_idrange_release(s.data_dir, err);
    if (r == 0 && s.data_private)
        r = brig_sandbox_private_remove(s.data_dir, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

/* The data image of a bundle run with --profile lives in the state dir,
 * which checkpoint's delete removes: a restore would find it gone and make
 * an empty one, in a dir of the state root that no container owns (and a
 * --leave-running snapshot fares the same once the container is deleted). */
static bool is_dir_of(int dir_fd, const char *path)
{
    struct stat a, b;
    return path && fstat(dir_fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev
           && a.st_ino == b.st_ino;
}

static int sandbox_checkpoint(int dir_fd, int image_fd, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(dir_fd, PROFILE_FILE, &s, err);
    /* The same dir however its path was spelled. */
    if (r > 0 && (s.data_private || is_dir_of(dir_fd, s.data_dir)))
        r = brig_error_set(err, 0,
                           "its /mnt/data goes with the container and would not outlive it "
                           "(checkpoint a `brig sandbox`, whose data has a dir of its own)");
    if (r > 0)
        r = write_settings(image_fd, BRIG_PROFILE_IMAGE_FILE, &s, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

static int sandbox_restore(int image_fd, int dir_fd, struct brig_spec *spec, brig_error_t *err)
{
    struct brig_profile_settings s;
    int r = read_settings(image_fd, BRIG_PROFILE_IMAGE_FILE, &s, err);
    if (r < 0)
        return brig_error_wrap(err, "%s", BRIG_PROFILE_IMAGE_FILE);
    if (r == 0)
        r = brig_error_set(err, ENOENT, "the images have no %s", BRIG_PROFILE_IMAGE_FILE);
    else
        r = write_settings(dir_fd, PROFILE_FILE, &s, err);
    /* Its range claimed again before anything of it is shared with it. */
    if (r == 0 && brig_profile_userns_auto(&s))
        r = brig_sandbox_userns_acquire(&s, err);
    if (r == 0)
        r = brig_sandbox_images_share(image_fd, &s, err);
    if (r == 0)
        r = rewrite_spec(spec, &s, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : 0;
}

const struct brig_handler brig_sandbox_handler = {
    .name = "sandbox",
    .state_marker = PROFILE_FILE,
    .image_marker = BRIG_PROFILE_IMAGE_FILE,
    .setup = sandbox_setup,
    .spawned = sandbox_spawned,
    .load_spec = sandbox_load_spec,
    .exec_process = sandbox_exec_process,
    .teardown = sandbox_teardown,
    .checkpoint = sandbox_checkpoint,
    .restore = sandbox_restore,
};

const struct brig_handler *const brig_sandbox_handlers[] = { &brig_sandbox_handler, NULL };
