/* The sync protocol between the runtime and the container's init, over a
 * SOCK_SEQPACKET socketpair: one message per packet, so no framing. */
#ifndef BRIG_SYNC_H
#define BRIG_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

enum brig_sync_type {
    /* child → runtime */
    BRIG_SYNC_USERNS_READY = 1, /* in a new user namespace: write my id maps */
    BRIG_SYNC_INIT_PID,         /* value: pid of the init (two-step spawn) */
    BRIG_SYNC_RUNTIME_HOOKS,    /* mounts are ready: run prestart/createRuntime */
    BRIG_SYNC_READY,            /* set up; about to block on the exec fifo */
    BRIG_SYNC_PTY_MASTER,       /* carries the terminal's master fd */
    BRIG_SYNC_SECCOMP_FD,       /* carries the seccomp notify fd for the listener */
    BRIG_SYNC_ERROR,            /* value: errno; payload: message */
    /* runtime → child */
    BRIG_SYNC_MAPS_DONE,
    BRIG_SYNC_CGROUP_DONE, /* the child is in its cgroup (no clone3 here) */
    BRIG_SYNC_HOOKS_DONE,  /* payload: the state JSON for container hooks */
};

#define BRIG_SYNC_PAYLOAD_MAX 65536

struct brig_sync_msg {
    uint32_t type;
    int32_t value;
    size_t len; /* payload length, not counting the NUL */
    int fd;     /* an fd that came with the message, or -1 */
    char payload[BRIG_SYNC_PAYLOAD_MAX + 1];
};

int brig_sync_send(int fd, uint32_t type, int32_t value, const char *payload, brig_error_t *err);
/* Sends `passed` along with the message (SCM_RIGHTS). */
int brig_sync_send_fd(int fd, uint32_t type, int passed, brig_error_t *err);
/* Returns 0 on a message, -1 with *err on error or when the peer closed
 * (errnum EPIPE then). */
int brig_sync_recv(int fd, struct brig_sync_msg *msg, brig_error_t *err);
/* Receives and checks the type; a BRIG_SYNC_ERROR from the peer becomes *err. */
int brig_sync_expect(int fd, uint32_t type, struct brig_sync_msg *msg, brig_error_t *err);

/* Two processes write to the runtime's end: the intermediate that forks
 * the final process reports its pid, and that process goes on alone, so
 * its next message can overtake the pid. Receives until the pid arrives
 * (then reaps the intermediate, `child`). */
int brig_sync_await_pid(int fd, pid_t child, pid_t *pid, brig_error_t *err);

/* ---- the runtime's loop ------------------------------------------------------- */

/* What the runtime knows of the process it is setting up (the init of a
 * new container, or a process exec'd into one). */
struct brig_sync_peer {
    int fd;         /* the runtime's end of the sync socket */
    pid_t child;    /* the process the runtime cloned */
    pid_t pid;      /* the process that goes on to execve: child, or 0 until
                     * INIT_PID names it (a go-between forked it) */
    int pty_master; /* from PTY_MASTER, else -1; the caller owns it */
};

/* Makes peer->pid known: when it is still 0, receives until INIT_PID
 * (brig_sync_await_pid). */
int brig_sync_peer_pid(struct brig_sync_peer *peer, brig_error_t *err);

/* What differs between the callers of brig_sync_drive(). A NULL handler
 * makes its message a protocol error. */
struct brig_sync_handlers {
    const char *what; /* names the spawn in an allocation failure */
    const char *gone; /* the error when the peer closes the socket before READY */
    /* USERNS_READY: the peer is in its new user namespace (maps, MAPS_DONE). */
    int (*userns_ready)(void *ctx, struct brig_sync_peer *peer, brig_error_t *err);
    /* RUNTIME_HOOKS: the peer's mounts are ready (hooks, HOOKS_DONE). */
    int (*runtime_hooks)(void *ctx, struct brig_sync_peer *peer, brig_error_t *err);
    /* SECCOMP_FD: the notify fd for the listener; peer->pid is known by
     * then, and the fd is closed once the handler returns. */
    int (*seccomp_fd)(void *ctx, struct brig_sync_peer *peer, int notify_fd, brig_error_t *err);
};

/* The runtime's side of the protocol, one loop for every spawn: receives
 * until READY, records INIT_PID (reaping the go-between that sent it) and
 * PTY_MASTER itself, hands the other messages to h, and turns the peer's
 * ERROR into *err. Returns 0 at READY, with peer->pid known. On failure the
 * caller kills what it started and closes peer->pty_master. */
int brig_sync_drive(struct brig_sync_peer *peer, const struct brig_sync_handlers *h, void *ctx,
                    brig_error_t *err);

/* Child side: reports *err to the runtime; used right before _exit(). */
void brig_sync_report_error(int fd, brig_error_t err);

#endif
