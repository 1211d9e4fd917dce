#define _GNU_SOURCE
#include "container/checkpoint.h"

#include <criu.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "cgroup/cgroup.h"
#include "base/cleanup.h"
#include "container/container.h"
#include "container/handler.h"
#include "container/provision.h"
#include "base/path.h"
#include "container/state.h"
#include "base/utils.h"

#define EXT_NETNS_KEY "extRootNetNS"
/* In the state dir: the rootfs bound here is criu's --root while it restores. */
#define CRIU_ROOT "criu-root"

/* Pipes and files of the caller's namespace that the init had as stdio at
 * dump time are replaced by ours, so whoever restores it gets its output. */
static int inherit_stdio(struct brig_criu *c, const int *stdio, brig_error_t *err)
{
    cleanup_free char *text = NULL;
    if (brig_read_file_at(c->image_fd, BRIG_CRIU_DESCRIPTORS, &text, NULL, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return -1;
        brig_error_release(err); /* not written by brig: nothing to reconnect */
        return 0;
    }
    char msg[128];
    yajl_val tree = yajl_tree_parse(text, msg, sizeof msg);
    if (tree == NULL || !YAJL_IS_ARRAY(tree)) {
        yajl_tree_free(tree);
        return brig_error_set(err, 0, "%s: not a JSON array", BRIG_CRIU_DESCRIPTORS);
    }
    int r = 0;
    for (size_t i = 0; r == 0 && i < tree->u.array.len && i < 3; i++) {
        const char *s = YAJL_GET_STRING(tree->u.array.values[i]);
        bool ours = s && (strncmp(s, "pipe:", 5) == 0 || strncmp(s, "file[", 5) == 0);
        if (ours && criu_local_add_inherit_fd(c->opts, stdio ? stdio[i] : (int) i, s) < 0)
            r = brig_error_set(err, ENOMEM, "inherit fd %zu", i);
    }
    yajl_tree_free(tree);
    return r;
}

/* criu mounts the external binds, and the file systems it recreates (a
 * tmpfs at /run), onto their destinations inside its root: they must
 * exist, as create would have made them (a root restored from a new
 * snapshot of the image, as containerd restores, has none of them).
 * Destinations inside a file system of the spec (a tmpfs /dev, sysfs at
 * /sys) are criu's to recreate with it. */
static bool on_spec_filesystem(const struct brig_spec *spec, const char *dest)
{
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct brig_mount *m = &spec->mounts[i];
        size_t n = strlen(m->destination);
        if (m->type && strcmp(m->type, "bind") != 0 && strncmp(dest, m->destination, n) == 0
            && dest[n] == '/')
            return true;
    }
    return false;
}

static int make_mountpoints(const struct brig_spec *spec, const char *rootfs, const char *bundle,
                            brig_error_t *err)
{
    cleanup_close int root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        return brig_error_set(err, errno, "rootfs `%s`", rootfs);
    cleanup_close int bundle_fd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (bundle_fd < 0)
        return brig_error_set(err, errno, "bundle `%s`", bundle);
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct brig_mount *m = &spec->mounts[i];
        if (on_spec_filesystem(spec, m->destination))
            continue;
        if (m->source == NULL || m->type == NULL || strcmp(m->type, "bind") != 0) {
            int fd = brig_path_mkdir_in_root(root_fd, m->destination, 0755, err);
            if (fd < 0)
                return brig_error_wrap(err, "mount on `%s`", m->destination);
            close(fd);
            continue;
        }
        struct stat st;
        if (fstatat(bundle_fd, m->source, &st, 0) < 0)
            return brig_error_set(err, errno, "mount `%s` on `%s`: source", m->source,
                                  m->destination);
        int fd = S_ISDIR(st.st_mode) ? brig_path_mkdir_in_root(root_fd, m->destination, 0755, err)
                                     : brig_path_mkfile_in_root(root_fd, m->destination, 0644, err);
        if (fd < 0)
            return brig_error_wrap(err, "mount `%s` on `%s`", m->source, m->destination);
        close(fd);
    }
    return 0;
}

static int add_cg_root(void *data, const char *controllers, const char *root)
{
    struct brig_criu *c = data;
    return criu_local_add_cg_root(c->opts, (char *) controllers, (char *) root);
}

