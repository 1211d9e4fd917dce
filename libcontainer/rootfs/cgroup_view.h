/* What the container's cgroup mount (type "cgroup", usually at
 * /sys/fs/cgroup) holds on a host with cgroup v1 hierarchies, the hybrid
 * and legacy layouts: a tmpfs with one directory per hierarchy, named as
 * the host names it ("memory", "cpu,cpuacct", "systemd"), plus "unified"
 * for a hybrid host's v2 tree, each showing the container's own cgroup;
 * and a link per controller of a co-mounted hierarchy ("cpu" and
 * "cpuacct" → "cpu,cpuacct"). This is what runc gives a container there.
 *
 * The decision is pure, from two texts the init reads once it is in its
 * cgroups (and, when it has one, its cgroup namespace): its
 * /proc/self/mountinfo and /proc/self/cgroup. cgroup_mount.c carries it
 * out. Internal to libcontainer/rootfs/, public for the unit tests. */
#ifndef BRIG_ROOTFS_CGROUP_VIEW_H
#define BRIG_ROOTFS_CGROUP_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* One directory under the destination and what is mounted on it. */
struct brig_cgroup_view_mount {
    char *name;         /* "memory", "cpu,cpuacct", "systemd", "unified" */
    const char *fstype; /* "cgroup" or "cgroup2" (static) */
    /* A fresh mount (source NULL): the options that name the hierarchy,
     * "memory", "cpu,cpuacct", "none,name=systemd"; NULL for cgroup2.
     * Never anything else the host's superblock carries (release_agent=,
     * ...): only the controllers of /proc/self/cgroup. */
    char *data;
    /* A bind (not NULL): the container's own directory in the host's
     * hierarchy, absolute ("/sys/fs/cgroup/memory/brig/c1"). */
    char *source;
};

struct brig_cgroup_view_link {
    char *name;   /* "cpuacct" */
    char *target; /* "cpu,cpuacct", a sibling directory */
};

struct brig_cgroup_view {
    struct brig_cgroup_view_mount *mounts;
    size_t n_mounts;
    struct brig_cgroup_view_link *links;
    size_t n_links;
};

/* Plans the view, in the order the host's mountinfo lists the hierarchies
 * (a hierarchy mounted twice: its first mount names it).
 *
 * `cgroupns`: the init has a cgroup namespace of its own, entered after
 * it was placed in its cgroups, so a fresh mount of each hierarchy shows
 * the container's cgroup as its root. Without one a fresh mount would show
 * the host's whole tree: the container's directory is bound instead, found
 * from its path in /proc/self/cgroup below the mount's root in mountinfo;
 * a hierarchy no mount of which reaches that directory is an error.
 *
 * `with_unified`: a hybrid host, whose cgroup2 tree joins the view as
 * "unified". Names that are not a plain file name, and a second
 * hierarchy under a name already taken, are left out. Pure. */
int brig_cgroup_view_plan(const char *mountinfo, const char *proc_cgroup, bool cgroupns,
                          bool with_unified, struct brig_cgroup_view *out, brig_error_t *err);
void brig_cgroup_view_free(struct brig_cgroup_view *v);

#endif
