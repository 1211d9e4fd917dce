#define _GNU_SOURCE
/* A request's life: the first call authenticates and routes it, the next
 * ones take its body (a JSON document kept, a file streamed to the
 * workspace), the last one answers. Errors are JSON: {"error": "..."}. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "base/cleanup.h"

struct api_config api_config;

enum MHD_Result api_reply(struct MHD_Connection *c, unsigned status, const char *type,
                          const void *data, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *) data,
                                                                MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return MHD_NO;
    if (type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result api_reply_gen(struct MHD_Connection *c, unsigned status, yajl_gen g)
{
    const unsigned char *buf;
    size_t len;
    if (g == NULL || yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok) {
        if (g)
            yajl_gen_free(g);
        return api_reply_error(c, 500, "out of memory");
    }
    cleanup_free char *body = malloc(len + 1);
    if (body) {
        memcpy(body, buf, len);
        body[len++] = '\n';
    }
    yajl_gen_free(g);
    if (body == NULL)
        return api_reply_error(c, 500, "out of memory");
    return api_reply(c, status, "application/json", body, len);
}

/* {"error": msg}, with one header more when `header` is set. */
static enum MHD_Result error_reply(struct MHD_Connection *c, unsigned status, const char *header,
                                   const char *value, char *msg)
{
    /* One line, whatever a path or an id put in it. */
    for (char *p = msg; p && *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
            *p = '?';
    yajl_gen g = api_gen();
    const unsigned char *buf;
    size_t len;
    if (g == NULL)
        return MHD_NO;
    yajl_gen_map_open(g);
    api_gen_key(g, "error");
    api_gen_string(g, msg ? msg : "out of memory");
    yajl_gen_map_close(g);
    cleanup_free char *body = NULL;
    if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok && (body = malloc(len + 1))) {
        memcpy(body, buf, len);
        body[len++] = '\n';
    }
    yajl_gen_free(g);
    struct MHD_Response *resp = body ? MHD_create_response_from_buffer(len, body,
                                                                       MHD_RESPMEM_MUST_COPY)
                                     : NULL;
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (header)
        MHD_add_response_header(resp, header, value);
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result api_reply_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
    cleanup_free char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    return error_reply(c, status, NULL, NULL, msg);
}

unsigned api_status_of(const struct brig_error *e)
{
    switch (e->errnum) {
    case BRIG_E_INPUT:
    case EINVAL:
    case ENOTDIR:
        return 400;
    case EACCES:
    case EPERM:
        return 403;
    case ENOENT:
        return 404;
    case EEXIST:
    case BRIG_E_STATE:
    case ESRCH: /* a sandbox that isn't running */
        return 409;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return 413;
    case EHOSTUNREACH:
    case ECONNREFUSED:
    case EPROTO:
        return 502;
    default:
        return 500;
    }
}

enum MHD_Result api_reply_brig_error(struct MHD_Connection *c, brig_error_t *err)
{
    unsigned status = api_status_of(*err);
    enum MHD_Result r = api_reply_error(c, status, "%s", (*err)->msg);
    brig_error_release(err);
    return r;
}

/* ---- auth ---- */

/* Bearer TOKEN, compared in time that depends on the lengths only. */
static bool authorized(struct MHD_Connection *c)
{
    if (api_config.token == NULL)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    const char *given = h + 7;
    size_t len = strlen(given);
    unsigned char diff = len != api_config.token_len;
    for (size_t i = 0; i < len; i++)
        diff |= (unsigned char) given[i]
                ^ (unsigned char) api_config.token[i % api_config.token_len];
    return diff == 0;
}

/* ---- routing ---- */

