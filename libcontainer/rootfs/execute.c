/* The init's half of the root filesystem: it walks the steps of a plan
 * (rootfs/plan.h) that the runtime built and checked before the clone, and
 * decides nothing from the spec itself. The steps that change where "/"
 * is (propagation, the rootfs bind, pivot_root) are here; mounts, /dev and
 * the masks have a file each. */
#define _GNU_SOURCE
#include "rootfs/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "rootfs/mountinfo.h"
#include "rootfs/steps.h"

/* What steps of one phase share: the root they resolve paths in, the
 * directory the last node went in (/dev's nodes come in a run), the
 * container's /dev/null for masks, the umask the nodes are made under. */
struct run_ctx {
    int root_fd;
    char *dir_path;
    int dir_fd;
    struct brig_mask_fds mask;
    bool umask_cleared;
    mode_t saved_umask;
};

static void run_ctx_release(struct run_ctx *c)
{
    brig_closep(&c->root_fd);
    brig_closep(&c->dir_fd);
    brig_closep(&c->mask.null_fd);
    brig_closep(&c->mask.empty_fd);
    free(c->dir_path);
    if (c->umask_cleared)
        umask(c->saved_umask);
}

/* ---- prepare ---- */

static int bind_rootfs(struct run_ctx *c, const char *rootfs, brig_error_t *err)
{
    if (mount(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
        return brig_error_set(err, errno, "bind mount rootfs `%s`", rootfs);
    /* Opened after the bind, so it is the bind: an fd from before would be
     * the directory underneath, and mounts made through it would be hidden. */
    c->root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (c->root_fd < 0)
        return brig_error_set(err, errno, "open rootfs `%s`", rootfs);
    return 0;
}

/* The directory of a node or link, resolved (and made) inside the rootfs:
 * once for a run of steps in the same one, as /dev's nodes come. */
static int node_dir(struct run_ctx *c, const struct brig_rootfs_step *s, char **name,
                    brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (brig_rootfs_split_node_path(s->path, &dir, name, err) < 0)
        return -1;
    if (c->dir_path != NULL && strcmp(c->dir_path, dir) == 0)
        return c->dir_fd;
    brig_closep(&c->dir_fd);
    free(c->dir_path);
    c->dir_path = NULL;
    c->dir_fd = brig_path_mkdir_in_root(c->root_fd, dir, 0755, err);
    if (c->dir_fd < 0)
        return brig_error_wrap(err, "device `%s`", s->path);
    c->dir_path = brig_steal_ptr(dir);
    return c->dir_fd;
}

static int run_dev_step(struct run_ctx *c, const struct brig_rootfs_step *s, brig_error_t *err)
{
    /* Modes exactly as planned (the process gets its own umask later). */
    if (!c->umask_cleared) {
        c->saved_umask = umask(0);
        c->umask_cleared = true;
    }
    cleanup_free char *name = NULL;
    int dir_fd = node_dir(c, s, &name, err);
    if (dir_fd < 0)
        return -1;
    if (s->kind == BRIG_STEP_DEVICE)
        return brig_rootfs_do_device(dir_fd, name, s, err);
    if (s->kind == BRIG_STEP_DEV_LINK)
        return brig_rootfs_do_dev_link(dir_fd, name, s, err);
    return brig_rootfs_do_dev_shm(dir_fd, name, s, err);
}

static int run_prepare_step(struct run_ctx *c, const struct brig_rootfs_plan *plan,
                            const struct brig_rootfs_step *s, brig_error_t *err)
{
    switch (s->kind) {
    case BRIG_STEP_PROPAGATE_HOST_ROOT:
        if (mount(NULL, "/", NULL, s->propagation, NULL) < 0)
            return brig_error_set(err, errno, "set propagation of `/`");
        return 0;
    case BRIG_STEP_PRIVATE_PARENT:
        return brig_rootfs_do_private_parent(plan->rootfs, err);
    case BRIG_STEP_BIND_ROOTFS:
        return bind_rootfs(c, plan->rootfs, err);
    case BRIG_STEP_MOUNT:
        return brig_rootfs_do_mount(c->root_fd, s, err);
    case BRIG_STEP_DEVICE:
    case BRIG_STEP_DEV_LINK:
    case BRIG_STEP_DEV_SHM:
        return run_dev_step(c, s, err);
    default:
        return brig_error_set(err, EINVAL, "rootfs plan: step %s out of its phase",
                              brig_rootfs_step_name(s->kind));
    }
}

/* ---- pivot ---- */

/* The procfs and sysfs mounts of the host that stay below the chroot of
 * --no-pivot. The kernel lets a new user namespace mount a fresh procfs
 * (without the masked paths) when one is fully visible in the mount
 * namespace: each goes (detached), or where it can't (a mount locked in a
 * user namespace) gets an empty read-only tmpfs on top, as runc does. */
static int hide_host_kernel_fs(const char *rootfs, brig_error_t *err)
{
    cleanup_file FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL)
        return brig_error_set(err, errno, "open `/proc/self/mountinfo`");
    cleanup_free char *line = NULL, *list = NULL;
    size_t cap = 0, len = 0;
    /* Collected first: what is hidden changes mountinfo as it goes. */
    cleanup_file FILE *out = open_memstream(&list, &len);
    while (out && getline(&line, &cap, f) > 0) {
        struct brig_mountinfo e;
        if (brig_mountinfo_parse_line(line, &e)
            && (strcmp(e.fstype, "proc") == 0 || strcmp(e.fstype, "sysfs") == 0)
            && !brig_path_is_under(e.mountpoint, rootfs))
            fprintf(out, "%s%c", e.mountpoint, '\0');
    }
    if (out == NULL || fflush(out) != 0)
        return brig_error_set(err, ENOMEM, "read `/proc/self/mountinfo`");
    for (size_t off = 0; off < len; off += strlen(list + off) + 1) {
        const char *mp = list + off;
        if (umount2(mp, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 || errno == ENOENT)
            continue;
        if (mount("tmpfs", mp, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0") < 0
            && errno != ENOENT)
            return brig_error_set(err, errno, "--no-pivot: hide the host's `%s`", mp);
    }
    return 0;
}

static int move_root(const char *rootfs, brig_error_t *err)
{
    if (hide_host_kernel_fs(rootfs, err) < 0)
        return -1;
    /* The current directory is the rootfs bind. */
    if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
        return brig_error_set(err, errno, "move the rootfs to `/`");
    if (chroot(".") < 0)
        return brig_error_set(err, errno, "chroot into the rootfs");
    if (chdir("/") < 0)
        return brig_error_set(err, errno, "chdir to `/`");
    return 0;
}

static int pivot_root_dot(const char *rootfs, brig_error_t *err)
{
    cleanup_close int old_root = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (old_root < 0)
        return brig_error_set(err, errno, "open `/`");
    /* pivot_root(".", ".") stacks the old root on top of the new one, so no
     * put_old directory is needed inside the rootfs. */
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return brig_error_set(err, errno, "pivot_root to `%s`", rootfs);
    /* Which of the two "." names now is not promised by the kernel; go to
     * the old root explicitly. */
    if (fchdir(old_root) < 0)
        return brig_error_set(err, errno, "chdir to the old root");
    /* A slave tree's unmounts stay here; a shared one's would reach the
     * host, detaching the host's own mounts. */
    if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
        return brig_error_set(err, errno, "make the old root rslave");
    if (umount2(".", MNT_DETACH) < 0)
        return brig_error_set(err, errno, "detach the old root");
    if (chdir("/") < 0)
        return brig_error_set(err, errno, "chdir to `/`");
    return 0;
}

static int enter_root(const char *rootfs, bool move, brig_error_t *err)
{
    cleanup_close int new_root = open(rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (new_root < 0)
        return brig_error_set(err, errno, "open rootfs `%s`", rootfs);
    if (fchdir(new_root) < 0)
        return brig_error_set(err, errno, "chdir to rootfs `%s`", rootfs);
    return move ? move_root(rootfs, err) : pivot_root_dot(rootfs, err);
}

static int run_pivot_step(const struct brig_rootfs_plan *plan, const struct brig_rootfs_step *s,
                          brig_error_t *err)
{
    switch (s->kind) {
    case BRIG_STEP_PRIVATE_ROOTS:
        if (mount(NULL, "/", NULL, MS_PRIVATE, NULL) < 0
            || mount(NULL, plan->rootfs, NULL, MS_PRIVATE, NULL) < 0)
            return brig_error_set(err, errno, "make the old and new root private");
        return 0;
    case BRIG_STEP_PIVOT_ROOT:
    case BRIG_STEP_MOVE_ROOT:
        return enter_root(plan->rootfs, s->kind == BRIG_STEP_MOVE_ROOT, err);
    default:
        return brig_error_set(err, EINVAL, "rootfs plan: step %s out of its phase",
                              brig_rootfs_step_name(s->kind));
    }
}

/* ---- finish ---- */

static int run_finish_step(struct run_ctx *c, const struct brig_rootfs_step *s, brig_error_t *err)
{
    switch (s->kind) {
    case BRIG_STEP_READONLY_PATH:
        return brig_rootfs_do_readonly_path(c->root_fd, s->path, err);
    case BRIG_STEP_MASK_PATH:
        return brig_rootfs_do_mask_path(c->root_fd, s->path, &c->mask, err);
    case BRIG_STEP_READONLY_DEV:
        if (brig_remount_bind_keeping("/dev", MS_RDONLY, 0) < 0)
            return brig_error_set(err, errno, "remount `/dev` read-only");
        return 0;
    case BRIG_STEP_READONLY_ROOT:
        if (brig_remount_bind_keeping("/", MS_RDONLY, 0) < 0)
            return brig_error_set(err, errno, "remount `/` read-only");
        return 0;
    case BRIG_STEP_PROPAGATE_ROOT:
        if (mount(NULL, "/", NULL, s->propagation, NULL) < 0)
            return brig_error_set(err, errno, "set propagation of `/` to %s",
                                  s->source ? s->source : "?");
        return 0;
    default:
        return brig_error_set(err, EINVAL, "rootfs plan: step %s out of its phase",
                              brig_rootfs_step_name(s->kind));
    }
}

/* ---- the walk ---- */

int brig_rootfs_run(const struct brig_rootfs_plan *plan, enum brig_rootfs_phase phase,
                    brig_error_t *err)
{
    __attribute__((cleanup(run_ctx_release))) struct run_ctx c = {
        .root_fd = -1,
        .dir_fd = -1,
        .mask = { -1, -1 },
    };
    /* After pivot_root the container's "/" is the root paths resolve in. */
    if (phase == BRIG_ROOTFS_FINISH && plan->n_steps > 0
        && (c.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return brig_error_set(err, errno, "open `/`");
    for (size_t i = 0; i < plan->n_steps; i++) {
        const struct brig_rootfs_step *s = &plan->steps[i];
        if (s->phase != phase)
            continue;
        int r;
        if (phase == BRIG_ROOTFS_PREPARE)
            r = run_prepare_step(&c, plan, s, err);
        else if (phase == BRIG_ROOTFS_PIVOT)
            r = run_pivot_step(plan, s, err);
        else
            r = run_finish_step(&c, s, err);
        if (r < 0)
            return -1;
    }
    return 0;
}

int brig_rootfs_prepare(const struct brig_rootfs_plan *plan, brig_error_t *err)
{
    return brig_rootfs_run(plan, BRIG_ROOTFS_PREPARE, err);
}

int brig_rootfs_pivot(const struct brig_rootfs_plan *plan, brig_error_t *err)
{
    return brig_rootfs_run(plan, BRIG_ROOTFS_PIVOT, err);
}

int brig_rootfs_finish(const struct brig_rootfs_plan *plan, brig_error_t *err)
{
    return brig_rootfs_run(plan, BRIG_ROOTFS_FINISH, err);
}

int brig_rootfs_open_sources(struct brig_rootfs_plan *plan, const char *bundle, brig_error_t *err)
{
    cleanup_close int dir = open(bundle ? bundle : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return brig_error_set(err, errno, "open bundle `%s`", bundle ? bundle : ".");
    for (size_t i = 0; i < plan->n_steps; i++) {
        struct brig_rootfs_step *s = &plan->steps[i];
        if (s->kind != BRIG_STEP_MOUNT || s->mount_kind != BRIG_MOUNT_BIND || s->source == NULL
            || s->source_fd >= 0)
            continue;
        /* A detached copy of it: the init's mount namespace is a copy
         * where this mount is not, so it is moved into place there. A
         * missing one (or a kernel without open_tree) is the init's to
         * open and report, with the mount's words. */
        unsigned int rec = (s->mount.flags & MS_REC) ? AT_RECURSIVE : 0;
        s->source_fd = (int) syscall(SYS_open_tree, dir, s->source,
                                     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec);
    }
    return 0;
}

size_t brig_rootfs_source_fds(const struct brig_rootfs_plan *plan, int *keep)
{
    size_t n = 0;
    for (size_t i = 0; plan && i < plan->n_steps; i++)
        if (plan->steps[i].source_fd >= 0)
            keep[n++] = plan->steps[i].source_fd;
    return n;
}
