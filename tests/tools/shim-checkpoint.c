#define _GNU_SOURCE
/* Sends one Checkpoint call straight to a containerd-shim-brig-v2 socket,
 * with runc's CheckpointOptions, as containerd's Go client can (ctr 1.6
 * sends no options for runtimes other than runc's, so `--exit` can't be
 * tested through it).
 *
 *   shim-checkpoint ADDRESS ID IMAGE_DIR [exit]
 *
 * ADDRESS: the shim's unix://PATH (the bundle's `address` file). Exits 0
 * when the shim answers OK, else prints the status and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "options.pb-c.h"
#include "task.pb-c.h"
#include "ttrpc.h"
#include "ttrpc.pb-c.h"

static int die(const char *what)
{
    perror(what);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: shim-checkpoint ADDRESS ID IMAGE_DIR [exit]\n");
        return 2;
    }
    const char *path = strncmp(argv[1], "unix://", 7) == 0 ? argv[1] + 7 : argv[1];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "shim-checkpoint: socket path too long: %s\n", path);
        return 2;
    }
    strcpy(sa.sun_path, path);

    Shimpb__CheckpointOptions opts = SHIMPB__CHECKPOINT_OPTIONS__INIT;
    opts.exit = argc == 5 && strcmp(argv[4], "exit") == 0;
    uint8_t obuf[64];
    Shimpb__Any any = SHIMPB__ANY__INIT;
    any.type_url = "containerd.runc.v1.CheckpointOptions";
    any.value.data = obuf;
    any.value.len = shimpb__checkpoint_options__pack(&opts, obuf);
    Shimpb__CheckpointTaskRequest req = SHIMPB__CHECKPOINT_TASK_REQUEST__INIT;
    req.id = argv[2];
    req.path = argv[3];
    req.options = &any;
    size_t plen = shimpb__checkpoint_task_request__get_packed_size(&req);
    uint8_t *payload = malloc(plen);
    if (payload == NULL)
        return die("malloc");
    shimpb__checkpoint_task_request__pack(&req, payload);

    uint8_t *frame = NULL;
    size_t len = 0;
    if (ttrpc_request_frame(1, "containerd.task.v2.Task", "Checkpoint", payload, plen, 0, NULL, 0,
                            &frame, &len, NULL)
        < 0) {
        fprintf(stderr, "shim-checkpoint: cannot frame the request\n");
        return 1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        return die(path);
    if (write(fd, frame, len) != (ssize_t) len)
        return die("write");

    uint8_t hdr[TTRPC_HEADER_LEN];
    if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr))
        return die("read the answer");
    struct ttrpc_frame f;
    ttrpc_header_get(hdr, &f);
    uint8_t *data = malloc(f.len ? f.len : 1);
    if (data == NULL || f.type != TTRPC_RESPONSE || f.len > TTRPC_MAX_DATA
        || (f.len && recv(fd, data, f.len, MSG_WAITALL) != (ssize_t) f.len)) {
        fprintf(stderr, "shim-checkpoint: no response frame\n");
        return 1;
    }
    Shimpb__Response *resp = shimpb__response__unpack(NULL, f.len, data);
    if (resp == NULL) {
        fprintf(stderr, "shim-checkpoint: undecodable response\n");
        return 1;
    }
    int rc = 0;
    if (resp->status && resp->status->code != 0) {
        fprintf(stderr, "shim-checkpoint: code %d: %s\n", resp->status->code,
                resp->status->message);
        rc = 1;
    }
    shimpb__response__free_unpacked(resp, NULL);
    free(data);
    free(frame);
    free(payload);
    close(fd);
    return rc;
}
