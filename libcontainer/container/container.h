/* Container lifecycle: create, start, kill, delete, state, list. The CLI and
 * the shim both drive containers through these. */
#ifndef BRIG_CONTAINER_H
#define BRIG_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "container/state.h"

struct brig_profile_settings;

struct brig_create_options {
    const char *root;            /* state root, e.g. /run/brig */
    const char *id;
    const char *bundle;          /* NULL: the current directory */
    const char *pid_file;        /* NULL: none */
    bool no_pivot;
    bool no_new_keyring;
    int preserve_fds;
    int listen_fds;              /* socket activation: fds 3.. before the preserved ones */
    bool terminal;               /* run -t: a terminal whatever process.terminal says */
    bool no_cgroup;              /* --cgroup-manager=disabled: the caller manages cgroups */
    const char *console_socket;  /* receives the pty master with process.terminal */
    int *pty_master;             /* or: the caller takes the master (run relays it) */
    const char *profile;         /* "sandbox", or NULL (the annotation may still ask) */
    const struct brig_profile_settings *profile_settings; /* the profile with these */
};

int brig_container_create(const struct brig_create_options *opts, pid_t *init_pid,
                          brig_error_t *err);
/* create, then start (run): the start goes on with the state dir that
 * create opened and locked and the state it wrote, not read back. When the
 * start fails, *created says the container is there for the caller to
 * delete. */
int brig_container_create_started(const struct brig_create_options *opts, pid_t *init_pid,
                                  bool *created, brig_error_t *warning, brig_error_t *err);

/* Steps of create that restore repeats: the state a new container starts
 * with (paths resolved, no pid yet), and its cgroup with the spec's limits
 * and device rules. */
int brig_container_new_state(const struct brig_create_options *o, const struct brig_spec *spec,
                             struct brig_state **out, brig_error_t *err);
/* The caller's own cgroup v2 path, from the "0::" line of /proc/self/cgroup
 * ("/" when unknown). Caller frees. */
char *brig_container_own_cgroup(void);
struct brig_cgroup;
void brig_container_undo_cgroup(struct brig_cgroup *cg);
struct brig_devices_program;
/* With `deferred`, the device program is compiled into it rather than
 * attached: the caller attaches it (brig_cgroup_devices_attach) and frees
 * deferred->insns. */
int brig_container_setup_cgroup(const struct brig_create_options *o, const struct brig_spec *spec,
                                struct brig_cgroup *cg, struct brig_devices_program *deferred,
                                brig_error_t *err);

/* Releases the init blocked on the exec fifo. A failing poststart hook is
 * not an error (the spec says warn and go on): it lands in *warning. */
int brig_container_start(const char *root, const char *id, brig_error_t *warning,
                         brig_error_t *err);

int brig_container_kill(const char *root, const char *id, int signal, bool all,
                        brig_error_t *err);

/* Removes every trace. With `force`, a running container is killed first;
 * a missing container is then not an error. Poststop hook failures are
 * warnings. */
int brig_container_delete(const char *root, const char *id, bool force, brig_error_t *warning,
                          brig_error_t *err);

int brig_container_state(const char *root, const char *id, struct brig_state **state,
                         enum brig_status *status, brig_error_t *err);

/* Opens <root>/<id> locked and reads its state; returns the dir fd. */
int brig_container_open(const char *root, const char *id, int *root_fd, struct brig_state **st,
                        brig_error_t *err);

struct brig_process;

/* A container's state dir, open and locked, with its state as read. */
struct brig_opened_container {
    int dir_fd;
    struct brig_state *state;
};

struct brig_exec_options {
    const char *root;
    const char *id;
    const struct brig_process *process;  /* complete: the caller merges flags and spec */
    const char *console_socket;          /* with process.terminal: gets the master */
    int *pty_master;                     /* or the caller takes it (exec relays it) */
    int preserve_fds;
    const char *cgroup;                  /* --cgroup: a sub-cgroup of the container's */
    bool ignore_paused;
    /* The container's saved spec when the caller has read it already (for
     * the process defaults); NULL: read here. Saves parsing it twice. */
    const struct brig_spec *spec;
    /* The container's state dir when the caller holds it open and locked
     * already (brig_container_open, which read `state` too); NULL: opened
     * here. Saves opening, locking and reading it twice. Still the
     * caller's to close and free. */
    const struct brig_opened_container *opened;
};

/* Starts a process in the running container; *pid is its pid here. */
int brig_container_exec(const struct brig_exec_options *opts, pid_t *pid, brig_error_t *err);

/* The spec the container was created from (kept in its state dir); *spec
 * is NULL when there is none (a container made by an older brig). */
int brig_container_load_spec(int dir_fd, struct brig_spec **spec, brig_error_t *err);

/* The sandbox profile across a container's life (sandbox/lifecycle.c):
 * at create (settings kept in the state dir, data image mounted, spec
 * rewritten), whenever the spec is read back, and at delete (data
 * unmounted). No-ops for a container without the profile. */
struct brig_spec;
int brig_container_profile_setup(const struct brig_create_options *o, struct brig_spec *spec,
                                 int dir_fd, brig_error_t *err);
int brig_container_profile_reapply(int dir_fd, struct brig_spec *spec, brig_error_t *err);
int brig_container_profile_teardown(int dir_fd, brig_error_t *err);
/* Across a checkpoint: the settings go with the images (a file named
 * BRIG_PROFILE_IMAGE_FILE in image_fd; refused when the data image lives
 * in the state dir, which the checkpoint removes), and restore installs
 * them in the new state dir as create does. export: 0 also without the
 * profile; import: 1 when the images had it, 0 when not. */
#define BRIG_PROFILE_IMAGE_FILE "brig-profile"
int brig_container_profile_export(int dir_fd, const char *root, const char *id, int image_fd,
                                  brig_error_t *err);
int brig_container_profile_import(int image_fd, int dir_fd, struct brig_spec *spec,
                                  brig_error_t *err);

/* Operations on a live container's cgroup (cgroup_ops.c). */
int brig_container_pause(const char *root, const char *id, brig_error_t *err);
int brig_container_resume(const char *root, const char *id, brig_error_t *err);
int brig_container_pids(const char *root, const char *id, pid_t **pids, size_t *n,
                        brig_error_t *err);
int brig_container_update(const char *root, const char *id, const struct brig_resources *r,
                          brig_error_t *err);
struct brig_cgroup_stats;
int brig_container_stats(const char *root, const char *id, struct brig_cgroup_stats *out,
                         brig_error_t *err);

struct brig_container_entry {
    struct brig_state *state;
    enum brig_status status;
};

/* Every container under root, sorted by id; a container whose state can't
 * be read is skipped. */
int brig_container_list(const char *root, struct brig_container_entry **out, size_t *n,
                        brig_error_t *err);
void brig_container_list_free(struct brig_container_entry *entries, size_t n);

#endif
