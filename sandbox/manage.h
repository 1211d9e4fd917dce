/* A sandbox's life as `brig sandbox` runs it (and any other front end
 * may): create one from brig's default spec with the sandbox profile,
 * remove every trace of it, list the sandboxes with their state and data
 * use, checkpoint one beside its data and restore it. Sandboxes live in
 * the home of layout.h; their containers in the state root the caller
 * passes. Nothing here prints: errors come back complete, in the words a
 * user reads ("sandbox create: ..."), or as libcontainer gave them. */
#ifndef BRIG_SANDBOX_MANAGE_H
#define BRIG_SANDBOX_MANAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"
#include "container/state.h"
#include "sandbox/profile.h"

struct brig_sandbox_create_options {
    const char *root; /* the state root */
    const char *id;
    bool no_cgroup; /* the caller manages cgroups */
    /* The knobs (brig_profile_settings_default, then the caller's
     * changes). data_dir and detached_init are not read: a sandbox's data
     * lives in its dir, and its init runs without a command. */
    const struct brig_profile_settings *settings;
    /* Its lifetime (lifetime.h), in ms; 0: none. With a ttl or an idle
     * timeout, the home's reaper (reaper.h) runs once create returns. */
    int64_t ttl_ms, idle_ms, exec_timeout_ms;
};

/* Makes the sandbox's dirs, writes its lifetime record and its bundle
 * (brig's default spec without a terminal), applies the profile and
 * starts it, detached. An id whose container exists is refused; a dir
 * left by a stopped sandbox is reused with its data. A failed create of a
 * new sandbox removes what it made (a reused dir gets its old record
 * back); what it could not remove lands in *warning beside the error. On
 * success *warning may hold the start's warning (a failed poststart
 * hook). */
int brig_sandbox_create(const struct brig_sandbox_create_options *o, brig_error_t *warning,
                        brig_error_t *err);

/* 1 when the sandbox has a dir or a container, 0 when neither; -1 for an
 * id that can't name one. */
int brig_sandbox_exists(const char *root, const char *id, brig_error_t *err);

/* Kills it and removes its container, data mount and dir; a missing part
 * is not an error (a half-created sandbox goes too). The home's reaper is
 * woken when it had a ttl or an idle timeout (reaper.h). */
int brig_sandbox_remove(const char *root, const char *id, brig_error_t *err);

/* What removals killed half-way left once their sandbox's dir was gone
 * (the records of its id range) is dropped. For `rm` of a sandbox that
 * is not there. */
void brig_sandbox_sweep(void);

struct brig_sandbox_entry {
    char *id;
    time_t mtime;            /* its dir's (when it was made, near enough) */
    bool has_container;      /* false: the leftovers of a failed create */
    enum brig_status status; /* with has_container */
    bool data_mounted;
    uint64_t data_used, data_size; /* bytes of /mnt/data, with data_mounted */
    /* Its lifetime (lifetime.h): ms, 0 for none; when it is due (ms,
     * CLOCK_REALTIME; INT64_MAX: never) and why ("ttl", "idle", NULL). */
    int64_t ttl_ms, idle_ms, exec_timeout_ms, deadline_ms;
    const char *deadline_why;
};

/* Every sandbox in the home, sorted by id; none when there is no home. */
int brig_sandbox_list(const char *root, struct brig_sandbox_entry **out, size_t *n,
                      brig_error_t *err);
void brig_sandbox_list_free(struct brig_sandbox_entry *entries, size_t n);

/* One sandbox's entry (free its id); a missing one is ENOENT. */
int brig_sandbox_get(const char *root, const char *id, struct brig_sandbox_entry *e,
                     brig_error_t *err);

/* criu's dump of the sandbox into image_path (NULL: HOME/ID/checkpoint);
 * its data stays where it is. Unless leave_running, its container is gone
 * afterwards while its dir remains for restore. */
int brig_sandbox_checkpoint(const char *root, const char *id, const char *image_path,
                            bool leave_running, brig_error_t *err);

/* A checkpointed sandbox brought back from image_path (NULL: the
 * default) with its own bundle; the restored init is a child of the
 * caller, its pid in *init_pid (NULL: not wanted). As after a create,
 * the host then drops its mounts of the sandbox's tree and data; where
 * that fails, the sandbox runs and *warning says why. */
int brig_sandbox_restore(const char *root, const char *id, const char *image_path, bool no_cgroup,
                         pid_t *init_pid, brig_error_t *warning, brig_error_t *err);

#endif
