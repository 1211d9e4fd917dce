/* ttrpc: gRPC's service model over a unix socket without HTTP/2. Frames
 * are a 10-byte header (data length and stream id, big-endian u32; message
 * type; flags) and a protobuf payload; a connection carries many streams,
 * answered in any order. This is the server containerd talks to, written
 * for the shim's single-threaded event loop: a handler may answer its call
 * at once or keep it and answer later (Wait). */
#ifndef SHIM_TTRPC_H
#define SHIM_TTRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "base/error.h"
#include "loop.h"

#define TTRPC_HEADER_LEN 10
#define TTRPC_MAX_DATA (4u << 20)

enum ttrpc_type { TTRPC_REQUEST = 1, TTRPC_RESPONSE = 2, TTRPC_DATA = 3 };

/* gRPC status codes, as google.rpc.Status carries them. */
enum ttrpc_code {
    TTRPC_OK = 0,
    TTRPC_UNKNOWN = 2,
    TTRPC_INVALID_ARGUMENT = 3,
    TTRPC_NOT_FOUND = 5,
    TTRPC_ALREADY_EXISTS = 6,
    TTRPC_RESOURCE_EXHAUSTED = 8,
    TTRPC_FAILED_PRECONDITION = 9,
    TTRPC_UNIMPLEMENTED = 12,
    TTRPC_INTERNAL = 13,
};

struct ttrpc_frame {
    uint32_t len, stream;
    uint8_t type, flags;
};

void ttrpc_header_put(uint8_t out[TTRPC_HEADER_LEN], const struct ttrpc_frame *f);
void ttrpc_header_get(const uint8_t in[TTRPC_HEADER_LEN], struct ttrpc_frame *f);

/* A whole Request frame (header included) calling service/method with the
 * packed request message payload. md: n_md key/value pairs of metadata;
 * timeout_ns 0: no deadline. *out is malloc'd. */
int ttrpc_request_frame(uint32_t stream, const char *service, const char *method,
                        const uint8_t *payload, size_t plen, int64_t timeout_ns,
                        const char *const *md, size_t n_md, uint8_t **out, size_t *len,
                        brig_error_t *err);

struct ttrpc_server;
struct ttrpc_call; /* one request awaiting its answer */

/* payload: the method's serialized request, valid during the call only. The
 * handler must answer call exactly once, now or later, with ttrpc_reply or
 * ttrpc_reply_error; the call is freed then. */
typedef void (*ttrpc_handler)(struct ttrpc_call *call, const uint8_t *payload, size_t len,
                              void *data);
struct ttrpc_method {
    const char *name;
    ttrpc_handler fn;
};

int ttrpc_server_new(struct shim_loop *loop, struct ttrpc_server **out, brig_error_t *err);
/* Accepts connections on the listening socket fd (the server takes it). Only
 * peers with this process's effective uid and gid are served. */
int ttrpc_server_listen(struct ttrpc_server *s, int fd, brig_error_t *err);
/* methods must stay valid as long as the server; data goes to each handler. */
int ttrpc_server_register(struct ttrpc_server *s, const char *service,
                          const struct ttrpc_method *methods, size_t n, void *data,
                          brig_error_t *err);
/* Writes what is queued for every connection, waiting up to timeout_ms in
 * all (before the shim exits). */
void ttrpc_server_flush(struct ttrpc_server *s, int timeout_ms);
void ttrpc_server_free(struct ttrpc_server *s);
/* CLOCK_MONOTONIC in milliseconds, for the flush deadlines. */
long ttrpc_clock_ms(void);

/* msg NULL: google.protobuf.Empty. If the client has gone, the answer is
 * dropped. */
void ttrpc_reply(struct ttrpc_call *c, const ProtobufCMessage *msg);
void ttrpc_reply_error(struct ttrpc_call *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The method name of the call (for logs). */
const char *ttrpc_call_method(const struct ttrpc_call *c);

#endif
