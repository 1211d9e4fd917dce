/* The exec port: a sandbox's processes started by its own init.
 *
 * An exec the classic way (brig_container_exec) builds the process from
 * nothing each time: the spec read back, the seccomp program loaded into
 * the kernel, every cgroup joined, every namespace entered. A sandbox's
 * brig-init already is all of that, and a child of it inherits it whole.
 * So brig-init (started with --exec-port) keeps one end of a seqpacket
 * socketpair at BRIG_PORT_FD; the host takes a copy of it with
 * pidfd_getfd(2), and sends each request on it: argv, env and cwd, with
 * a fresh socketpair's end for the answers and the process's stdio.
 *
 * The answers come from inside the sandbox, so the host trusts none of
 * them beyond the sandbox: the pidfd that comes back must name a process
 * of the sandbox's pid namespace, and the exit status is only what it
 * says of its own process. A process started this way is the init's
 * child: it is signalled through its pidfd, its process group through
 * PIDFD_SIGNAL_PROCESS_GROUP (or the init, on kernels before 6.9), and
 * its status comes as a message.
 *
 * This header is the wire format brig-init shares, then the host's side. */
#ifndef BRIG_SANDBOX_EXEC_PORT_H
#define BRIG_SANDBOX_EXEC_PORT_H

#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define BRIG_PORT_FD 3
#define BRIG_PORT_MAGIC 0x62726778u /* "brgx" */
#define BRIG_PORT_VERSION 1
/* The largest request: argv, env and cwd with their NULs. Bigger ones go
 * the classic way. */
#define BRIG_PORT_REQUEST_MAX 65536
/* How many processes an init keeps ports for at once; past it, it says
 * EAGAIN and the host goes the classic way. */
#define BRIG_PORT_PROCESSES_MAX 256

/* Host to init, on BRIG_PORT_FD, with four fds: the answer socket, then
 * the process's stdin, stdout, stderr. The strings follow the header:
 * n_argv, then n_env (NAME=VALUE, put over the init's own environment in
 * that order), then the cwd ("" for the init's own), each ending in NUL. */
struct brig_port_request {
    uint32_t magic, version;
    uint32_t n_argv, n_env;
};

/* Init to host on the answer socket, and host to init for a kill. */
enum brig_port_kind {
    BRIG_PORT_STARTED = 'S', /* pid (the init's view); the pidfd rides along */
    BRIG_PORT_FAILED = 'F',  /* error: an errno; stage says where */
    BRIG_PORT_EXITED = 'X',  /* status: as wait(2) gives it */
    BRIG_PORT_KILL = 'K',    /* host to init: SIGKILL to the process group */
};

enum brig_port_stage {
    BRIG_PORT_AT_START = 0, /* the request, or fork */
    BRIG_PORT_AT_PATH = 1,  /* no argv[0] in the env's PATH */
    BRIG_PORT_AT_CWD = 2,
    BRIG_PORT_AT_EXEC = 3,
};

struct brig_port_answer {
    uint32_t magic;
    uint32_t kind, stage;
    int32_t error, pid, status;
};

struct brig_sandbox_exec;
struct brig_opened_container;

/* The host's side. brig_sandbox_port_start sends one request to the
 * sandbox's init (the state dir opened and locked by the caller) and
 * waits for it to start: ex's pid, pidfd and answer socket set. Returns
 * 0, -1 with *err (a command that can't run is BRIG_E_INPUT, as the
 * classic way says it), or 1 when there is no port to use (an init
 * started without one, too big a request, too many processes at once):
 * then nothing was started and the caller goes the classic way. */
int brig_sandbox_port_start(const struct brig_opened_container *c, const char *id,
                            char *const *argv, char *const *env, const char *cwd, const int *stdio,
                            struct brig_sandbox_exec *ex, brig_error_t *err);

/* The exit status once the answer socket is readable (polled by the
 * caller): as brig_sandbox_exec_wait returns it, or -1 with *err when the
 * init went away without saying. */
int brig_sandbox_port_status(const struct brig_sandbox_exec *ex, brig_error_t *err);

/* SIGKILL to the process's group (the init asked as well on kernels
 * without PIDFD_SIGNAL_PROCESS_GROUP). */
void brig_sandbox_port_kill_group(const struct brig_sandbox_exec *ex);

#endif
