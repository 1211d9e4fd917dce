/* How long a sandbox lives: a time to live from its creation, an idle
 * timeout from its last activity (an exec, a session's input, a file in
 * or out, a download), and the default timeout of its execs. Kept in its
 * dir (layout.h) as HOME/ID/lifetime ("key=value" lines) and
 * HOME/ID/active (its mtime is the last activity), so that whatever
 * enforces them (the reaper, brig-reaper(8)) finds them after any
 * restart. */
#ifndef BRIG_SANDBOX_LIFETIME_H
#define BRIG_SANDBOX_LIFETIME_H

#include <stdint.h>
#include <time.h>

#include "base/error.h"

#define BRIG_SANDBOX_LIFETIME "lifetime"
#define BRIG_SANDBOX_ACTIVE "active"

struct brig_sandbox_lifetime {
    int64_t created_ms;      /* CLOCK_REALTIME, ms */
    int64_t ttl_ms;          /* 0: none */
    int64_t idle_ms;         /* 0: none */
    int64_t exec_timeout_ms; /* 0: none */
    char *root;              /* the state root its container lives in (owned) */
};

/* Writes the record of a new sandbox (and marks it active now). */
int brig_sandbox_lifetime_write(const char *id, const struct brig_sandbox_lifetime *l,
                                brig_error_t *err);

/* Reads it; a sandbox made without one reads as no limits (root NULL). */
int brig_sandbox_lifetime_read(const char *id, struct brig_sandbox_lifetime *l, brig_error_t *err);
void brig_sandbox_lifetime_clear(struct brig_sandbox_lifetime *l);

/* Marks the sandbox active now. A sandbox without a dir is not an error
 * (a `--profile` container has none). Never fails the caller's operation:
 * errors are returned for the caller to ignore or report. */
int brig_sandbox_touch(const char *id, brig_error_t *err);

/* When the sandbox is due to go (ms, CLOCK_REALTIME; INT64_MAX: never)
 * given its record and last activity, and why ("ttl" or "idle"). Pure. */
int64_t brig_sandbox_lifetime_deadline(const struct brig_sandbox_lifetime *l, int64_t active_ms,
                                       const char **why);

#endif
