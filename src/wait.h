/* The foreground wait of run, exec and restore. */
#ifndef BRIG_WAIT_H
#define BRIG_WAIT_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* The signals brig forwards to the process it waits for: every one but the
 * faults of brig's own code (SIGSEGV, SIGBUS, SIGILL, SIGFPE), which must
 * still stop brig. The caller blocks them before the container exists, so
 * none is lost before the wait reads them from a signalfd of this set. */
void brig_forwarded_signals(sigset_t *set);

/* Waits for `pid` (a child, or an orphan adopted as subreaper), forwarding
 * the signals read from the signalfd `sfd` to it and relaying stdin/stdout
 * to the pty `master` when it is >= 0. With timeout_ms > 0, the process
 * group of `pid` is killed when the time passes and *timed_out is set.
 * Returns the exit status, 128+N for signal N. */
int brig_wait_forwarding(int sfd, pid_t pid, int master, int timeout_ms, bool *timed_out);

/* brig_wait_forwarding from a signalfd of its own, with stdin made raw
 * while a terminal (`master` >= 0) is relayed. The caller blocked the
 * forwarded signals before starting the process. Returns its status, 124
 * when the time limit killed it. */
int brig_wait_foreground(pid_t pid, int master, int timeout_ms, bool *timed_out);

#endif
