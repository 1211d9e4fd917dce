/* What enforces sandboxes' lifetimes (lifetime.h) while no command runs:
 * brig-reaper (man brig-reaper), one per sandbox home, started by the
 * first create that sets a ttl or an idle timeout. It removes each
 * sandbox of its home once its deadline passed, sleeps until the next
 * one (a minute at most, less when woken by SIGHUP), and exits when no
 * sandbox in its home has a limit left. A sandbox whose deadline passed
 * while none ran (a reboot) goes at its next pass. In the home (whose
 * entries starting with `.` are no sandbox's):
 *
 *   HOME/.reaper.lock   flock'ed by the running reaper, its pid inside
 *   HOME/.reaper.pass   flock'ed by whoever makes a pass (the reaper,
 *                       `brig sandbox reap`), so one removes at a time */
#ifndef BRIG_SANDBOX_REAPER_H
#define BRIG_SANDBOX_REAPER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define BRIG_REAPER_LOCK ".reaper.lock"
#define BRIG_REAPER_PASS ".reaper.pass"
#define BRIG_REAPER_NAME "brig-reaper"
#define BRIG_REAPER_LOG_ENV "BRIG_REAPER_LOG"
#define BRIG_REAPER_LOG_DEFAULT "/var/log/brig/reaper.log"
#define BRIG_REAPER_MAX_SLEEP_MS 60000
#define BRIG_REAPER_RETRY_MS 10000 /* after a removal that failed */

/* One sandbox a pass found due. */
struct brig_sandbox_reaped {
    const char *id;
    const char *why;     /* "ttl" or "idle"; NULL: its record can't be read */
    int64_t limit_ms;    /* that limit */
    int64_t late_ms;     /* how long past its deadline the pass came */
    const char *failure; /* NULL: removed; else why not (tried again later) */
};

struct brig_sandbox_reap_result {
    size_t removed, failed;
    size_t left;     /* sandboxes with a deadline to come, failed ones included */
    int64_t next_ms; /* the earliest of those deadlines; INT64_MAX: none */
};

typedef void brig_sandbox_reap_report(const struct brig_sandbox_reaped *r, void *ctx);

/* One pass over the home: every sandbox whose deadline passed removed
 * (brig_sandbox_remove, in the state root of its record), each told to
 * `report` (NULL: not told), and what is left. No home: nothing. */
int brig_sandbox_reap(brig_sandbox_reap_report *report, void *ctx,
                      struct brig_sandbox_reap_result *res, brig_error_t *err);

/* The running reaper's lock, tried for a second (one that is about to
 * exit lets go): 1 held, with our pid written in it and its fd in *fd; 0
 * when another reaper holds it. */
int brig_sandbox_reaper_lock(int *fd, brig_error_t *err);

/* The running reaper, if any, told to read the records again (a
 * sandbox with a limit was removed: it may have none left to wait for).
 * Best effort, nothing started. */
void brig_sandbox_reaper_wake(void);

/* This home's reaper running: one that holds the lock is woken (SIGHUP) to
 * read the records again; else one is started (as brig-reaper:
 * $BRIG_REAPER, the installed one, or beside the running program) and
 * waited for until it holds the lock. Called once a record with a limit
 * is written. */
int brig_sandbox_reaper_ensure(brig_error_t *err);

#endif
