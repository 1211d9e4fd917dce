/* The state directory: <root>/<id>/ holds state.json (written atomically),
 * exec.fifo while the container is "created", and is flock'ed by every
 * command that changes the container, so two commands on one id serialise. */
#ifndef BRIG_STATE_H
#define BRIG_STATE_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

#define BRIG_DEFAULT_ROOT "/run/brig"
#define BRIG_STATE_FILE "state.json"
#define BRIG_EXEC_FIFO "exec.fifo"
#define BRIG_SAVED_CONFIG "config.json"      /* the spec as created: hooks and exec read it */
#define BRIG_CGROUP_PLANNED "cgroup.planned" /* the cgroup a create is making */

enum brig_status {
    BRIG_STATUS_CREATING,
    BRIG_STATUS_CREATED,
    BRIG_STATUS_RUNNING,
    BRIG_STATUS_PAUSED,
    BRIG_STATUS_STOPPED,
};

struct brig_state {
    char *id;
    pid_t pid;                         /* the container's init, 0 before it exists */
    unsigned long long pid_start_time; /* tells our init from a recycled pid */
    char *bundle;                      /* absolute */
    char *rootfs;                      /* absolute */
    char *created;                     /* RFC 3339, UTC, nanoseconds */
    char *owner;
    struct brig_kv_list annotations;
    bool own_pid_ns;   /* the container has a pid namespace of its own */
    char *cgroup_path; /* absolute; "" when cgroups are not managed */
    /* poststart + poststop hooks of the saved spec; -1 when unknown (a state
     * file from an older brig). At 0, start and delete need not parse it. */
    int post_hooks;
};

const char *brig_status_name(enum brig_status status);

/* Rejects ids runc would reject: empty, ".", "..", or anything but
 * [A-Za-z0-9_+.-], and longer than 1024 bytes. */
int brig_id_validate(const char *id, brig_error_t *err);

/* "container `id` does not exist", with errnum ENOENT so callers can tell. */
int brig_error_not_found(brig_error_t *err, const char *id);

/* Opens (creating with mode 0700 when `create`) the state root. */
int brig_state_root_open(const char *root, bool create, brig_error_t *err);

/* Makes <root>/<id> (failing when it exists) and returns it opened and locked. */
int brig_state_dir_create(int root_fd, const char *id, brig_error_t *err);
/* Opens <root>/<id> and locks it; fails with ENOENT "container `x` does not exist". */
int brig_state_dir_open(int root_fd, const char *id, bool lock, brig_error_t *err);
/* Removes <root>/<id>, open at dir_fd, and everything in it. */
int brig_state_dir_remove(int root_fd, int dir_fd, const char *id, brig_error_t *err);

int brig_state_write(int dir_fd, const struct brig_state *state, brig_error_t *err);
int brig_state_read(int dir_fd, const char *id, struct brig_state **out, brig_error_t *err);
void brig_state_free(struct brig_state *state);
/* A state pointer freed when it goes out of scope (base/cleanup.h). */
static inline void brig_state_freep(struct brig_state **state)
{
    brig_state_free(*state);
}
#define cleanup_state __attribute__((cleanup(brig_state_freep)))

/* Where the container is now, from its init process, the exec fifo and
 * its cgroup's freezer. */
enum brig_status brig_state_status(int dir_fd, const struct brig_state *state);
struct brig_cgroup;
/* The same, with the container's cgroup opened already (NULL: opened
 * here when it is needed). */
enum brig_status brig_state_status_in(int dir_fd, const struct brig_state *state,
                                      const struct brig_cgroup *cg);
/* True while the init (pid + start time) is alive and not a zombie. */
bool brig_state_init_alive(const struct brig_state *state);

/* The runtime-spec state object, as `state` prints it and hooks read it. */
int brig_state_to_json(const struct brig_state *state, enum brig_status status, bool pretty,
                       char **out, brig_error_t *err);

/* Now as "2026-01-02T03:04:05.123456789Z". Caller frees. */
char *brig_timestamp_now(void);

/* The same for a given time, e.g. "2026-11-22T09:17:52.000000001Z". */
struct timespec;
char *brig_timestamp_at(const struct timespec *ts);

#endif