/* The cgroup criu puts the restored tree in, in each hierarchy, relative
 * to its root ("/brig/c2"), as --cgroup-root wants it. */
static int set_cgroup_root(struct brig_criu *c, const struct brig_cgroup *cg, brig_error_t *err)
{
    return brig_cgroup_each_root(cg, add_cg_root, c, err);
}

/* With --manage-cgroups-mode ignore criu moves no process: criu swrk, and
 * with it the tree it restores, starts in the container's cgroup instead.
 * (Not in the other modes: two more processes could trip a pids limit the
 * restored tree already fills.) *back is where the caller returns to. */
static int enter_cgroup(const struct brig_cgroup *cg, struct brig_cgroup *back, brig_error_t *err)
{
    if (brig_cgroup_open_own(back, err) < 0)
        return -1;
    return brig_cgroup_add_pid(cg, getpid(), err);
}

struct restore_run {
    const struct brig_restore_options *o;
    struct brig_bundle bundle;
    struct brig_spec *spec; /* bundle.spec */
    struct brig_state *st;  /* the provision's */
    struct brig_criu criu;
    int netns_fd;
    char *criu_root;
    bool root_mounted;
};

static int prepare_criu(struct restore_run *rr, const struct brig_cgroup *cg, brig_error_t *err)
{
    struct brig_criu *c = &rr->criu;
    if (inherit_stdio(c, rr->o->stdio, err) < 0)
        return -1;
    if (make_mountpoints(rr->spec, rr->st->rootfs, rr->st->bundle, err) < 0)
        return -1;
    if (brig_criu_add_bind_mounts(c, rr->spec, rr->st->bundle, err) < 0
        || brig_criu_add_userns_mounts(c, rr->spec, rr->st->rootfs, 0, err) < 0)
        return -1;
    const struct brig_namespace *net = brig_spec_namespace(rr->spec, BRIG_NS_NETWORK);
    if (net && net->path) {
        /* Inherited by criu swrk, so not close-on-exec. */
        rr->netns_fd = open(net->path, O_RDONLY);
        if (rr->netns_fd < 0)
            return brig_error_set(err, errno, "network namespace `%s`", net->path);
        if (criu_local_add_inherit_fd(c->opts, rr->netns_fd, EXT_NETNS_KEY) < 0)
            return brig_error_set(err, ENOMEM, "network namespace");
    }
    if (cg->path && set_cgroup_root(c, cg, err) < 0)
        return -1;
    /* criu wants a root of its own to pivot into; a bind of the rootfs in the
     * state dir (on /run, never inside the bundle) is left when it is done. */
    if (mkdir(rr->criu_root, 0700) < 0)
        return brig_error_set(err, errno, "create `%s`", rr->criu_root);
    if (mount(rr->st->rootfs, rr->criu_root, NULL, MS_BIND | MS_REC, NULL) < 0)
        return brig_error_set(err, errno, "bind rootfs `%s` on `%s`", rr->st->rootfs,
                              rr->criu_root);
    rr->root_mounted = true;
    /* criu rebuilds every mount's flags but the root's: it takes the root
     * as it finds it, so a read-only root must be read-only here already. */
    if (rr->spec->root && rr->spec->root->readonly
        && mount(NULL, rr->criu_root, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
        return brig_error_set(err, errno, "remount `%s` read-only", rr->criu_root);
    if (criu_local_set_root(c->opts, rr->criu_root) < 0)
        return brig_error_set(err, ENOMEM, "criu root");
    return 0;
}

static void release_criu_root(struct restore_run *rr)
{
    if (rr->root_mounted)
        umount2(rr->criu_root, MNT_DETACH);
    rr->root_mounted = false;
    if (rr->criu_root)
        rmdir(rr->criu_root);
}

/* criu brings the process tree back into the provisioned container. */
static int run_criu(struct restore_run *rr, struct provision *p, pid_t *pid, brig_error_t *err)
{
    const struct brig_restore_options *o = rr->o;
    if (asprintf(&rr->criu_root, "%s/%s/%s", o->root, o->id, CRIU_ROOT) < 0) {
        rr->criu_root = NULL;
        return brig_error_set(err, ENOMEM, "restore");
    }
    int r = prepare_criu(rr, &p->cgroup, err);
    cleanup_cgroup struct brig_cgroup back = BRIG_CGROUP_INIT;
    if (r == 0 && p->cgroup.path && o->criu.cg_mode == BRIG_CG_MODE_IGNORE)
        r = enter_cgroup(&p->cgroup, &back, err);
    if (r == 0) {
        *pid = criu_local_restore_child(rr->criu.opts);
        /* Out again at once: the container's cgroup is the container's. */
        if (back.path && brig_cgroup_add_pid(&back, getpid(), err) < 0) {
            if (*pid > 0)
                kill(*pid, SIGKILL);
            r = -1;
        } else if (*pid <= 0) {
            r = brig_criu_failed(&rr->criu, "restore", *pid, err);
        } else if (brig_cgroup_adopt(&p->cgroup, *pid, err) < 0) {
            kill(*pid, SIGKILL);
            r = -1;
        }
    }
    release_criu_root(rr);
    return r;
}

/* A checkpointed handler's container comes back one: the bundle's raw spec
 * gets its layer's rewrite (its mounts, user, seccomp, limits, init)
 * before anything below reads it, then the handler's set-up. */
static int restore_handler(struct restore_run *rr, struct provision *p, brig_error_t *err)
{
    const struct brig_handler *h = NULL;
    if (brig_handler_of(rr->criu.image_fd, BRIG_HANDLER_IMAGE_FILE, &h, err) < 0)
        return -1;
    if (h == NULL)
        return 0;
    if (h->restore && h->restore(rr->criu.image_fd, p->dir_fd, rr->bundle.spec, err) < 0)
        return brig_error_wrap(err, "%s", h->name);
    return provision_handler(p, h, NULL, rr->bundle.spec, err);
}

static int restore(const struct brig_restore_options *o, pid_t *init_pid, brig_error_t *err)
{
    struct restore_run rr = { .o = o, .netns_fd = -1 };
    /* The images first: a wrong image path must fail before any state exists. */
    int r = brig_criu_begin(&rr.criu, &o->criu, false, BRIG_CRIU_RESTORE_LOG, err);
    if (r == 0 && faccessat(rr.criu.image_fd, "inventory.img", F_OK, 0) < 0)
        r = brig_error_set(err, 0, "image path `%s`: no checkpoint there (no inventory.img)",
                           o->criu.image_path);
    if (r == 0)
        r = brig_bundle_load(o->bundle, &rr.bundle, err);
    rr.spec = rr.bundle.spec;
    struct provision p = { .root_fd = -1, .dir_fd = -1, .cgroup = { NULL, -1 } };
    if (r == 0)
        r = provision_begin(&p, o->root, o->id, err);
    if (r == 0)
        r = restore_handler(&rr, &p, err);
    struct brig_create_options co = {
        .root = o->root,
        .id = o->id,
        .bundle = o->bundle,
        .no_cgroup = o->no_cgroup,
        .systemd_cgroup = o->systemd_cgroup,
    };
    if (r == 0)
        r = provision_container(&p, &co, &rr.bundle, NULL, err);
    rr.st = p.state;
    pid_t pid = 0;
    if (r == 0)
        r = run_criu(&rr, &p, &pid, err);
    if (r == 0 && (r = provision_started(&p, pid, o->pid_file, err)) == 0)
        *init_pid = pid;
    if (r < 0 && p.dir_fd >= 0)
        provision_undo(&p);
    provision_end(&p);
    brig_closep(&rr.netns_fd);
    free(rr.criu_root);
    brig_bundle_clear(&rr.bundle);
    brig_criu_end(&rr.criu);
    return r;
}

int brig_container_restore(const struct brig_restore_options *o, pid_t *init_pid, brig_error_t *err)
{
    if (geteuid() != 0)
        return brig_error_set(err, EPERM, "restore `%s`: criu needs root", o->id);
    if (brig_id_validate(o->id, err) < 0)
        return -1;
    if (restore(o, init_pid, err) < 0)
        return brig_error_wrap(err, "restore `%s`", o->id);
    return 0;
}
