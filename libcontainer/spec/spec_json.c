#define _GNU_SOURCE
#include "spec/spec_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

/* ---- path ---------------------------------------------------------------- */

static size_t path_append(struct brig_json_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static size_t path_append(struct brig_json_ctx *c, const char *fmt, ...)
{
    size_t mark = c->len;
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(c->path + c->len, sizeof c->path - c->len, fmt, ap);
    va_end(ap);
    /* A path too deep for the buffer keeps its truncated prefix: the
     * message still points the reader to the right area. */
    if (r > 0)
        c->len += (size_t) r < sizeof c->path - c->len ? (size_t) r : sizeof c->path - c->len - 1;
    return mark;
}

size_t brig_json_push_key(struct brig_json_ctx *c, const char *key)
{
    return path_append(c, c->len ? ".%s" : "%s", key);
}

size_t brig_json_push_index(struct brig_json_ctx *c, size_t index)
{
    return path_append(c, "[%zu]", index);
}

void brig_json_pop(struct brig_json_ctx *c, size_t mark)
{
    c->len = mark;
    c->path[mark] = '\0';
}

/* ---- errors --------------------------------------------------------------- */

/* The current path plus key, as a newly allocated string. */
static char *path_with(struct brig_json_ctx *c, const char *key)
{
    char *s = NULL;
    int r;
    if (key == NULL)
        r = asprintf(&s, "%s", c->path);
    else
        r = asprintf(&s, "%s%s%s", c->path, c->len ? "." : "", key);
    return r < 0 ? NULL : s;
}

int brig_json_error(struct brig_json_ctx *c, const char *fmt, ...)
{
    cleanup_free char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (r < 0)
        return brig_json_oom(c);
    /* Keys and values quoted from the document may hold control
     * characters; a message must stay one line on a terminal or in a log. */
    for (char *p = msg; *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
            *p = ' ';
    return brig_error_set(c->err, 0, "%s: %s", c->origin, msg);
}

int brig_json_fail(struct brig_json_ctx *c, const char *key, const char *fmt, ...)
{
    cleanup_free char *msg = NULL;
    cleanup_free char *where = path_with(c, key);
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (r < 0 || where == NULL)
        return brig_json_oom(c);
    if (*where == '\0')
        return brig_json_error(c, "%s", msg);
    return brig_json_error(c, "%s: %s", where, msg);
}

int brig_json_missing(struct brig_json_ctx *c, const char *key)
{
    cleanup_free char *where = path_with(c, key);
    if (where == NULL)
        return brig_json_oom(c);
    return brig_json_error(c, "missing %s", where);
}

int brig_json_oom(struct brig_json_ctx *c)
{
    return brig_error_set(c->err, ENOMEM, "%s", c->origin);
}

/* ---- scalar getters -------------------------------------------------------- */

yajl_val brig_json_field(yajl_val obj, const char *key)
{
    if (!YAJL_IS_OBJECT(obj))
        return NULL;
    yajl_val found = NULL;
    /* JSON leaves duplicate keys undefined; like Go's decoder, the last wins. */
    for (size_t i = 0; i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], key) == 0)
            found = obj->u.object.values[i];
    return YAJL_IS_NULL(found) ? NULL : found;
}

int brig_json_object(struct brig_json_ctx *c, yajl_val obj, const char *key, yajl_val *out)
{
    yajl_val v = brig_json_field(obj, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_OBJECT(v))
        return brig_json_fail(c, key, "expected an object");
    *out = v;
    return 1;
}

int brig_json_string(struct brig_json_ctx *c, yajl_val obj, const char *key, char **out)
{
    yajl_val v = brig_json_field(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_STRING(v))
        return brig_json_fail(c, key, "expected a string");
    char *s = strdup(v->u.string);
    if (s == NULL)
        return brig_json_oom(c);
    free(*out);
    *out = s;
    return 1;
}

