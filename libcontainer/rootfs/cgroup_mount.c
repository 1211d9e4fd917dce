/* The container's cgroup mount on a host with cgroup v1 hierarchies
 * (hybrid and legacy layouts): a tmpfs at the destination holding the view
 * rootfs/cgroup_view.c plans, one directory per hierarchy showing the
 * container's own cgroup. The init gets here in its cgroups and, when it
 * has one, in its cgroup namespace (process/init.c unshares it before the
 * rootfs is built), so its /proc/self/cgroup names the container's cgroups.
 *
 * CVE-2022-0492: release_agent, which the kernel runs as root on the host
 * when a cgroup with notify_on_release empties, sits only in a hierarchy's
 * root directory. A fresh mount in the container's cgroup namespace has
 * the container's cgroup as its root, and a bind shows only the
 * container's directory: neither shows the file. Every hierarchy is
 * nosuid, nodev, noexec, read-only when the spec says ro, and a bind of a
 * host directory always read-only. */
#define _GNU_SOURCE
#include "rootfs/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "base/utils.h"
#include "cgroup/cgroup.h"
#include "rootfs/cgroup_view.h"

#define ATIME_FLAGS (MS_NOATIME | MS_RELATIME | MS_STRICTATIME | MS_NODIRATIME)
#define CGROUP_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)

static const char *source_name(const struct brig_rootfs_step *s)
{
    return s->source ? s->source : "cgroup";
}

/* "mount `cgroup` on `/sys/fs/cgroup`: mount hierarchy `memory`: ..." */
static int view_error(brig_error_t *err, int errnum, const struct brig_rootfs_step *s,
                      const char *what, const char *name)
{
    return brig_error_set(err, errnum, "mount `%s` on `%s`: %s%s%s%s", source_name(s), s->path,
                          what, name ? " `" : "", name ? name : "", name ? "`" : "");
}

/* /proc/self/cgroup as the init read it before its cgroup namespace. */
static char *host_paths;

/* A cgroup v1 view that can be binds: read-only, in a cgroup namespace. */
static bool bind_view(const struct brig_rootfs_step *s)
{
    return s->kind == BRIG_STEP_MOUNT && s->mount_kind == BRIG_MOUNT_CGROUP && s->cgroupns
           && (s->mount.flags & MS_RDONLY) && s->fstype && strcmp(s->fstype, "cgroup") == 0;
}

static bool plan_has_bind_view(const struct brig_rootfs_plan *plan)
{
    enum brig_cgroup_layout layout = brig_cgroup_layout();
    if (plan == NULL
        || (layout != BRIG_CGROUP_LAYOUT_HYBRID && layout != BRIG_CGROUP_LAYOUT_LEGACY))
        return false;
    for (size_t i = 0; i < plan->n_steps; i++)
        if (bind_view(&plan->steps[i]))
            return true;
    return false;
}

void brig_rootfs_cgroup_keep_paths(const struct brig_rootfs_plan *plan)
{
    brig_error_t ignored = NULL;
    free(host_paths);
    host_paths = NULL;
    if (!plan_has_bind_view(plan))
        return;
    /* The mounts' lines too, while their roots read as the host's (in the
     * namespace they read from its root: "/../.."). */
    if (brig_cgroup_mount_lines(&ignored) == NULL
        || brig_read_file("/proc/self/cgroup", &host_paths, NULL, &ignored) < 0)
        brig_error_release(&ignored);
}

/* A read-only view in a cgroup namespace is made of binds of the
 * container's own host directories, found by the paths kept before the
 * namespace: the kernel names a bind's root from the namespace's as it
 * does a fresh mount's ("/"), and neither shows more. A fresh v1 mount
 * walks every cgroup of its hierarchy under the kernel's global cgroup
 * lock, so with a thousand containers on the host each create would wait
 * on the others'. A writable view keeps fresh mounts: a bind is read-only. */
