/* The shim's wire layer: frame headers, a Request frame byte for byte as
 * containerd sends it, the socket name hash, and the server over a real
 * socket (answers out of order, deferred answers, unknown service and
 * method codes). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "loop.h"
#include "base/sha256.h"
#include "task.pb-c.h"
#include "ttrpc.h"
#include "ttrpc.pb-c.h"
#include "unit.h"

static void h_echo(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    Shimpb__ConnectRequest *req = shimpb__connect_request__unpack(NULL, len, payload);
    if (!req) {
        ttrpc_reply_error(call, TTRPC_INTERNAL, "bad payload");
        return;
    }
    Shimpb__ConnectResponse resp = SHIMPB__CONNECT_RESPONSE__INIT;
    resp.shim_pid = 42;
    resp.version = req->id;
    ttrpc_reply(call, &resp.base);
    shimpb__connect_request__free_unpacked(req, NULL);
}

static int later_answered;

/* A deferred answer, as Wait gives when the process exits. */
static void answer_later(struct shim_loop *loop, void *data)
{
    later_answered++;
    ttrpc_reply_error(data, TTRPC_NOT_FOUND, "late: not found");
}

static void h_later(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    shim_loop_after(data, 50, answer_later, call, NULL);
}

static void stop(struct shim_loop *loop, void *data)
{
    shim_loop_stop(loop);
}

static const struct ttrpc_method methods[] = { { "Echo", h_echo }, { "Later", h_later } };

static void send_call(int fd, uint32_t stream, const char *service, const char *method,
                      const char *id)
{
    Shimpb__ConnectRequest req = SHIMPB__CONNECT_REQUEST__INIT;
    req.id = (char *) id;
    uint8_t payload[256];
    size_t plen = shimpb__connect_request__pack(&req, payload);
    uint8_t *frame = NULL;
    size_t len = 0;
    if (ttrpc_request_frame(stream, service, method, payload, plen, 0, NULL, 0, &frame, &len, NULL)
            == 0
        && write(fd, frame, len) != (ssize_t) len)
        fprintf(stderr, "short write\n");
    free(frame);
}

/* Reads one Response frame: its stream id and decoded envelope. */
static Shimpb__Response *read_response(int fd, uint32_t *stream)
{
    uint8_t hdr[TTRPC_HEADER_LEN], data[4096];
    if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr))
        return NULL;
    struct ttrpc_frame f;
    ttrpc_header_get(hdr, &f);
    if (f.type != TTRPC_RESPONSE || f.len > sizeof(data))
        return NULL;
    if (f.len && recv(fd, data, f.len, MSG_WAITALL) != (ssize_t) f.len)
        return NULL;
    *stream = f.stream;
    return shimpb__response__unpack(NULL, f.len, data);
}

