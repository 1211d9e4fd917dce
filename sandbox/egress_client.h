/* The runtime's side of the packages-only network (egress.h): a sandbox
 * registered with the host's proxy, brig-egress, started when it is not
 * running. Where the proxy keeps its state ($BRIG_EGRESS_DIR, else
 * /run/brig-egress):
 *
 *   DIR/control.sock      SOCK_SEQPACKET: "add KEY", "del KEY", "ping";
 *                         each answered "ok" or "error: WHY"
 *   DIR/lock              held by the running proxy
 *   DIR/sandboxes/KEY     one per sandbox: its state dir, its id, its
 *                         init's pid and start time, one per line
 *
 * KEY is a hash of the sandbox's state dir. A restarted proxy reads the
 * registry and listens in every sandbox again. */
#ifndef BRIG_SANDBOX_EGRESS_CLIENT_H
#define BRIG_SANDBOX_EGRESS_CLIENT_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

#define BRIG_EGRESS_DIR_ENV "BRIG_EGRESS_DIR"
#define BRIG_EGRESS_DIR_DEFAULT "/run/brig-egress"
#define BRIG_EGRESS_CONTROL "control.sock"
#define BRIG_EGRESS_LOCK "lock"
#define BRIG_EGRESS_REGISTRY "sandboxes"
#define BRIG_EGRESS_KEY_LEN 32

const char *brig_egress_dir(void);

/* Whether this host has an allow-list: an egress.conf ($BRIG_EGRESS_CONFIG,
 * else /etc/brig/egress.conf) or package sources of apt's. Then a sandbox's
 * network is `packages` unless it asks for another. */
bool brig_egress_configured(void);

/* The registry key of a state dir (a path), NUL-terminated. */
void brig_egress_key(const char *state_dir, char key[BRIG_EGRESS_KEY_LEN + 1]);

/* The allow-list file, when there is one, parsed: a sandbox on the
 * packages network is not created with one the proxy would refuse (the
 * error names its line). */
int brig_egress_check_conf(brig_error_t *err);

/* One request to the running proxy; 0 when it answered "ok", -1 with its
 * "error: ..." or why it could not be asked (errnum ECONNREFUSED or
 * ENOENT: no proxy running). */
int brig_egress_call(const char *request, brig_error_t *err);

/* The proxy running: asked, and when none answers, started (as
 * `brig-egress`: $BRIG_EGRESS, the installed one, or beside the running
 * program) and waited for. */
int brig_egress_ensure(brig_error_t *err);

/* The sandbox of `state_dir`, whose init is `pid`, registered, and the
 * proxy listening in its network namespace before this returns. */
int brig_egress_register(const char *state_dir, pid_t pid, brig_error_t *err);

/* The proxy running and listening in the sandbox of `state_dir`, which
 * is registered already (an exec: a proxy started again, or one that
 * could not listen there at its start, does it now, or says why). */
int brig_egress_relisten(const char *state_dir, brig_error_t *err);

/* Its registration removed and its listener closed (when the proxy runs:
 * a stopped proxy finds it gone at its next start). */
int brig_egress_unregister(const char *state_dir, brig_error_t *err);

#endif
