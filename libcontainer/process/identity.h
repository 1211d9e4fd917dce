/* Identity and privileges of a container process: uid/gid/groups, the five
 * capability sets (libcap), no_new_privs, rlimits, umask. */
#ifndef BRIG_CAPS_H
#define BRIG_CAPS_H

#include "base/error.h"
#include "spec/spec.h"

/* Applies process.rlimits. Done while still privileged, before the user
 * switch, so hard limits can be raised. */
int brig_rlimits_apply(const struct brig_process *process, brig_error_t *err);

/* In this order: keep capabilities across the uid change, shrink the
 * bounding set, setgroups/setresgid/setresuid, set effective/permitted/
 * inheritable, raise ambient, then no_new_privs and umask. A NULL
 * process->capabilities means "no capabilities at all". */
int brig_process_drop_privileges(const struct brig_process *process, brig_error_t *err);

/* "CAP_SYS_ADMIN" → 21; -1 when unknown (on this libcap). */
int brig_cap_from_name(const char *name);
/* All capability names libcap knows, "CAP_CHOWN" .. ; NULL-terminated, static. */
const char *const *brig_cap_names(void);

/* "RLIMIT_NOFILE" → RLIMIT_NOFILE; -1 when unknown. */
int brig_rlimit_from_name(const char *name);
const char *const *brig_rlimit_names(void);

#endif
