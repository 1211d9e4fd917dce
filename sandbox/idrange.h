/* Host id ranges for sandboxes' user namespaces: 65536 uids and as many
 * gids per sandbox, that no other sandbox and no host account holds.
 *
 * The pool is the `brig` entry of /etc/subuid and /etc/subgid ($BRIG_SUBUID
 * and $BRIG_SUBGID name other files, for tests) when both have one, else BRIG_IDRANGE_DEFAULT_START
 * for BRIG_IDRANGE_DEFAULT_COUNT ids (far above accounts, below 2^31, clear of the ranges systemd
 * gives meaning to). A range is a slot of the pool: slot i is uids uid_start + i*65536 and gids
 * gid_start + i*65536. A slot that holds an id of /etc/passwd or /etc/group, or meets another
 * user's /etc/subuid or /etc/subgid entry, is never handed out.
 *
 * Who holds a range is kept twice: a record per range in the records dir
 * ($BRIG_IDRANGE_DIR, or /var/lib/brig/idranges), named by its first uid
 * and naming its owner (a directory: canonical path, device and inode),
 * and a file `idrange` in the owner's dir. A recorded range is never
 * handed out again, whatever pool it came from. Claimed again (a
 * restore), a range must still be a clear slot of the pool. Records are made and removed under a
 * lock of the records dir, so concurrent creates never share a range. A record whose owner dir is
 * gone (a runtime killed half-way) is reclaimed when the pool runs out. */
#ifndef BRIG_SANDBOX_IDRANGE_H
#define BRIG_SANDBOX_IDRANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define BRIG_IDRANGE_SIZE 65536u
#define BRIG_IDRANGE_USER "brig"
#define BRIG_IDRANGE_DEFAULT_START 1879048192u                 /* 0x70000000 */
#define BRIG_IDRANGE_DEFAULT_COUNT (4094u * BRIG_IDRANGE_SIZE) /* to 0x7ffdffff */
#define BRIG_IDRANGE_DIR_ENV "BRIG_IDRANGE_DIR"
#define BRIG_IDRANGE_DIR_DEFAULT "/var/lib/brig/idranges"
#define BRIG_IDRANGE_FILE "idrange" /* in the owner's dir */

struct brig_idpool {
    uint32_t uid_start, uid_count;
    uint32_t gid_start, gid_count;
    bool from_subid; /* false: the default */
};

/* The host ids that a sandbox's 0 maps to; BRIG_IDRANGE_SIZE of each. */
struct brig_idrange {
    uint32_t uid, gid;
};

/* Ids some other owner holds: [start, start + count). */
struct brig_id_span {
    uint32_t start, count;
};

/* ---- pure: no file read ---- */

/* The pool from the texts of /etc/subuid and /etc/subgid (NULL: no such
 * file). Neither has a `brig` line: the default. One has and the other
 * not, or a line too small (under 65536 ids), starting below 65536 or
 * running past 2^32: an error naming the file and the line. */
int brig_idpool_parse(const char *subuid, const char *subgid, struct brig_idpool *pool,
                      brig_error_t *err);

/* How many ranges the pool holds. */
size_t brig_idpool_slots(const struct brig_idpool *pool);

/* Slot `slot` as a range. */
struct brig_idrange brig_idpool_range(const struct brig_idpool *pool, size_t slot);

/* The slot a range is, or -1 when it is not one of the pool's. */
long brig_idpool_slot_of(const struct brig_idpool *pool, const struct brig_idrange *r);

/* Whether a slot's uids miss every span of `uids` and its gids every one
 * of `gids`. */
bool brig_idpool_slot_clear(const struct brig_idpool *pool, size_t slot,
                            const struct brig_id_span *uids, size_t n_uids,
                            const struct brig_id_span *gids, size_t n_gids);

/* The first slot clear in that sense, in one pass over the spans (a
 * host with a thousand sandboxes holds a thousand); -1 when none is, -2
 * when out of memory. */
long brig_idpool_first_clear(const struct brig_idpool *pool, const struct brig_id_span *uids,
                             size_t n_uids, const struct brig_id_span *gids, size_t n_gids);

/* Adds to *spans the ranges of every /etc/subuid-style line of `text`
 * whose user is not `except`, and (ids, when not NULL) the third field of
 * every /etc/passwd- or /etc/group-style line of `ids`. -1 on ENOMEM. */
int brig_id_spans_add_subid(const char *text, const char *except, struct brig_id_span **spans,
                            size_t *n);
int brig_id_spans_add_accounts(const char *text, struct brig_id_span **spans, size_t *n);

/* ---- the records ---- */

/* The range `owner_dir` holds, or a new one recorded for it. */
int brig_idrange_acquire(const char *owner_dir, struct brig_idrange *out, brig_error_t *err);

/* That very range for `owner_dir` (a restore): taken again when free,
 * kept when the owner holds it, an error when someone else does. */
int brig_idrange_claim(const char *owner_dir, const struct brig_idrange *r, brig_error_t *err);

/* The range `owner_dir` holds: 1 and *out, or 0 when it holds none. */
int brig_idrange_read(const char *owner_dir, struct brig_idrange *out, brig_error_t *err);

/* Frees the range of `owner_dir` (its record and its file). Holding none
 * is not an error. */
int brig_idrange_release(const char *owner_dir, brig_error_t *err);

/* Removes every record whose owner is gone: what a removal killed between
 * its owner's dir and its record left (allocation does it too, once the
 * pool looks full). */
int brig_idrange_reclaim(brig_error_t *err);

/* Removes the record of range `r` if it names `owner` (a canonical path,
 * as the owner's was when it held it): for an owner dir already removed,
 * so that its range is handed out only once nothing of it is left. */
int brig_idrange_forget(const char *owner, const struct brig_idrange *r, brig_error_t *err);

#endif
