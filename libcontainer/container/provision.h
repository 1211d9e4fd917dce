/* Internal to container/: the steps that create and restore share, from
 * a new state dir to a container with its cgroup and its state written,
 * and the one undo of them. */
#ifndef BRIG_PROVISION_H
#define BRIG_PROVISION_H

#include "cgroup/cgroup.h"
#include "cgroup/devices_bpf.h"
#include "container/container.h"
#include "container/handler.h"
#include "container/state.h"

/* What a create or restore has made so far, for provision_undo. */
struct provision {
    int root_fd;
    int dir_fd; /* the new state dir, locked */
    const char *id;
    const struct brig_handler *handler; /* recorded and set up */
    struct brig_state *state;
    struct brig_cgroup cgroup;      /* BRIG_CGROUP_INIT until made */
    struct brig_resources res;      /* the cgroup's: the spec's and its devices */
    struct brig_device_rule *rules; /* res.devices, owned */
};

/* The state root and a new, locked state dir for o->id. */
int provision_begin(struct provision *p, const char *root, const char *id, brig_error_t *err);
/* The handler's name recorded, then its setup hook run (which may
 * complete `spec`). */
int provision_handler(struct provision *p, const struct brig_handler *h, const void *data,
                      struct brig_spec *spec, brig_error_t *err);
/* The state a new container starts with: paths resolved, no pid yet. */
int provision_state(struct provision *p, const struct brig_create_options *o,
                    const struct brig_spec *spec, brig_error_t *err);
/* Then (the state made first when it isn't yet) the config it was made
 * from kept, its cgroup with the spec's limits and
 * device rules (compiled into `deferred` instead of attached when
 * non-NULL: the caller attaches it and frees deferred->insns), and the
 * state written, so that `delete --force` finds the cgroup if we die. */
int provision_container(struct provision *p, const struct brig_create_options *o,
                        const struct brig_bundle *b, struct brig_devices_program *deferred,
                        brig_error_t *err);
/* The init's pid recorded (state), the handler's spawned hook run, the
 * pid file written; the init is killed when this fails. */
int provision_started(struct provision *p, pid_t pid, const char *pid_file, brig_error_t *err);
/* A failed create or restore: processes in the cgroup killed, the cgroup,
 * the handler's set-up and the state dir removed, best effort. */
void provision_undo(struct provision *p);
/* Frees and closes what p holds; removes nothing. */
void provision_end(struct provision *p);

/* start, on a state dir the caller holds open and locked (container.c). */
int brig_container_start_opened(int dir_fd, const struct brig_state *st, brig_error_t *warning,
                                brig_error_t *err);

/* brig_container_load_spec with the container's handler already found
 * (NULL: none), so exec doesn't look it up twice. */
int brig_container_load_spec_for(int dir_fd, const struct brig_handler *h, struct brig_spec **spec,
                                 brig_error_t *err);

/* The caller's own cgroup v2 path, from the "0::" line of /proc/self/cgroup
 * ("/" when unknown). Caller frees. */

#endif
