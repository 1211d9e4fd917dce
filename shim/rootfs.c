#define _GNU_SOURCE
/* The container's rootfs from containerd's Mount list (a snapshot: overlay
 * or bind), mounted on <bundle>/rootfs before create and taken down at
 * delete. */
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "rootfs/mounts.h"
#include "spec/spec.h"

void shim_rootfs_unmount(const char *rootfs)
{
    /* Layers may be stacked (containerd can pass several mounts). */
    for (int i = 0; i < 32; i++)
        if (umount2(rootfs, 0) < 0 && (errno != EBUSY || umount2(rootfs, MNT_DETACH) < 0))
            break;
}

static int mount_one(const struct shim_mount *m, const char *rootfs, brig_error_t *err)
{
    cleanup_free char **v = calloc(m->n_options + 1, sizeof *v);
    cleanup_free char *target = NULL;
    if (v == NULL)
        return brig_error_set(err, ENOMEM, "mount");
    for (size_t i = 0; i < m->n_options; i++)
        v[i] = (char *) m->options[i];
    struct brig_strv opts = { v, m->n_options };
    struct brig_mount_flags f;
    if (brig_mount_parse_options(&opts, &f, err) < 0)
        return brig_error_wrap(err, "rootfs mount `%s`", m->source ? m->source : "");
    if (m->target && *m->target && strcmp(m->target, "/") != 0) {
        if (asprintf(&target, "%s/%s", rootfs, m->target) < 0) {
            brig_mount_flags_free(&f);
            return brig_error_set(err, ENOMEM, "mount");
        }
    }
    const char *where = target ? target : rootfs;
    const char *type = m->type && *m->type ? m->type : NULL;
    unsigned long flags = f.flags;
    if (type && strcmp(type, "bind") == 0) {
        flags |= MS_BIND;
        type = NULL;
    }
    int r = 0;
    if (mount(m->source, where, type, flags & ~MS_RDONLY, f.data) < 0)
        r = brig_error_set(err, errno, "mount `%s` on `%s`", m->source ? m->source : "", where);
    /* A bind mount ignores MS_RDONLY until it is remounted. */
    if (r == 0 && (flags & MS_RDONLY)
        && mount(NULL, where, NULL, MS_REMOUNT | MS_RDONLY | (flags & MS_BIND), NULL) < 0)
        r = brig_error_set(err, errno, "remount `%s` read-only", where);
    brig_mount_flags_free(&f);
    return r;
}

int shim_rootfs_mount(const char *bundle, const struct shim_mount *mounts, size_t n, char **out,
                      brig_error_t *err)
{
    cleanup_free char *rootfs = NULL;
    if (asprintf(&rootfs, "%s/rootfs", bundle) < 0)
        return brig_error_set(err, ENOMEM, "mount");
    if (mkdir(rootfs, 0711) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", rootfs);
    for (size_t i = 0; i < n; i++) {
        if (mount_one(&mounts[i], rootfs, err) < 0) {
            shim_rootfs_unmount(rootfs);
            return -1;
        }
    }
    *out = brig_steal_ptr(rootfs);
    return 0;
}
