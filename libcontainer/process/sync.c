#define _GNU_SOURCE
#include "process/sync.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/wait.h>

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

void brig_sync_report_error(int fd, brig_error_t err)
{
    brig_error_t ignored = NULL;
    brig_sync_send(fd, BRIG_SYNC_ERROR, err ? err->errnum : 0, err ? err->msg : "unknown error",
                   &ignored);
    brig_error_release(&ignored);
}
