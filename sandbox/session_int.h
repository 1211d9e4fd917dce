/* What the parts of a session share and nothing else includes: the files
 * of its dir, the wire between a client (session.c) and the holder
 * (session_hold.c), the bounded output buffer (session_buf.c), the name
 * check (session_text.c) and the holder's entry (session_spawn.c).
 *
 *   HOME/ID/sessions/NAME/lock   flock'ed by the holder for its whole life
 *   HOME/ID/sessions/NAME/sock   its socket: one request per connection
 *   HOME/ID/sessions/NAME/info   pid=, holder=, started_ms=, cmd= lines
 *
 * A request is a struct brig_session_request then its chars and its
 * `until`; the answer a struct brig_session_reply then its data. Both
 * ends are built from one tree, but a holder outlives upgrades: the magic
 * number changes with the layout. */
#ifndef BRIG_SANDBOX_SESSION_INT_H
#define BRIG_SANDBOX_SESSION_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "sandbox/session.h"

#define BRIG_SESSION_LOCK "lock"
#define BRIG_SESSION_SOCK "sock"
#define BRIG_SESSION_INFO "info"
#define BRIG_SESSION_NAME_MAX 64
#define BRIG_SESSION_MAX_CHARS ((uint32_t) 1 << 20) /* input of one request */
#define BRIG_SESSION_MAX_UNTIL 4096u                /* an `until` regex */
#define BRIG_SESSION_DEFAULT_MAX_MS (5 * 60 * 1000)
#define BRIG_SESSION_KEEP_MS (10 * 60 * 1000) /* an exited session's output */
#define BRIG_SESSION_MAGIC 0x42535331u        /* "BSS1" */

enum brig_session_op {
    BRIG_SESSION_OP_INPUT = 1, /* send chars (maybe none), wait, take the output */
    BRIG_SESSION_OP_INFO,      /* what `ls` shows; takes nothing */
    BRIG_SESSION_OP_KILL,      /* kill the process, end the holder */
};

struct brig_session_request {
    uint32_t magic;
    uint32_t op;
    int32_t wait_ms; /* <= 0: no quiet period */
    int32_t max_ms;  /* <= 0: BRIG_SESSION_DEFAULT_MAX_MS */
    uint32_t n_chars, n_until;
};

struct brig_session_reply {
    int32_t errnum; /* 0, or the error's kind with its message as data */
    uint32_t alive;
    int32_t exit_status;
    int32_t pid;
    uint64_t dropped, unread;
    int64_t started_ms;
    uint32_t n_data; /* the output; info: the command */
};

/* A name as session.h allows it; errors read "invalid session name ...". */
int brig_session_name_validate(const char *name, brig_error_t *err);

/* Removes a session's files and its dir (`dir`, NAME in `sessions`),
 * by whoever holds its lock. */
void brig_session_remove_dir(int sessions, int dir, const char *name);

/* Header and data in one block to send (NULL when memory ran out). */
char *brig_session_reply_pack(const struct brig_session_reply *r, const char *data, size_t *len);

/* The ring of a session's unread output: at most `cap` bytes; appending
 * past that drops the oldest and counts them in `dropped` until the next
 * take. */
struct brig_session_buf {
    char *data;
    size_t cap, head, len;
    uint64_t dropped;
};
int brig_session_buf_init(struct brig_session_buf *b, size_t cap, brig_error_t *err);
void brig_session_buf_free(struct brig_session_buf *b);
void brig_session_buf_append(struct brig_session_buf *b, const char *p, size_t n);
/* The unread bytes in one piece (b->len of them, then a NUL), rotated in
 * place. */
const char *brig_session_buf_linear(struct brig_session_buf *b);
/* Hands out the unread bytes (NUL-terminated copy) and how many were
 * dropped before them, and starts afresh. */
int brig_session_buf_take(struct brig_session_buf *b, char **out, size_t *len, uint64_t *dropped,
                          brig_error_t *err);

/* The holder, in the grandchild brig_session_start forked: detaches,
 * starts the process, answers on its socket until the session ends.
 * lock_fd is the session's lock, held; report_fd a pipe on which the
 * starter hears one reply (ready, or the error). Never returns. */
__attribute__((noreturn)) void brig_session_hold(const struct brig_session_start_options *o,
                                                 int lock_fd, int report_fd);

/* What the holder's set-up hands its loop: its process on a pty, its
 * socket listening, its lock, and the dirs it watches and removes. */
struct brig_session_held {
    int master, listen_fd, lock_fd, sandbox_fd, sessions_fd, dir_fd;
    pid_t pid;
    int64_t started_ms; /* CLOCK_REALTIME */
    char *cmd;          /* argv, each word ended by a NUL */
    size_t cmd_len;
    const char *name;
};

/* The holder's loop (session_hold.c): answers until the session ends,
 * then removes its dir. Never returns. */
__attribute__((noreturn)) void brig_session_serve(const struct brig_session_held *s);

#endif
