/* brig-api, the HTTP/JSON API that `brig serve` runs (docs/api.md):
 * libmicrohttpd with a thread per connection, so a long exec or a slow
 * reader holds only its own. The work is the sandbox layer's, the same
 * functions the CLI calls; what starts processes runs as a job, brig-api
 * started anew (worker.c, jobs.c), never in a fork of the threaded server.
 *
 *   main.c      options, the listening socket, the daemon
 *   request.c   a request's life: auth, body, routing, replies
 *   json.c      bodies in (yajl's tree) and replies out (yajl_gen)
 *   worker.c    jobs started and waited for
 *   jobs.c      a job's side: `brig-api --job KIND ...`
 *   sandboxes.c create, list, describe, remove
 *   exec.c      exec, its output streamed as NDJSON
 *   sessions.c  sessions
 *   files.c     files and downloads */
#ifndef BRIG_API_H
#define BRIG_API_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "base/error.h"
#include "sandbox/files.h"

#define API_MAX_BODY ((size_t) 16 << 20) /* a JSON body, stdin included */

struct api_config {
    const char *root;   /* the state root */
    const char *rootfs; /* the tree of the sandboxes it creates; NULL: the default */
    char *token;        /* NULL: no token asked */
    size_t token_len;
};
extern struct api_config api_config;

/* One request, from its first call to its completion. */
struct api_request {
    const char *method;
    char *url;      /* a copy, split in place into parts */
    char *parts[8]; /* the path's segments after /v1/ */
    size_t n_parts;
    const char *file; /* files/...: the rest of the path, "" for the top */
    bool file_dir;    /* ... ending in `/` */
    char *body;       /* a JSON body, NUL-terminated */
    size_t body_len;
    bool body_too_big;
    bool uploading; /* a PUT of a file streams to upload */
    struct brig_sandbox_upload upload;
    brig_error_t upload_err;
};

/* libmicrohttpd's callbacks (request.c): a request's every call, its
 * end, and the unescaping of its path and query. */
enum MHD_Result api_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload_data, size_t *upload_data_size,
                           void **ctx);
void api_completed(void *cls, struct MHD_Connection *c, void **ctx,
                   enum MHD_RequestTerminationCode toe);
size_t api_unescape(void *cls, struct MHD_Connection *c, char *s);

typedef enum MHD_Result (*api_handler)(struct MHD_Connection *c, struct api_request *r);

/* ---- routing (request.c), pure ---- */
/* Splits r->url, "/v1/sandboxes/ID/...", in place into r->parts; the
 * files route keeps the rest of the path whole in r->file. False for a
 * path outside /v1/ or with too many parts. */
bool api_split_url(struct api_request *r);
/* The handler of r->method on the split path, or NULL with *status 404
 * (no such route) or 405 and the methods the path takes in `allow` (NULL:
 * not wanted). */
api_handler api_find_route(const struct api_request *r, unsigned *status, char *allow, size_t size);

/* ---- replies (request.c) ---- */
enum MHD_Result api_reply(struct MHD_Connection *c, unsigned status, const char *type,
                          const void *data, size_t len);
enum MHD_Result api_reply_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The error's status from its errnum (BRIG_E_INPUT 400, ENOENT 404,
 * EEXIST 409, ENOSPC 413, EACCES 403, ...), its message the body; the
 * error is released. */
enum MHD_Result api_reply_brig_error(struct MHD_Connection *c, brig_error_t *err);
unsigned api_status_of(const struct brig_error *e);
/* The generator's document as the body, and the generator freed. */
enum MHD_Result api_reply_gen(struct MHD_Connection *c, unsigned status, yajl_gen g);

/* ---- JSON (json.c) ---- */
/* The request's body as an object whose keys are all in `allowed`
 * (NULL-terminated); an empty body is an empty object. */
int api_body_object(const struct api_request *r, const char *const *allowed, yajl_val *out,
                    brig_error_t *err);
/* A field of an object, NULL when absent or null. */
yajl_val api_field(yajl_val obj, const char *key);
/* Typed fields: 0 when absent (out untouched), 1 when read, -1 with a
 * BRIG_E_INPUT error naming the field. */
int api_field_string(yajl_val obj, const char *key, const char **out, brig_error_t *err);
int api_field_seconds_ms(yajl_val obj, const char *key, int64_t *ms, brig_error_t *err);
/* A NULL-terminated array of the strings of an array field (owned array,
 * borrowed strings), or of "NAME=VALUE" strings made from an object. */
int api_field_strv(yajl_val obj, const char *key, char ***out, brig_error_t *err);
int api_field_env(yajl_val obj, const char *key, char ***out, brig_error_t *err);
void api_strv_free(char **v); /* frees the "NAME=VALUE" strings too */
yajl_gen api_gen(void);
void api_gen_key(yajl_gen g, const char *key);
void api_gen_string(yajl_gen g, const char *s);
/* KEY and a time as RFC 3339 in UTC, to the second. */
void api_gen_time(yajl_gen g, const char *key, time_t t);
/* Bytes as a JSON string: valid UTF-8 as it is, any other byte as the
 * character of its Latin-1 reading (U+0080-U+00FF). */
void api_gen_bytes(yajl_gen g, const char *data, size_t len);
/* How many of the last bytes of data[0..len) begin a UTF-8 sequence that
 * isn't complete yet (0-3): a stream holds them back for the next read. */
size_t api_utf8_incomplete_tail(const char *data, size_t len);

/* ---- jobs (worker.c, jobs.c) ---- */
/* A job's command line, built a word at a time. */
struct api_argv {
    char **v; /* NULL-terminated */
    size_t n, cap;
};
int api_argv_add(struct api_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void api_argv_free(struct api_argv *a);
/* Starts brig-api anew with `a` ({"brig-api", "--job", KIND, ...}),
 * `stdio` (NULL: /dev/null) as its fds 0-2 and a report pipe as fd 3,
 * whose read end lands in *report. */
int api_job_spawn(const struct api_argv *a, const int *stdio, pid_t *pid, int *report,
                  brig_error_t *err);
/* Runs a job to its end; its error comes back as if the work had been
 * done here, what it said on success in *said (NULL: not wanted). */
int api_job_run(const struct api_argv *a, char **said, brig_error_t *err);
/* The job's side: `brig-api --job KIND ARGS...` (jobs.c). */
int api_job_main(int argc, char **argv);

/* What an exec's job says on its report pipe: its start (kind 'S', value
 * the pid) or why it failed ('E', value the errnum), then its exit ('X',
 * value the status). */
struct api_exec_report {
    int kind;
    int value;
    int timed_out;
    char msg[1024];
};

/* ---- routes ---- */
enum MHD_Result api_sandboxes_list(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_sandboxes_create(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_sandbox_get(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_sandbox_delete(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_exec(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_sessions_list(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_session_start(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_session_input(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_session_read(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_session_kill(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_file_get(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_file_put(struct MHD_Connection *c, struct api_request *r);
enum MHD_Result api_download(struct MHD_Connection *c, struct api_request *r);

/* The upload's start, on a PUT's first call (files.c). */
void api_file_put_begin(struct api_request *r);

#endif