int brig_json_bool(struct brig_json_ctx *c, yajl_val obj, const char *key, bool *out)
{
    yajl_val v = brig_json_field(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
        return brig_json_fail(c, key, "expected a boolean");
    *out = YAJL_IS_TRUE(v);
    return 1;
}

/* Reads an integer literal exactly from yajl's raw text: yajl's own
 * long long conversion can't hold values above INT64_MAX, which uint64
 * fields (RLIM_INFINITY, seccomp argument masks) legitimately use. */
static int integer_literal(struct brig_json_ctx *c, yajl_val v, const char *key, bool *neg,
                           uint64_t *mag)
{
    if (!YAJL_IS_NUMBER(v))
        return brig_json_fail(c, key, "expected an integer");
    const char *p = v->u.number.r;
    *neg = *p == '-';
    if (*neg)
        p++;
    if (*p == '\0')
        return brig_json_fail(c, key, "expected an integer");
    *mag = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return brig_json_fail(c, key, "expected an integer");
        unsigned d = (unsigned) (*p - '0');
        if (*mag > (UINT64_MAX - d) / 10)
            return brig_json_fail(c, key, "%s is out of range", v->u.number.r);
        *mag = *mag * 10 + d;
    }
    return 1;
}

static int value_i64(struct brig_json_ctx *c, yajl_val v, const char *key, int64_t min, int64_t max,
                     int64_t *out)
{
    bool neg;
    uint64_t mag;
    if (integer_literal(c, v, key, &neg, &mag) < 0)
        return -1;
    bool fits = mag <= (uint64_t) INT64_MAX || (neg && mag == (uint64_t) INT64_MAX + 1);
    int64_t x = 0;
    if (fits)
        x = neg ? (int64_t) (0 - mag) : (int64_t) mag;
    if (!fits || x < min || x > max)
        return brig_json_fail(c, key, "%s is out of range [%" PRId64 ", %" PRId64 "]",
                              v->u.number.r, min, max);
    *out = x;
    return 1;
}

int brig_json_value_u64(struct brig_json_ctx *c, yajl_val v, const char *key, uint64_t max,
                        uint64_t *out)
{
    bool neg;
    uint64_t mag;
    if (integer_literal(c, v, key, &neg, &mag) < 0)
        return -1;
    if ((neg && mag != 0) || mag > max)
        return brig_json_fail(c, key, "%s is out of range [0, %" PRIu64 "]", v->u.number.r, max);
    *out = mag;
    return 1;
}

int brig_json_i64(struct brig_json_ctx *c, yajl_val obj, const char *key, int64_t min, int64_t max,
                  int64_t *out)
{
    yajl_val v = brig_json_field(obj, key);
    if (v == NULL)
        return 0;
    return value_i64(c, v, key, min, max, out);
}

int brig_json_u64(struct brig_json_ctx *c, yajl_val obj, const char *key, uint64_t max,
                  uint64_t *out)
{
    yajl_val v = brig_json_field(obj, key);
    if (v == NULL)
        return 0;
    return brig_json_value_u64(c, v, key, max, out);
}

int brig_json_u32(struct brig_json_ctx *c, yajl_val obj, const char *key, uint32_t *out)
{
    uint64_t x;
    int r = brig_json_u64(c, obj, key, UINT32_MAX, &x);
    if (r > 0)
        *out = (uint32_t) x;
    return r;
}

int brig_json_u16(struct brig_json_ctx *c, yajl_val obj, const char *key, uint16_t *out)
{
    uint64_t x;
    int r = brig_json_u64(c, obj, key, UINT16_MAX, &x);
    if (r > 0)
        *out = (uint16_t) x;
    return r;
}

int brig_json_i32(struct brig_json_ctx *c, yajl_val obj, const char *key, int32_t *out)
{
    int64_t x;
    int r = brig_json_i64(c, obj, key, INT32_MIN, INT32_MAX, &x);
    if (r > 0)
        *out = (int32_t) x;
    return r;
}

/* ---- compound getters ------------------------------------------------------ */

static int array_of(struct brig_json_ctx *c, yajl_val obj, const char *key, yajl_val *out)
{
    yajl_val v = brig_json_field(obj, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_ARRAY(v))
        return brig_json_fail(c, key, "expected an array");
    *out = v;
    return 1;
}

