/* Namespaces: which to create, which to join, id maps, time offsets. */
#ifndef BRIG_NAMESPACES_H
#define BRIG_NAMESPACES_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

int brig_ns_clone_flag(enum brig_ns_type type);

/* CLONE_NEW* flags of the namespaces the spec asks to create (no path). */
int brig_ns_new_flags(const struct brig_spec *spec);

/* Namespaces to join, opened up front: a bad path fails create before any
 * process exists, and the child only setns()es fds it already holds. */
struct brig_ns_join {
    int fd[BRIG_NS_COUNT]; /* -1 when not joined */
    bool any;
};

int brig_ns_open_paths(const struct brig_spec *spec, struct brig_ns_join *join, brig_error_t *err);
void brig_ns_join_close(struct brig_ns_join *join);
/* Namespaces closed when they go out of scope (base/cleanup.h); start
 * them as BRIG_NS_JOIN_NONE so an early return finds nothing to close. */
#define BRIG_NS_JOIN_NONE                                      \
    {                                                          \
        .fd = { [0 ... BRIG_NS_COUNT - 1] = -1 }, .any = false \
    }
#define cleanup_ns_join __attribute__((cleanup(brig_ns_join_close)))

/* Joins the opened namespaces: the others first where the caller may (the
 * host's root may join any; one owned by an ancestor of the user namespace
 * can't be joined from inside it), then the user namespace, then those
 * that needed it (a rootless caller's). The pid and time namespaces apply
 * to children only. Runs in the child. */
typedef int (*brig_ns_step_fn)(void *arg, brig_error_t *err);
/* `before_user` (NULL: none) runs once the others are joined, before the
 * user namespace is (and before the caller makes one): what needs the
 * host's privileges over a joined namespace (a joined network namespace's
 * sysctls) happens there. */
int brig_ns_join_all(const struct brig_ns_join *join, brig_ns_step_fn before_user, void *arg,
                     brig_error_t *err);

/* Writes /proc/PID/{uid_map,gid_map} from linux.uidMappings/gidMappings.
 * Runs in the parent, which has the privilege to map any id. */
int brig_ns_write_id_maps(pid_t pid, const struct brig_linux *linux_, brig_error_t *err);

/* Writes linux.timeOffsets to /proc/self/timens_offsets; must happen after
 * unshare(CLONE_NEWTIME) and before any process enters the namespace. */
int brig_ns_write_time_offsets(const struct brig_linux *linux_, brig_error_t *err);

#endif
