/* Internal to the sandbox profile (profile.c, profile_pod.c): the pieces
 * both forms of it share. */
#ifndef BRIG_PROFILE_INT_H
#define BRIG_PROFILE_INT_H

#include <stdint.h>

#include "sandbox/profile.h"

/* uid and gid alone (no supplementary group, no user name), no
 * capability in any set, no_new_privs. -1 on out-of-memory. */
int brig_profile_drop_privileges(struct brig_process *p, uint32_t uid, uint32_t gid);
/* item appended (unless s has it). -1 on out-of-memory. */
int brig_profile_strv_add(struct brig_strv *s, const char *item);
int brig_profile_strv_add_unique(struct brig_strv *s, const char *item);
/* A mount appended to the spec's. -1 on out-of-memory. */
int brig_profile_add_mount(struct brig_spec *spec, const char *dest, const char *type,
                           const char *source, const char *const *options);
/* `front` (NULL-terminated) put before the process's args. -1 on
 * out-of-memory. */
int brig_profile_prepend_args(struct brig_process *p, const char *const *front);
/* The runtime's default masked and read-only paths, added to the spec's. */
int brig_profile_add_default_paths(struct brig_linux *l);

/* profile_pod.c: brig_profile_apply for a pod's container (settings'
 * `pod`), once the seccomp profile is in the spec. */
int brig_profile_apply_pod(struct brig_spec *spec, const struct brig_profile_settings *s,
                           brig_error_t *err);

#endif
