/* How long a sandbox lives: a time to live from its creation, an idle
 * timeout from its last activity (an exec, a session's input, a file in
 * or out, a download), and the default timeout of its execs. Kept in its
 * dir (layout.h) as HOME/ID/lifetime ("key=value" lines) and
 * HOME/ID/active (its mtime is the last activity), so that whatever
 * enforces them (the reaper, brig-reaper(8), reaper.h) finds them after
 * any restart:
 *
 *   created=1764301365123      ms since the epoch
 *   ttl=300000                 ms; 0: none
 *   idle=60000                 ms; 0: none
 *   exec_timeout=120000        ms; 0: none
 *   root=/run/brig             the state root of its container
 *
 * A reader skips keys it does not know (a later brig's). */
#ifndef BRIG_SANDBOX_LIFETIME_H
#define BRIG_SANDBOX_LIFETIME_H

#include <stddef.h>
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

/* CLOCK_REALTIME in ms. */
int64_t brig_sandbox_now_ms(void);

/* The record as text, and back. Pure. A root with a newline is refused;
 * the parser's errors name the line ("line 2: ..."), and a record without
 * `created` is one (a ttl would count from 1970). */
int brig_sandbox_lifetime_format(const struct brig_sandbox_lifetime *l, char **out,
                                 brig_error_t *err);
int brig_sandbox_lifetime_parse(const char *text, struct brig_sandbox_lifetime *l,
                                brig_error_t *err);

/* Writes the record of a new sandbox (and marks it active now). */
int brig_sandbox_lifetime_write(const char *id, const struct brig_sandbox_lifetime *l,
                                brig_error_t *err);

/* Reads it; a sandbox made without one reads as no limits (root NULL). */
int brig_sandbox_lifetime_read(const char *id, struct brig_sandbox_lifetime *l, brig_error_t *err);
void brig_sandbox_lifetime_clear(struct brig_sandbox_lifetime *l);

/* Marks the sandbox active now. A sandbox without a dir is not an error
 * (a `--profile` container has none), nor one without the file (made
 * before lifetimes were kept: it has no idle timeout to reset). Never fails the caller's operation:
 * errors are returned for the caller to ignore or report. */
int brig_sandbox_touch(const char *id, brig_error_t *err);

/* brig_sandbox_touch for the operations that are activity (an exec, a
 * session's input, a file in or out, a download): the idle clock starts
 * again. Not being able to say so fails none of them. */
void brig_sandbox_mark_active(const char *id);

/* The last activity (ms, CLOCK_REALTIME): HOME/ID/active's mtime; 0 when
 * there is none. */
int brig_sandbox_last_active(const char *id, int64_t *ms, brig_error_t *err);

/* The record (l may be NULL: not wanted) and when the sandbox is due to
 * go, from its record and its last activity: brig_sandbox_lifetime_deadline
 * over what is on disk (why may be NULL). */
int brig_sandbox_deadline(const char *id, struct brig_sandbox_lifetime *l, int64_t *deadline,
                          const char **why, brig_error_t *err);

/* A span for people: "45s" under 2 minutes, then "5m", "3h", "2d". Pure;
 * a negative span is 0s. */
void brig_sandbox_span(int64_t ms, char *buf, size_t len);

/* When the sandbox is due to go (ms, CLOCK_REALTIME; INT64_MAX: never)
 * given its record and last activity, and why ("ttl" or "idle"; NULL when
 * never; why itself may be NULL). The idle clock starts at its creation
 * when nothing happened since. Pure. */
int64_t brig_sandbox_lifetime_deadline(const struct brig_sandbox_lifetime *l, int64_t active_ms,
                                       const char **why);

#endif