static int read_view(const struct brig_rootfs_step *s, bool with_unified,
                     struct brig_cgroup_view *v, brig_error_t *err)
{
    /* The runtime's lines from before this mount namespace was copied
     * from its own: the same mounts, for all the plan reads of them. */
    const char *known = brig_cgroup_mount_lines_known();
    cleanup_free char *mountinfo = known ? strdup(known) : NULL;
    cleanup_free char *cgroups = NULL;
    if (known && mountinfo == NULL)
        return brig_error_set(err, ENOMEM, "mount `%s` on `%s`", source_name(s), s->path);
    if (!known && brig_read_file("/proc/self/mountinfo", &mountinfo, NULL, err) < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", source_name(s), s->path);
    /* Binds where the host's mounts reach the container's directories (a
     * runtime in a cgroup namespace of its own may see them outside its
     * mounts' roots); fresh mounts otherwise. */
    if (bind_view(s) && host_paths && known) {
        brig_error_t ignored = NULL;
        if (brig_cgroup_view_plan(mountinfo, host_paths, false, with_unified, v, &ignored) == 0)
            return 0;
        brig_error_release(&ignored);
    }
    if (brig_read_file("/proc/self/cgroup", &cgroups, NULL, err) < 0
        || brig_cgroup_view_plan(mountinfo, cgroups, s->cgroupns, with_unified, v, err) < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", source_name(s), s->path);
    return 0;
}

/* The container's directory of the host's hierarchy, bound read-only. The
 * source is checked to be a cgroup directory: a path read from the host's
 * tables, opened once, and that one file bound. */
static int bind_host_dir(int top, const struct brig_rootfs_step *s,
                         const struct brig_cgroup_view_mount *m, const char *to,
                         unsigned long flags, brig_error_t *err)
{
    cleanup_close int src = open(m->source, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct statfs sf;
    if (src < 0 || fstatfs(src, &sf) < 0)
        return view_error(err, errno, s, "open the host's directory", m->source);
    if (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC)
        return view_error(err, EINVAL, s, "not a cgroup directory:", m->source);
    char from[BRIG_FD_PATH_MAX];
    brig_fd_path(src, from);
    if (mount(from, to, NULL, MS_BIND, NULL) < 0)
        return view_error(err, errno, s, "bind the host's directory", m->source);
    /* The bind's flags come with a remount of the bind itself, reached
     * through the directory again now that it is mounted over. */
    cleanup_close int bound = openat(top, m->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char path[BRIG_FD_PATH_MAX];
    if (bound >= 0)
        brig_fd_path(bound, path);
    if (bound < 0 || brig_remount_bind_keeping(path, flags, 0) < 0)
        return view_error(err, errno, s, "remount read-only", m->source);
    return 0;
}

static int mount_hierarchy(int top, const struct brig_rootfs_step *s,
                           const struct brig_cgroup_view_mount *m, brig_error_t *err)
{
    if (mkdirat(top, m->name, 0755) < 0)
        return view_error(err, errno, s, "make the directory of hierarchy", m->name);
    cleanup_close int dir = openat(top, m->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return view_error(err, errno, s, "open the directory of hierarchy", m->name);
    char to[BRIG_FD_PATH_MAX];
    brig_fd_path(dir, to);
    unsigned long flags = CGROUP_FLAGS | (s->mount.flags & (MS_RDONLY | ATIME_FLAGS));
    if (m->source != NULL)
        return bind_host_dir(top, s, m, to, flags | MS_RDONLY, err);
    if (mount(m->fstype, to, m->fstype, flags, m->data) < 0)
        return view_error(err, errno, s, "mount hierarchy", m->name);
    return 0;
}

/* Once the hierarchies are in: the tmpfs read-only as the spec asks (as
 * runc does), then its recursive options and propagation. */
static int finish_view(int top, const struct brig_rootfs_step *s, brig_error_t *err)
{
    const struct brig_mount_flags *mf = &s->mount;
    char path[BRIG_FD_PATH_MAX];
    brig_fd_path(top, path);
    if ((mf->flags & MS_RDONLY) && brig_remount_bind_keeping(path, MS_RDONLY, 0) < 0)
        return view_error(err, errno, s, "remount read-only", NULL);
    if (brig_mount_set_recursive_attrs(top, mf->rec_attr_set, mf->rec_attr_clr) < 0)
        return view_error(err, errno, s,
                          errno == ENOSYS ? "recursive options (rro, ...) need Linux 5.12"
                                          : "apply recursive options",
                          NULL);
    if (mf->propagation != 0 && mount(NULL, path, NULL, mf->propagation, NULL) < 0)
        return view_error(err, errno, s, "set propagation", NULL);
    return 0;
}

int brig_rootfs_do_cgroup_v1(int root_fd, const struct brig_rootfs_step *s, const char *to,
                             bool with_unified, brig_error_t *err)
{
    __attribute__((cleanup(brig_cgroup_view_free))) struct brig_cgroup_view v = { 0 };
    if (read_view(s, with_unified, &v, err) < 0)
        return -1;
    unsigned long flags = CGROUP_FLAGS | (s->mount.flags & ATIME_FLAGS);
    if (mount("tmpfs", to, "tmpfs", flags, "mode=755") < 0)
        return view_error(err, errno, s, "mount the tmpfs that holds the hierarchies", NULL);
    cleanup_close int top = brig_path_open_in_root(root_fd, s->path, O_RDONLY | O_DIRECTORY, 0,
                                                   err);
    if (top < 0)
        return brig_error_wrap(err, "mount `%s` on `%s`", source_name(s), s->path);
    for (size_t i = 0; i < v.n_mounts; i++)
        if (mount_hierarchy(top, s, &v.mounts[i], err) < 0)
            return -1;
    for (size_t i = 0; i < v.n_links; i++)
        if (symlinkat(v.links[i].target, top, v.links[i].name) < 0)
            return view_error(err, errno, s, "link", v.links[i].name);
    return finish_view(top, s, err);
}
