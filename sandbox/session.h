/* Sessions: named, long-lived processes in a sandbox that take input and
 * keep their output (`brig sandbox session`, the API's sessions). Each is
 * held by a small process of its own on the host (the holder), started
 * by brig_session_start and independent of whoever started it: it owns
 * the process's pty, keeps what it wrote in a bounded buffer, and answers
 * on a unix socket in the sandbox's dir (HOME/ID/sessions/NAME/). A
 * session ends with its process or its sandbox; its last output can
 * still be read once after its process exited. */
#ifndef BRIG_SANDBOX_SESSION_H
#define BRIG_SANDBOX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define BRIG_SESSION_DIR "sessions"            /* in HOME/ID */
#define BRIG_SESSION_BUFFER ((size_t) 1 << 20) /* unread output kept, bytes */

struct brig_session_start_options {
    const char *root; /* the state root */
    const char *id;
    const char *name;  /* [A-Za-z0-9_.-], 1-64, not starting with '.' */
    char *const *argv; /* NULL: an interactive bash */
    char *const *env;  /* NAME=VALUE over the sandbox's; NULL: none */
    const char *cwd;   /* NULL: /mnt/data */
    const char *user;  /* as exec.h takes it */
};

struct brig_session_info {
    char *name;
    pid_t pid;          /* the process, as the sandbox sees it (the host's pid once it exited) */
    pid_t host_pid;     /* the process, as the host sees it */
    char **argv;        /* its command, NULL-terminated */
    bool alive;         /* false: exited, output left to read */
    int exit_status;    /* with !alive: 128+N for signal N */
    uint64_t unread;    /* bytes waiting to be read */
    int64_t started_ms; /* CLOCK_REALTIME */
};
void brig_session_info_clear(struct brig_session_info *info);

/* Starts the session and returns once its holder answers (or with the
 * holder's error: a bad user, cwd or command). A name whose process runs
 * is an error with errnum EEXIST; the remains of one whose process exited
 * are replaced. A missing sandbox is ENOENT, a stopped one BRIG_E_STATE,
 * bad options BRIG_E_INPUT. argv NULL: `bash --norc --noediting -i` with
 * PS1="$ "; every session gets TERM=dumb and PAGER=cat (env over them).
 * The holder is forked from the caller (double fork, setsid), keeps none
 * of its fds, and is reparented to the caller if it is a subreaper. */
int brig_session_start(const struct brig_session_start_options *o, struct brig_session_info *info,
                       brig_error_t *err);

struct brig_session_output {
    char *data; /* what the session wrote since the last read (owned) */
    size_t len;
    uint64_t dropped; /* bytes lost to the buffer's bound before this read */
    bool alive;
    int exit_status; /* with !alive */
};
void brig_session_output_clear(struct brig_session_output *out);

/* Sends `chars` (n bytes; none: a plain read) to the session, then waits
 * until its output has been quiet for wait_ms (after the last output, or
 * the request; <= 0: no quiet period), or matches `until` (a POSIX
 * extended regex over all that is unread as one text, `$` its end; NULL:
 * none), or the process exits, at most max_ms (<= 0: 5 minutes), and
 * returns what it wrote since the last read. When out->alive is false the
 * process had exited: this was its last output and the session is gone.
 * An unknown session is ENOENT; a bad regex BRIG_E_INPUT. */
int brig_session_input(const char *id, const char *name, const char *chars, size_t n, int wait_ms,
                       const char *until, int max_ms, struct brig_session_output *out,
                       brig_error_t *err);

/* Every session of the sandbox, sorted by name (none without a dir). */
int brig_session_list(const char *id, struct brig_session_info **out, size_t *n, brig_error_t *err);
void brig_session_list_free(struct brig_session_info *list, size_t n);

/* Kills the session's process (its process group) and ends the holder. */
int brig_session_kill(const char *id, const char *name, brig_error_t *err);

/* C escapes (\n \t \r \\ \e \a \b \0 \xHH \NNN) as `session input` reads
 * its CHARS; pure. A bad escape is BRIG_E_INPUT naming where it is. */
int brig_session_unescape(const char *text, char **out, size_t *len, brig_error_t *err);

#endif