static void test_server(void)
{
    char path[] = "/tmp/ttrpc-test-XXXXXX";
    int tmp = mkstemp(path);
    close(tmp);
    unlink(path);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    strcpy(sa.sun_path, path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "listen");

    struct shim_loop *loop = NULL;
    struct ttrpc_server *srv = NULL;
    CHECK(shim_loop_new(&loop, NULL) == 0, "loop");
    CHECK(ttrpc_server_new(loop, &srv, NULL) == 0, "server");
    CHECK(ttrpc_server_register(srv, "test.Svc", methods, 2, loop, NULL) == 0, "register");
    CHECK(ttrpc_server_listen(srv, lfd, NULL) == 0, "serve");

    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *) &sa, sizeof(sa)) == 0, "connect");
    send_call(c, 1, "test.Svc", "Later", "x");
    send_call(c, 3, "test.Svc", "Echo", "hello");
    send_call(c, 5, "test.Svc", "Frobnicate", "");
    send_call(c, 7, "no.Such", "Echo", "");
    send_call(c, 8, "test.Svc", "Echo", "even");
    shim_loop_after(loop, 300, stop, NULL, NULL);
    CHECK(shim_loop_run(loop, NULL) == 0, "loop ran");

    uint32_t stream = 0;
    Shimpb__Response *r = read_response(c, &stream);
    CHECK(r && stream == 3 && !r->status, "Echo answered first, without a status");
    Shimpb__ConnectResponse *cr = r ? shimpb__connect_response__unpack(NULL, r->payload.len,
                                                                       r->payload.data)
                                    : NULL;
    CHECK(cr && cr->shim_pid == 42 && strcmp(cr->version, "hello") == 0, "Echo payload");
    if (cr)
        shimpb__connect_response__free_unpacked(cr, NULL);
    shimpb__response__free_unpacked(r, NULL);

    r = read_response(c, &stream);
    CHECK(r && stream == 5 && r->status && r->status->code == TTRPC_UNIMPLEMENTED
              && strcmp(r->status->message, "method Frobnicate") == 0,
          "unknown method: UNIMPLEMENTED");
    shimpb__response__free_unpacked(r, NULL);
    r = read_response(c, &stream);
    CHECK(r && stream == 7 && r->status && r->status->code == TTRPC_UNIMPLEMENTED
              && strcmp(r->status->message, "service no.Such") == 0,
          "unknown service: UNIMPLEMENTED");
    shimpb__response__free_unpacked(r, NULL);
    r = read_response(c, &stream);
    CHECK(r && stream == 8 && r->status && r->status->code == TTRPC_INVALID_ARGUMENT,
          "even stream id: INVALID_ARGUMENT");
    shimpb__response__free_unpacked(r, NULL);
    r = read_response(c, &stream);
    CHECK(r && stream == 1 && r->status && r->status->code == TTRPC_NOT_FOUND
              && strcmp(r->status->message, "late: not found") == 0,
          "deferred answer comes last");
    shimpb__response__free_unpacked(r, NULL);

    close(c);

    /* A client hangs up while its deferred call is pending (a Wait whose
     * caller went away): the answer is still made and dropped, and another
     * client is served as before. */
    later_answered = 0;
    int gone = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(gone, (struct sockaddr *) &sa, sizeof(sa)) == 0, "first client connects");
    send_call(gone, 1, "test.Svc", "Later", "x");
    shim_loop_after(loop, 10, stop, NULL, NULL);
    CHECK(shim_loop_run(loop, NULL) == 0, "loop ran with the call pending");
    close(gone);
    int other = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(other, (struct sockaddr *) &sa, sizeof(sa)) == 0, "second client connects");
    send_call(other, 1, "test.Svc", "Later", "y");
    send_call(other, 3, "test.Svc", "Echo", "still here");
    shim_loop_after(loop, 300, stop, NULL, NULL);
    CHECK(shim_loop_run(loop, NULL) == 0, "loop ran after the hang-up");
    CHECK(later_answered == 2, "the departed client's deferred call was still answered");
    r = read_response(other, &stream);
    cr = r ? shimpb__connect_response__unpack(NULL, r->payload.len, r->payload.data) : NULL;
    CHECK(r && stream == 3 && cr && strcmp(cr->version, "still here") == 0,
          "second client's call answered after the first hung up");
    if (cr)
        shimpb__connect_response__free_unpacked(cr, NULL);
    shimpb__response__free_unpacked(r, NULL);
    r = read_response(other, &stream);
    CHECK(r && stream == 1 && r->status && r->status->code == TTRPC_NOT_FOUND,
          "second client's deferred call answered");
    shimpb__response__free_unpacked(r, NULL);
    close(other);

    ttrpc_server_free(srv);
    shim_loop_free(loop);
    unlink(path);
}

int main(void)
{
    struct ttrpc_frame f = { .len = 0x01020304, .stream = 0x0a0b0c0d, .type = 2, .flags = 1 };
    uint8_t hdr[TTRPC_HEADER_LEN];
    ttrpc_header_put(hdr, &f);
    static const uint8_t want_hdr[] = { 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 2, 1 };
    CHECK(memcmp(hdr, want_hdr, sizeof(want_hdr)) == 0,
          "header is big-endian length, stream, type, flags");
    struct ttrpc_frame g;
    ttrpc_header_get(hdr, &g);
    CHECK(g.len == f.len && g.stream == f.stream && g.type == 2 && g.flags == 1,
          "header round trip");

    /* Connect{id:"trace1"} on stream 3, as containerd sends it. */
    static const uint8_t connect_frame[] = "\x00\x00\x00\x2c\x00\x00\x00\x03\x01\x00"
                                           "\x0a\x17"
                                           "containerd.task.v2.Task"
                                           "\x12\x07"
                                           "Connect"
                                           "\x1a\x08\x0a\x06"
                                           "trace1";
    static const uint8_t payload[] = "\x0a\x06trace1";
    uint8_t *frame = NULL;
    size_t len = 0;
    CHECK(ttrpc_request_frame(3, "containerd.task.v2.Task", "Connect", payload, 8, 0, NULL, 0,
                              &frame, &len, NULL)
              == 0,
          "request frame");
    CHECK(len == sizeof(connect_frame) - 1 && memcmp(frame, connect_frame, len) == 0,
          "request frame matches containerd's bytes");
    free(frame);

    char hex[65];
    brig_sha256_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
              "sha256 of nothing");
    const char *name = "/tmp/ctd/containerd.sock/default/probe";
    brig_sha256_hex(name, strlen(name), hex);
    CHECK_STR(hex, "c6afa1fdf01ad9e44996708c1c11e5cfaa21a754c312b87f0fd1b4b160c70a58",
              "socket name containerd computes for address/namespace/id");
    char block[200];
    memset(block, 'a', sizeof(block));
    brig_sha256_hex(block, sizeof(block), hex);
    CHECK_STR(hex, "c2a908d98f5df987ade41b5fce213067efbcc21ef2240212a41e54b5e7c28ae5",
              "sha256 over several blocks");

    test_server();
    return unit_done();
}
