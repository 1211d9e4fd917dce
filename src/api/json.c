#define _GNU_SOURCE
/* JSON in and out: request bodies through yajl's tree, replies through
 * yajl_gen, and the bytes of a process's output made into valid UTF-8 on
 * the way. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "base/cleanup.h"
#include "base/utils.h"

int api_body_object(const struct api_request *r, const char *const *allowed, yajl_val *out,
                    brig_error_t *err)
{
    char msg[256] = "";
    const char *text = r->body && r->body_len ? r->body : "{}";
    *out = yajl_tree_parse(text, msg, sizeof msg);
    if (*out == NULL) {
        /* yajl's message spans lines; the first says what. */
        msg[strcspn(msg, "\n")] = '\0';
        return brig_error_kind(err, BRIG_E_INPUT, "body: not JSON (%s)", msg);
    }
    if (!YAJL_IS_OBJECT(*out)) {
        yajl_tree_free(*out);
        *out = NULL;
        return brig_error_kind(err, BRIG_E_INPUT, "body: not a JSON object");
    }
    for (size_t i = 0; i < (*out)->u.object.len; i++) {
        const char *key = (*out)->u.object.keys[i];
        size_t k = 0;
        while (allowed[k] && strcmp(allowed[k], key) != 0)
            k++;
        if (allowed[k] == NULL) {
            brig_error_kind(err, BRIG_E_INPUT, "body: unknown field `%s`", key);
            yajl_tree_free(*out);
            *out = NULL;
            return -1;
        }
    }
    return 0;
}

yajl_val api_field(yajl_val obj, const char *key)
{
    for (size_t i = 0; obj && YAJL_IS_OBJECT(obj) && i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], key) == 0)
            return YAJL_IS_NULL(obj->u.object.values[i]) ? NULL : obj->u.object.values[i];
    return NULL;
}

int api_field_string(yajl_val obj, const char *key, const char **out, brig_error_t *err)
{
    yajl_val v = api_field(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_STRING(v))
        return brig_error_kind(err, BRIG_E_INPUT, "body: `%s` must be a string", key);
    *out = YAJL_GET_STRING(v);
    return 1;
}

int api_field_seconds_ms(yajl_val obj, const char *key, int64_t *ms, brig_error_t *err)
{
    yajl_val v = api_field(obj, key);
    if (v == NULL)
        return 0;
    int parsed;
    if (YAJL_IS_NUMBER(v) && YAJL_GET_DOUBLE(v) > 0 && YAJL_GET_DOUBLE(v) <= 30.0 * 86400) {
        *ms = (int64_t) ceil(YAJL_GET_DOUBLE(v) * 1000);
        return 1;
    }
    if (YAJL_IS_STRING(v) && brig_parse_duration_ms(YAJL_GET_STRING(v), &parsed) == 0) {
        *ms = parsed;
        return 1;
    }
    return brig_error_kind(err, BRIG_E_INPUT,
                           "body: `%s` must be seconds (a number) or a duration (\"30s\", \"5m\")",
                           key);
}

int api_field_strv(yajl_val obj, const char *key, char ***out, brig_error_t *err)
{
    yajl_val v = api_field(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_ARRAY(v))
        return brig_error_kind(err, BRIG_E_INPUT, "body: `%s` must be an array of strings", key);
    char **list = calloc(v->u.array.len + 1, sizeof *list);
    if (list == NULL)
        return brig_error_set(err, ENOMEM, "body");
    for (size_t i = 0; i < v->u.array.len; i++) {
        if (!YAJL_IS_STRING(v->u.array.values[i])) {
            free(list);
            return brig_error_kind(err, BRIG_E_INPUT, "body: `%s` must be an array of strings",
                                   key);
        }
        list[i] = YAJL_GET_STRING(v->u.array.values[i]);
    }
    *out = list;
    return 1;
}

int api_field_env(yajl_val obj, const char *key, char ***out, brig_error_t *err)
{
    yajl_val v = api_field(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_OBJECT(v))
        return brig_error_kind(err, BRIG_E_INPUT, "body: `%s` must be an object of strings", key);
    char **list = calloc(v->u.object.len + 1, sizeof *list);
    if (list == NULL)
        return brig_error_set(err, ENOMEM, "body");
    for (size_t i = 0; i < v->u.object.len; i++) {
        const char *name = v->u.object.keys[i];
        yajl_val value = v->u.object.values[i];
        if (!YAJL_IS_STRING(value) || name[0] == '\0' || strchr(name, '=')) {
            api_strv_free(list);
            return brig_error_kind(err, BRIG_E_INPUT,
                                   "body: `%s`: `%s` must be a name without `=` with a string", key,
                                   name);
        }
        if (asprintf(&list[i], "%s=%s", name, YAJL_GET_STRING(value)) < 0) {
            list[i] = NULL;
            api_strv_free(list);
            return brig_error_set(err, ENOMEM, "body");
        }
    }
    *out = list;
    return 1;
}

void api_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

yajl_gen api_gen(void)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g)
        yajl_gen_config(g, yajl_gen_validate_utf8, 1);
    return g;
}

void api_gen_key(yajl_gen g, const char *key)
{
    yajl_gen_string(g, (const unsigned char *) key, strlen(key));
}

void api_gen_string(yajl_gen g, const char *s)
{
    api_gen_bytes(g, s, strlen(s));
}

void api_gen_time(yajl_gen g, const char *key, time_t t)
{
    char buf[32];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    api_gen_key(g, key);
    api_gen_string(g, buf);
}

/* The length of the valid UTF-8 sequence at p (at most n bytes), 0 when
 * there is none. */
static size_t utf8_sequence(const unsigned char *p, size_t n)
{
    size_t len = p[0] < 0x80             ? 1
                 : (p[0] & 0xe0) == 0xc0 ? 2
                 : (p[0] & 0xf0) == 0xe0 ? 3
                 : (p[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n || (len == 2 && p[0] < 0xc2) || (len == 4 && p[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong forms, surrogates and what lies past U+10FFFF. */
    if ((len == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (len == 3 && p[0] == 0xed && p[1] >= 0xa0)
        || (len == 4 && p[0] == 0xf0 && p[1] < 0x90) || (len == 4 && p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return len;
}

void api_gen_bytes(yajl_gen g, const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *) data;
    cleanup_free unsigned char *out = malloc(2 * len + 1);
    if (out == NULL) {
        yajl_gen_string(g, (const unsigned char *) "", 0);
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence(p + i, len - i);
        if (n > 0) {
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
        } else {
            /* U+0080-U+00FF in UTF-8 */
            out[o++] = (unsigned char) (0xc0 | (p[i] >> 6));
            out[o++] = (unsigned char) (0x80 | (p[i] & 0x3f));
            i++;
        }
    }
    yajl_gen_string(g, out, o);
}

size_t api_utf8_incomplete_tail(const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *) data;
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = p[len - back];
        if ((c & 0xc0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t need = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
        return need > back ? back : 0;
    }
    return 0;
}