int brig_json_strv(struct brig_json_ctx *c, yajl_val obj, const char *key, struct brig_strv *out)
{
    yajl_val arr;
    int r = array_of(c, obj, key, &arr);
    if (r <= 0)
        return r;
    brig_strv_free(out);
    size_t n = arr->u.array.len;
    if (n == 0)
        return 1;
    out->v = calloc(n + 1, sizeof *out->v);
    if (out->v == NULL)
        return brig_json_oom(c);
    out->n = n;
    /* The path is only for messages: formatted when there is one to give,
     * not once per element (env and caps lists are long). */
    for (size_t i = 0; i < n; i++) {
        yajl_val s = arr->u.array.values[i];
        if (!YAJL_IS_STRING(s)) {
            brig_json_push_key(c, key);
            brig_json_push_index(c, i);
            return brig_json_fail(c, NULL, "expected a string");
        }
        out->v[i] = strdup(s->u.string);
        if (out->v[i] == NULL) {
            brig_json_push_key(c, key);
            return brig_json_oom(c);
        }
    }
    return 1;
}

int brig_json_kv(struct brig_json_ctx *c, yajl_val obj, const char *key, struct brig_kv_list *out)
{
    yajl_val map;
    int r = brig_json_object(c, obj, key, &map);
    if (r <= 0)
        return r;
    brig_kv_list_free(out);
    size_t n = map->u.object.len;
    if (n == 0)
        return 1;
    out->items = calloc(n, sizeof *out->items);
    if (out->items == NULL)
        return brig_json_oom(c);
    size_t mark = brig_json_push_key(c, key);
    for (size_t i = 0; i < n; i++) {
        yajl_val v = map->u.object.values[i];
        const char *k = map->u.object.keys[i];
        /* A key repeated later is overridden by it, as for single fields;
         * a null value is an absent one. */
        if (brig_json_field(map, k) != v)
            continue;
        if (!YAJL_IS_STRING(v))
            return brig_json_fail(c, k, "expected a string");
        struct brig_kv *kv = &out->items[out->n];
        kv->key = strdup(k);
        kv->value = strdup(v->u.string);
        out->n++;
        if (kv->key == NULL || kv->value == NULL)
            return brig_json_oom(c);
    }
    brig_json_pop(c, mark);
    return 1;
}

int brig_json_objects(struct brig_json_ctx *c, yajl_val obj, const char *key, size_t size,
                      void **items, size_t *n, brig_json_elem_fn fn)
{
    yajl_val arr;
    int r = array_of(c, obj, key, &arr);
    if (r <= 0)
        return r;
    size_t len = arr->u.array.len;
    if (len == 0)
        return 1;
    char *base = calloc(len, size);
    if (base == NULL)
        return brig_json_oom(c);
    *items = base;
    *n = len;
    size_t mark = brig_json_push_key(c, key);
    for (size_t i = 0; i < len; i++) {
        yajl_val v = arr->u.array.values[i];
        size_t at = brig_json_push_index(c, i);
        if (!YAJL_IS_OBJECT(v))
            return brig_json_fail(c, NULL, "expected an object");
        if (fn(c, v, base + i * size) < 0)
            return -1;
        brig_json_pop(c, at);
    }
    brig_json_pop(c, mark);
    return 1;
}

static int parse_id_mapping(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_id_mapping *m = item;
    static const char *const keys[] = { "containerID", "hostID", "size" };
    uint32_t *fields[] = { &m->container_id, &m->host_id, &m->size };
    for (size_t i = 0; i < 3; i++) {
        int r = brig_json_u32(c, v, keys[i], fields[i]);
        if (r < 0)
            return -1;
        if (r == 0)
            return brig_json_missing(c, keys[i]);
    }
    if (m->size == 0)
        return brig_json_fail(c, "size", "must be greater than zero");
    return 0;
}

int brig_json_id_mappings(struct brig_json_ctx *c, yajl_val obj, const char *key,
                          struct brig_id_mapping **out, size_t *n)
{
    return BRIG_JSON_OBJECTS(c, obj, key, *out, *n, parse_id_mapping);
}

void brig_strv_free(struct brig_strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

void brig_kv_list_free(struct brig_kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    l->items = NULL;
    l->n = 0;
}
