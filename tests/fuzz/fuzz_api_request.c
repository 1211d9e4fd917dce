#define _GNU_SOURCE
/* libFuzzer target: a request to brig-api as it is taken apart before any
 * handler runs. The input's first line is `METHOD PATH`: the path is
 * unescaped (api_unescape), split (api_split_url) and routed
 * (api_find_route), as the first call of a request does; the rest is
 * its JSON body (api_body_object, with every field any route takes),
 * whose every field is then read as each type a handler reads
 * (api_field_string, _seconds_ms, _strv, _env). The body's bytes are
 * also made a JSON string as an exec's output is (api_gen_bytes), which
 * must always be valid JSON. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "src/api/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fields of every route's body (docs/api.md). */
static const char *const fields[] = {
    "id",           "memory",       "pids",     "cpus", "data_size", "network", "rootfs", "ttl",
    "idle_timeout", "exec_timeout", "template", "cmd",  "env",       "cwd",     "user",   "timeout",
    "stdin",        "name",         "chars",    "wait", "until",     "url",     "path",   NULL
};

static void route(char *line)
{
    char *space = strchr(line, ' ');
    if (space == NULL)
        return;
    *space = '\0';
    struct api_request r = { .method = line, .url = space + 1 };
    api_unescape(NULL, NULL, r.url);
    if (strstr(r.url, "%00") || !api_split_url(&r))
        return;
    unsigned status;
    char allow[64];
    if (api_find_route(&r, &status, allow, sizeof allow) == NULL && status != 404 && status != 405)
        __builtin_trap();
}

static void read_fields(yajl_val doc)
{
    for (size_t i = 0; i < doc->u.object.len; i++) {
        const char *key = doc->u.object.keys[i], *s;
        int64_t ms;
        char **v = NULL;
        brig_error_t err = NULL;
        if (api_field_string(doc, key, &s, &err) < 0)
            brig_error_release(&err);
        if (api_field_seconds_ms(doc, key, &ms, &err) < 0)
            brig_error_release(&err);
        if (api_field_strv(doc, key, &v, &err) < 0)
            brig_error_release(&err);
        free(v); /* borrowed strings */
        v = NULL;
        if (api_field_env(doc, key, &v, &err) < 0)
            brig_error_release(&err);
        api_strv_free(v);
    }
}

static void body(const char *text, size_t len)
{
    struct api_request r = { .body = (char *) text, .body_len = len };
    yajl_val doc = NULL;
    brig_error_t err = NULL;
    if (api_body_object(&r, fields, &doc, &err) < 0) {
        brig_error_release(&err);
        return;
    }
    read_fields(doc);
    yajl_tree_free(doc);
}

static void as_output(const char *bytes, size_t len)
{
    yajl_gen g = api_gen();
    if (g == NULL)
        return;
    api_gen_bytes(g, bytes, len);
    const unsigned char *buf;
    size_t n;
    if (yajl_gen_get_buf(g, &buf, &n) != yajl_gen_status_ok || n < 2)
        __builtin_trap();
    char *text = strndup((const char *) buf, n);
    char msg[128];
    yajl_val v = text ? yajl_tree_parse(text, msg, sizeof msg) : NULL;
    if (text && (v == NULL || !YAJL_IS_STRING(v)))
        __builtin_trap();
    yajl_tree_free(v);
    free(text);
    yajl_gen_free(g);
    if (api_utf8_incomplete_tail(bytes, len) > 3)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size);
    size_t line_len = nl ? (size_t) (nl - (const char *) data) : size;
    char *line = strndup((const char *) data, line_len);
    size_t rest_len = nl ? size - line_len - 1 : 0;
    char *rest = malloc(rest_len + 1);
    if (line && rest) {
        memcpy(rest, nl ? nl + 1 : "", rest_len);
        rest[rest_len] = '\0';
        route(line);
        body(rest, rest_len);
        as_output(rest, rest_len);
    }
    free(rest);
    free(line);
    return 0;
}
