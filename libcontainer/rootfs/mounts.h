/* Mount options, destination checks and remount helpers: the pieces of
 * the container's root filesystem that the runtime, the shim and the plan
 * (rootfs/plan.h, which orders every step the init takes) share. */
#ifndef BRIG_MOUNTS_H
#define BRIG_MOUNTS_H

#include <stdbool.h>

#include "base/error.h"
#include "spec/spec.h"

/* Parses mount options ("ro", "nosuid", "rbind", "rprivate", "size=64m",
 * ...) into mount(2) flags, propagation flags and the data string that goes
 * to the filesystem. Pure; used by the plan and by unit tests. */
struct brig_mount_flags {
    unsigned long flags;       /* MS_RDONLY | MS_NOSUID | ... | MS_BIND | MS_REC */
    unsigned long clear;       /* flags explicitly turned off ("rw", "suid", ...) */
    unsigned long propagation; /* MS_SHARED | MS_SLAVE | MS_PRIVATE | MS_UNBINDABLE, + MS_REC */
    char *data;                /* the rest, comma-joined; NULL when none */
    /* "rro", "rnosuid", ...: MOUNT_ATTR_* applied with mount_setattr(2)
     * and AT_RECURSIVE to the whole tree (Linux 5.12+). */
    unsigned long long rec_attr_set;
    unsigned long long rec_attr_clr;
    /* "tmpcopyup": a tmpfs gets a copy of what the directory it covers
     * held (files, directories, symlinks, owners and modes). */
    bool copy_up;
};
int brig_mount_parse_options(const struct brig_strv *options, struct brig_mount_flags *out,
                             brig_error_t *err);
void brig_mount_flags_free(struct brig_mount_flags *f);

/* Every option name brig_mount_parse_options understands, NULL-terminated,
 * from the same table (for `brig features`). */
const char *const *brig_mount_option_names(void);

/* Refuses a proc or sysfs mount whose destination is itself a symlink that
 * leads out of the rootfs (absolute, or climbing above "/"): the runtime
 * writes their files later, and the container would find them elsewhere.
 * Any other destination's links, the last one too, are resolved inside
 * the rootfs, as runc resolves them. Runs in the runtime, before the
 * container exists. */
int brig_mounts_check_destinations(const struct brig_spec *spec, const char *rootfs,
                                   brig_error_t *err);

/* rootfsPropagation string → MS_* flags (with MS_REC). -1 + *err when unknown. */
int brig_propagation_from_name(const char *name, unsigned long *out, brig_error_t *err);

/* Remounts the bind mount at `target` with `set` added and `clear` removed,
 * keeping every other flag it has now (read with statfs): in a user
 * namespace the flags inherited from the host are locked and may not be
 * dropped. No-op when nothing would change. -1 with errno. */
int brig_remount_bind_keeping(const char *target, unsigned long set, unsigned long clear);

/* mount_setattr(AT_RECURSIVE) of MOUNT_ATTR_* on the mount at O_PATH `fd`
 * (the root of a mount). No-op when both are 0. -1 with errno (ENOSYS
 * before Linux 5.12). */
int brig_mount_set_recursive_attrs(int fd, unsigned long long set, unsigned long long clr);

#endif
