/* One line of /proc/self/mountinfo, split into the fields the rootfs code
 * reads: which mount holds the rootfs (mounts.c), where the host mounts its
 * cgroup hierarchies (cgroup_view.c). Internal to libcontainer/rootfs/. */
#ifndef BRIG_ROOTFS_MOUNTINFO_H
#define BRIG_ROOTFS_MOUNTINFO_H

#include <stdbool.h>

/* "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue" */
struct brig_mountinfo {
    char *root;          /* "/mnt1": what of its filesystem the mount shows */
    char *mountpoint;    /* "/mnt2" */
    char *fstype;        /* "ext3" */
    char *super_options; /* "rw,errors=continue"; "" when the line has none */
    bool shared;         /* a "shared:N" optional field */
};

/* Splits `line` in place: the fields point into it, their octal escapes
 * ("\040" for a space) undone. False for a line without the fields up to
 * the type. Pure. */
bool brig_mountinfo_parse_line(char *line, struct brig_mountinfo *e);

/* True when `path` is `dir` or below it ("/a/b" is under "/a" and "/", not
 * under "/ab"). Both absolute and clean. Pure. */
bool brig_path_is_under(const char *path, const char *dir);

#endif