bool api_split_url(struct api_request *r)
{
    char *p = r->url;
    if (strncmp(p, "/v1/", 4) != 0)
        return false;
    p += 4;
    while (*p) {
        if (r->n_parts == sizeof r->parts / sizeof r->parts[0])
            return false;
        r->parts[r->n_parts++] = p;
        if (r->n_parts == 3 && strncmp(p, "files", 5) == 0 && (p[5] == '\0' || p[5] == '/')) {
            /* sandboxes/ID/files[/PATH]: PATH whole, "" for the top. */
            r->file = p[5] ? p + 6 : "";
            size_t len = strlen(r->file);
            r->file_dir = len == 0 || r->file[len - 1] == '/';
            p[5] = '\0';
            return true;
        }
        char *slash = strchr(p, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
        p = slash + 1;
    }
    return true;
}

static bool is(const struct api_request *r, size_t i, const char *word)
{
    return i < r->n_parts && strcmp(r->parts[i], word) == 0;
}

struct route {
    size_t n_parts;   /* after v1/: "sandboxes" [ID [WHAT [NAME [input]]]] */
    const char *what; /* parts[2], NULL for none */
    const char *last; /* parts[4], NULL for none */
    const char *method;
    api_handler handler;
};

static const struct route routes[] = {
    { 1, NULL, NULL, "GET", api_sandboxes_list },
    { 1, NULL, NULL, "POST", api_sandboxes_create },
    { 2, NULL, NULL, "GET", api_sandbox_get },
    { 2, NULL, NULL, "DELETE", api_sandbox_delete },
    { 3, "exec", NULL, "POST", api_exec },
    { 3, "download", NULL, "POST", api_download },
    { 3, "sessions", NULL, "GET", api_sessions_list },
    { 3, "sessions", NULL, "POST", api_session_start },
    { 4, "sessions", NULL, "GET", api_session_read },
    { 4, "sessions", NULL, "DELETE", api_session_kill },
    { 5, "sessions", "input", "POST", api_session_input },
    { 3, "files", NULL, "GET", api_file_get },
    { 3, "files", NULL, "PUT", api_file_put },
};

api_handler api_find_route(const struct api_request *r, unsigned *status, char *allow, size_t size)
{
    *status = 404;
    if (allow)
        allow[0] = '\0';
    if (!is(r, 0, "sandboxes"))
        return NULL;
    size_t n = r->file ? 3 : r->n_parts;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const struct route *rt = &routes[i];
        if (rt->n_parts != n || (rt->what && !is(r, 2, rt->what))
            || (rt->last && !is(r, 4, rt->last)))
            continue;
        if (n >= 2 && r->parts[1][0] == '\0')
            continue;
        if (strcmp(rt->method, r->method) == 0)
            return rt->handler;
        *status = 405;
        if (allow && strlen(allow) + strlen(rt->method) + 3 < size) {
            if (allow[0])
                strcat(allow, ", ");
            strcat(allow, rt->method);
        }
    }
    return NULL;
}

/* ---- the handler ---- */

static enum MHD_Result take_body(struct api_request *r, const char *data, size_t *size)
{
    if (r->uploading) {
        if (r->upload_err == NULL)
            brig_sandbox_upload_write(&r->upload, data, *size, &r->upload_err);
    } else if (!r->body_too_big) {
        if (r->body_len + *size > API_MAX_BODY) {
            r->body_too_big = true;
        } else {
            char *bigger = realloc(r->body, r->body_len + *size + 1);
            if (bigger == NULL)
                return MHD_NO;
            memcpy(bigger + r->body_len, data, *size);
            r->body_len += *size;
            bigger[r->body_len] = '\0';
            r->body = bigger;
        }
    }
    *size = 0;
    return MHD_YES;
}

static enum MHD_Result first_call(struct MHD_Connection *c, const char *url, const char *method,
                                  void **ctx)
{
    struct api_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return MHD_NO;
    r->upload = (struct brig_sandbox_upload) BRIG_SANDBOX_UPLOAD_INIT;
    r->method = method;
    r->url = strdup(url);
    *ctx = r;
    if (r->url == NULL)
        return MHD_NO;
    char denied[] = "missing or wrong bearer token";
    if (!authorized(c))
        return error_reply(c, 401, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer", denied);
    if (strstr(url, "%00"))
        return api_reply_error(c, 400, "a NUL (%%00) in the path");
    if (!api_split_url(r))
        return api_reply_error(c, 404, "no such route: %s", url);
    unsigned status;
    char allow[64];
    api_handler h = api_find_route(r, &status, allow, sizeof allow);
    if (h == NULL && status == 405) {
        cleanup_free char *msg = NULL;
        if (asprintf(&msg, "method %s not allowed on %s", method, url) < 0)
            msg = NULL;
        return error_reply(c, 405, MHD_HTTP_HEADER_ALLOW, allow, msg);
    }
    if (h == NULL)
        return api_reply_error(c, 404, "no such route: %s %s", method, url);
    if (h == api_file_put)
        api_file_put_begin(r);
    return MHD_YES;
}

size_t api_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    /* A %00 would end the C string of a path or a value: what follows it
     * would be dropped without a word. Such a text stays as it came, and
     * the request is refused (first_call). */
    if (strstr(s, "%00"))
        return strlen(s);
    return MHD_http_unescape(s);
}

enum MHD_Result api_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload_data, size_t *upload_data_size,
                           void **ctx)
{
    if (*ctx == NULL)
        return first_call(c, url, method, ctx);
    struct api_request *r = *ctx;
    if (*upload_data_size > 0)
        return take_body(r, upload_data, upload_data_size);
    if (r->body_too_big)
        return api_reply_error(c, 413, "body larger than %zu bytes", API_MAX_BODY);
    unsigned status;
    api_handler h = api_find_route(r, &status, NULL, 0);
    return h ? h(c, r) : api_reply_error(c, status, "no such route");
}

void api_completed(void *cls, struct MHD_Connection *c, void **ctx,
                   enum MHD_RequestTerminationCode toe)
{
    struct api_request *r = *ctx;
    if (r == NULL)
        return;
    brig_sandbox_upload_end(&r->upload);
    brig_error_release(&r->upload_err);
    free(r->body);
    free(r->url);
    free(r);
    *ctx = NULL;
}
