/* File descriptors passed over unix sockets (SCM_RIGHTS): the one
 * implementation the library has, used for the sync socket between the
 * runtime and a container's process, the console socket and the seccomp
 * listener.
 *
 * Raw I/O like brig_write_all(): failures return -1 with errno set and no
 * brig_error_t, because each caller names its own peer in the message
 * ("send pty master to `S`", "sync: receive"). */
#ifndef BRIG_FDPASS_H
#define BRIG_FDPASS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* One sendmsg of iov, with `fd` attached when fd >= 0 (none when -1):
 * retried on EINTR, MSG_NOSIGNAL so a closed peer is an EPIPE and not a
 * signal. Returns the bytes sent (a stream socket may take fewer). */
ssize_t brig_fd_sendmsg(int sock, const struct iovec *iov, size_t iovlen, int fd);

/* Sends all of data with `fd` riding on the first byte; on a stream socket
 * the rest follows without it. A seqpacket socket takes it in one message.
 * Returns 0 or -1. */
int brig_fd_send(int sock, const void *data, size_t len, int fd);

/* One recvmsg into iov, retried on EINTR. An fd that came with the message
 * is put in *fd, close-on-exec; *fd is -1 when none came. Returns the bytes
 * received, 0 when the peer closed its end. */
ssize_t brig_fd_recvmsg(int sock, struct iovec *iov, size_t iovlen, int *fd);

/* The same with up to BRIG_FDS_MAX fds: brig_fds_sendmsg attaches
 * fds[0..n_fds) to the message; brig_fds_recvmsg (flags: MSG_DONTWAIT or
 * 0) puts those that came in fds, close-on-exec, and their count in
 * *n_fds. */
#define BRIG_FDS_MAX 4
ssize_t brig_fds_sendmsg(int sock, const struct iovec *iov, size_t iovlen, const int *fds,
                         size_t n_fds);
ssize_t brig_fds_recvmsg(int sock, struct iovec *iov, size_t iovlen, int flags, int *fds,
                         size_t max_fds, size_t *n_fds);

#endif
