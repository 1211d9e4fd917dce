#define _GNU_SOURCE
#include "process/sync.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"

struct wire_header {
    uint32_t type;
    int32_t value;
};

int brig_sync_send(int fd, uint32_t type, int32_t value, const char *payload, brig_error_t *err)
{
    struct wire_header h = { type, value };
    size_t len = payload ? strnlen(payload, BRIG_SYNC_PAYLOAD_MAX) : 0;
    struct iovec iov[2] = { { &h, sizeof h }, { (void *) payload, len } };
    if (brig_fd_sendmsg(fd, iov, len ? 2 : 1, -1) < 0)
        return brig_error_set(err, errno, "sync: send");
    return 0;
}

int brig_sync_send_fd(int fd, uint32_t type, int passed, brig_error_t *err)
{
    struct wire_header h = { type, 0 };
    if (brig_fd_send(fd, &h, sizeof h, passed) < 0)
        return brig_error_set(err, errno, "sync: send fd");
    return 0;
}

int brig_sync_recv(int fd, struct brig_sync_msg *msg, brig_error_t *err)
{
    struct wire_header h;
    struct iovec iov[2] = { { &h, sizeof h }, { msg->payload, BRIG_SYNC_PAYLOAD_MAX } };
    ssize_t r = brig_fd_recvmsg(fd, iov, 2, &msg->fd);
    if (r < 0)
        return brig_error_set(err, errno, "sync: receive");
    if (r == 0)
        return brig_error_set(err, EPIPE, "sync: peer went away");
    if ((size_t) r < sizeof h)
        return brig_error_set(err, EPROTO, "sync: short message");
    msg->type = h.type;
    msg->value = h.value;
    msg->len = (size_t) r - sizeof h;
    msg->payload[msg->len] = '\0';
    return 0;
}

int brig_sync_expect(int fd, uint32_t type, struct brig_sync_msg *msg, brig_error_t *err)
{
    if (brig_sync_recv(fd, msg, err) < 0)
        return -1;
    if (msg->type == BRIG_SYNC_ERROR)
        return brig_error_from_message(err, msg->value, msg->payload);
    if (msg->type != type)
        return brig_error_set(err, EPROTO, "sync: expected message %u, got %u", type, msg->type);
    return 0;
}

int brig_sync_await_pid(int fd, pid_t child, pid_t *pid, brig_error_t *err)
{
    struct brig_sync_msg *msg = malloc(sizeof *msg);
    if (msg == NULL)
        return brig_error_set(err, ENOMEM, "sync");
    int r = brig_sync_expect(fd, BRIG_SYNC_INIT_PID, msg, err);
    if (r == 0)
        *pid = msg->value;
    free(msg);
    if (r == 0 && *pid != child)
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
    return r;
}

int brig_sync_peer_pid(struct brig_sync_peer *peer, brig_error_t *err)
{
    return peer->pid == 0 ? brig_sync_await_pid(peer->fd, peer->child, &peer->pid, err) : 0;
}

static int unexpected(const struct brig_sync_msg *msg, brig_error_t *err)
{
    return brig_error_set(err, EPROTO, "sync: unexpected message %u", msg->type);
}

/* One message that is not READY; 0 to go on receiving. */
static int drive_one(struct brig_sync_peer *peer, const struct brig_sync_handlers *h, void *ctx,
                     const struct brig_sync_msg *msg, brig_error_t *err)
{
    switch (msg->type) {
    case BRIG_SYNC_USERNS_READY:
        return h->userns_ready ? h->userns_ready(ctx, peer, err) : unexpected(msg, err);
    case BRIG_SYNC_INIT_PID:
        peer->pid = msg->value;
        /* The go-between exits once it has forked the process. */
        if (peer->pid != peer->child)
            while (waitpid(peer->child, NULL, 0) < 0 && errno == EINTR)
                ;
        return 0;
    case BRIG_SYNC_RUNTIME_HOOKS:
        return h->runtime_hooks ? h->runtime_hooks(ctx, peer, err) : unexpected(msg, err);
    case BRIG_SYNC_PTY_MASTER:
        if (msg->fd < 0)
            return brig_error_set(err, EPROTO, "sync: terminal message without an fd");
        if (peer->pty_master >= 0)
            close(peer->pty_master);
        peer->pty_master = msg->fd;
        return 0;
    case BRIG_SYNC_SECCOMP_FD: {
        if (msg->fd < 0)
            return brig_error_set(err, EPROTO, "sync: seccomp message without an fd");
        cleanup_close int notify_fd = msg->fd;
        if (h->seccomp_fd == NULL)
            return unexpected(msg, err);
        if (brig_sync_peer_pid(peer, err) < 0)
            return -1;
        return h->seccomp_fd(ctx, peer, notify_fd, err);
    }
    case BRIG_SYNC_ERROR:
        return brig_error_from_message(err, msg->value, msg->payload);
    default:
        return unexpected(msg, err);
    }
}

int brig_sync_drive(struct brig_sync_peer *peer, const struct brig_sync_handlers *h, void *ctx,
                    brig_error_t *err)
{
    cleanup_free struct brig_sync_msg *msg = malloc(sizeof *msg);
    if (msg == NULL)
        return brig_error_set(err, ENOMEM, "%s", h->what);
    for (;;) {
        if (brig_sync_recv(peer->fd, msg, err) < 0) {
            if ((*err)->errnum == EPIPE)
                return brig_error_set(err, 0, "%s", h->gone);
            return -1;
        }
        if (msg->type == BRIG_SYNC_READY)
            return brig_sync_peer_pid(peer, err);
        if (drive_one(peer, h, ctx, msg, err) < 0)
            return -1;
    }
}

void brig_sync_report_error(int fd, brig_error_t err)
{
    brig_error_t ignored = NULL;
    brig_sync_send(fd, BRIG_SYNC_ERROR, err ? err->errnum : 0, err ? err->msg : "unknown error",
                   &ignored);
    brig_error_release(&ignored);
}
