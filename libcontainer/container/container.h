/* Container lifecycle: create, start, kill, delete, state, list. The CLI and
 * the shim both drive containers through these. */
#ifndef BRIG_CONTAINER_H
#define BRIG_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "container/state.h"

struct brig_handler;

/* A bundle's config.json, parsed and validated, with the bytes it was
 * parsed from (the state dir keeps them for exec and the post* hooks). The
 * caller may rewrite the spec before create: a transform of the spec is
 * how a layer above the library makes a special kind of container. */
struct brig_bundle {
    char *config_path; /* "<bundle>/config.json", for messages */
    struct brig_spec *spec;
    char *text;
    size_t len;
};
/* Loads <dir>/config.json (dir NULL: the current directory). */
int brig_bundle_load(const char *dir, struct brig_bundle *b, brig_error_t *err);
void brig_bundle_clear(struct brig_bundle *b);

struct brig_create_options {
    const char *root; /* state root, e.g. /run/brig */
    const char *id;
    const char *bundle;         /* NULL: the current directory (a relative root.path) */
    struct brig_bundle *config; /* its config, loaded (and maybe rewritten) by the caller */
    const char *pid_file;       /* NULL: none */
    bool no_pivot;
    bool no_new_keyring;
    int preserve_fds;
    int listen_fds;             /* socket activation: fds 3.. before the preserved ones */
    bool terminal;              /* a terminal whatever process.terminal says (run -t) */
    bool no_cgroup;             /* the caller manages cgroups */
    bool systemd_cgroup;        /* through systemd (brig_cgroup_create_systemd) */
    const char *console_socket; /* receives the pty master with process.terminal */
    int *pty_master;            /* or: the caller takes the master (run relays it) */
    const int *stdio;           /* the init's fds 0, 1, 2; NULL: the caller's own */
    /* A handler (container/handler.h) and what its setup hook takes. */
    const struct brig_handler *handler;
    const void *handler_data;
};

int brig_container_create(const struct brig_create_options *opts, pid_t *init_pid,
                          brig_error_t *err);
/* create, then start (run): the start goes on with the state dir that
 * create opened and locked and the state it wrote, not read back. When the
 * start fails, *created says the container is there for the caller to
 * delete. */
int brig_container_create_started(const struct brig_create_options *opts, pid_t *init_pid,
                                  bool *created, brig_error_t *warning, brig_error_t *err);

/* Releases the init blocked on the exec fifo. A failing poststart hook is
 * not an error (the spec says warn and go on): it lands in *warning. */
int brig_container_start(const char *root, const char *id, brig_error_t *warning,
                         brig_error_t *err);

int brig_container_kill(const char *root, const char *id, int signal, bool all, brig_error_t *err);

/* Removes every trace. With `force`, a running container is killed first;
 * a missing container is then not an error. Without it, a running or
 * paused container is an error whose errnum is BRIG_E_STATE. Poststop
 * hook failures are warnings. */
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
    const struct brig_process *process; /* complete: the caller merges flags and spec */
    const char *console_socket;         /* with process.terminal: gets the master */
    int *pty_master;                    /* or the caller takes it (exec relays it) */
    const int *stdio;                   /* the process's fds 0, 1, 2; NULL: the caller's own */
    int preserve_fds;
    /* Sub-cgroups of the container's to run in, as runc's exec --cgroup
     * takes them: "[<controller>[,<controller>...]:]<path>" each
     * (brig_cgroup_sub_parse); none: the container's cgroup itself. */
    const char *const *cgroups;
    size_t n_cgroups;
    bool ignore_paused;
    /* The container's saved spec when the caller has read it already (for
     * the process defaults); NULL: read here. Saves parsing it twice. A
     * handler's container reads its own all the same, unless
     * spec_from_state says that `spec` is what brig_container_load_spec()
     * returned for this very container (its handler's transform applied),
     * as the handler's own layer reads it. */
    const struct brig_spec *spec;
    bool spec_from_state;
    /* The container's state dir when the caller holds it open and locked
     * already (brig_container_open, which read `state` too); NULL: opened
     * here. Saves opening, locking and reading it twice. Still the
     * caller's to close and free. */
    const struct brig_opened_container *opened;
};

/* Starts a process in the running container; *pid is its pid here. A
 * paused container, without ignore_paused, is an error whose errnum is
 * BRIG_E_STATE. */
int brig_container_exec(const struct brig_exec_options *opts, pid_t *pid, brig_error_t *err);

/* For a layer that starts processes through the container's own init
 * (a door the init keeps open): brig_container_exec's checks (running,
 * not paused: the same errors), then a pidfd that pins the init. -2,
 * with no error, for a created container: its init is not running its
 * program yet. */
int brig_container_init_pidfd(const struct brig_opened_container *c, const char *id,
                              brig_error_t *err);

/* The spec the container was created from (kept in its state dir); *spec
 * is NULL when there is none (a container made by an older brig). */
int brig_container_load_spec(int dir_fd, struct brig_spec **spec, brig_error_t *err);

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
