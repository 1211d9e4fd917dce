/* brig-init's side of the exec port (sandbox/exec_port.h): requests
 * from the host on one end of a socketpair, each started as a child of
 * ours in a session of its own, its pidfd sent back, its exit status
 * sent when it is reaped. */
#ifndef BRIG_INIT_EXEC_PORT_H
#define BRIG_INIT_EXEC_PORT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The socketpair, the host's end at BRIG_PORT_FD (whatever was there is
 * replaced). -1 after a message. */
int exec_port_open(void);

/* Stops taking requests (the sandbox is stopping): the host's next send
 * fails. The processes started keep their answers. */
void exec_port_close(void);

/* The most pollfds exec_port_pollfds fills. */
size_t exec_port_max_pollfds(void);

/* The port and every process's answer socket, into fds; returns how
 * many. exec_port_handle takes the same entries back with their revents. */
size_t exec_port_pollfds(struct pollfd *fds);
void exec_port_handle(const struct pollfd *fds, size_t n);

/* A reaped child: true when it was started through the port (its status
 * is sent on). */
bool exec_port_reaped(pid_t pid, int status);

#endif
