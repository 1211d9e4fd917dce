/* A process run in a sandbox the way every front end runs one (`brig
 * sandbox exec`, the API's exec, a session): the sandbox's rules (user,
 * no capabilities, its environment) come from the handler; this adds the
 * sandbox's own defaults (cwd /mnt/data, the exec timeout its lifetime
 * set, exec.h's argv and env) and marks the sandbox active (lifetime.h).
 * Nothing here prints or waits on signals: the CLI forwards its own, the
 * API server's worker only waits. */
#ifndef BRIG_SANDBOX_EXEC_H
#define BRIG_SANDBOX_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

struct brig_sandbox_exec_options {
    const char *root; /* the state root */
    const char *id;
    char *const *argv; /* NULL-terminated, at least one */
    char *const *env;  /* NAME=VALUE, NULL-terminated, over the sandbox's; NULL: none */
    const char *cwd;   /* NULL: the init's (/mnt/data, or its template's WorkingDir) */
    const char *user;  /* NULL, or the sandbox's one user: "1000", "1000:1000", "sandbox"
                          (a template's user: its ids or name) */
    bool tty;          /* a pty: its master lands in *pty_master */
    int *pty_master;   /* with tty */
    /* With tty, set before the process runs: LF sent as it is (no CR
     * before it), and a size (0 rows: the kernel's default). */
    bool pty_raw_newlines;
    unsigned short pty_rows, pty_columns;
    const int *stdio; /* fds 0, 1, 2 of the process; NULL: the caller's own */
    /* 0: the sandbox's exec timeout (lifetime.h; none when unset); -1:
     * none whatever the sandbox says; > 0: this many ms. */
    int timeout_ms;
};

/* A process started either of two ways. Without a terminal or a `user`,
 * the sandbox's init starts it (exec_port.h): it is the init's child,
 * `pidfd` and `port` are set, and the end is `port` becoming readable.
 * Otherwise (or for a sandbox whose init has no port) the classic way:
 * `pid` is the caller's child, or an orphan it adopts as subreaper, and
 * pidfd and port are -1. */
struct brig_sandbox_exec {
    pid_t pid;      /* as the host sees it */
    int timeout_ms; /* what the caller must enforce: 0 for none */
    int pidfd;      /* the init's child: signals go through it */
    int port;       /* the init's child: its exit status comes here */
};

/* Checks the options (an unknown user, a relative cwd, an empty argv are
 * errors in the user's words: "sandbox exec: ..."), then starts the
 * process. The caller must be a subreaper (prctl PR_SET_CHILD_SUBREAPER)
 * to wait for one started the classic way. brig_sandbox_exec_release
 * closes what a started one holds. */
int brig_sandbox_exec_start(const struct brig_sandbox_exec_options *o, struct brig_sandbox_exec *ex,
                            brig_error_t *err);

/* Waits for a started process without relaying anything: after
 * ex->timeout_ms its process group is killed, *timed_out set and 124
 * returned. When hangup_fd (-1: none) reports an error or a hangup (the
 * write end of a pipe whose reader is gone: no one is left to wait for
 * the result), the process group is killed too. Returns the exit status
 * (128+N for signal N), or -1 with *err. */
int brig_sandbox_exec_wait(const struct brig_sandbox_exec *ex, int hangup_fd, bool *timed_out,
                           brig_error_t *err);

/* For a caller that waits itself: `sig` to the process; SIGKILL to its
 * whole process group; the status of one the init started once its
 * `port` is readable (as brig_sandbox_exec_wait returns it). */
void brig_sandbox_exec_signal(const struct brig_sandbox_exec *ex, int sig);
void brig_sandbox_exec_kill_group(const struct brig_sandbox_exec *ex);
int brig_sandbox_exec_port_status(const struct brig_sandbox_exec *ex, brig_error_t *err);
void brig_sandbox_exec_release(struct brig_sandbox_exec *ex);

#endif
