/* Internal to the config.json parser (spec.c, spec_linux.c): typed getters
 * over a yajl tree that remember the JSON path, so every error names the
 * file and the exact field: "config.json: process.args[1]: expected a string".
 *
 * Getters return 1 when the field was set, 0 when it is absent (missing or
 * JSON null) and -1 with the error filled when it has the wrong type or an
 * out-of-range value. */
#ifndef BRIG_SPEC_JSON_H
#define BRIG_SPEC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <yajl/yajl_tree.h>

#include "base/error.h"
#include "spec/spec.h"

struct brig_json_ctx {
    const char *origin;
    brig_error_t *err;
    size_t len;
    char path[448];
};

/* Path bookkeeping: push returns a mark that pop restores. */
size_t brig_json_push_key(struct brig_json_ctx *c, const char *key);
size_t brig_json_push_index(struct brig_json_ctx *c, size_t index);
void brig_json_pop(struct brig_json_ctx *c, size_t mark);

/* "<origin>: <message>", control characters blanked out. Returns -1. */
int brig_json_error(struct brig_json_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "<origin>: <path>[.key]: <message>"; key may be NULL. Return -1. */
int brig_json_fail(struct brig_json_ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "<origin>: missing <path>.key" */
int brig_json_missing(struct brig_json_ctx *c, const char *key);
int brig_json_oom(struct brig_json_ctx *c);

/* The value of key in obj, or NULL when absent or null. */
yajl_val brig_json_field(yajl_val obj, const char *key);

int brig_json_object(struct brig_json_ctx *c, yajl_val obj, const char *key, yajl_val *out);
int brig_json_string(struct brig_json_ctx *c, yajl_val obj, const char *key, char **out);
int brig_json_bool(struct brig_json_ctx *c, yajl_val obj, const char *key, bool *out);
int brig_json_i64(struct brig_json_ctx *c, yajl_val obj, const char *key, int64_t min, int64_t max,
                  int64_t *out);
int brig_json_u64(struct brig_json_ctx *c, yajl_val obj, const char *key, uint64_t max,
                  uint64_t *out);
int brig_json_u32(struct brig_json_ctx *c, yajl_val obj, const char *key, uint32_t *out);
int brig_json_u16(struct brig_json_ctx *c, yajl_val obj, const char *key, uint16_t *out);
int brig_json_i32(struct brig_json_ctx *c, yajl_val obj, const char *key, int32_t *out);
/* Same as the above on a bare value (an array element); the path is current. */
int brig_json_value_u64(struct brig_json_ctx *c, yajl_val v, const char *key, uint64_t max,
                        uint64_t *out);

int brig_json_strv(struct brig_json_ctx *c, yajl_val obj, const char *key, struct brig_strv *out);
/* An object of string values: annotations, sysctl, unified. */
int brig_json_kv(struct brig_json_ctx *c, yajl_val obj, const char *key, struct brig_kv_list *out);

/* An array of objects; fn fills one zeroed element. *items and *n are set
 * before the first element is parsed, so a failure leaves a freeable array. */
typedef int (*brig_json_elem_fn)(struct brig_json_ctx *c, yajl_val v, void *item);
int brig_json_objects(struct brig_json_ctx *c, yajl_val obj, const char *key, size_t size,
                      void **items, size_t *n, brig_json_elem_fn fn);
#define BRIG_JSON_OBJECTS(c, obj, key, arr, n, fn)                                         \
    ({                                                                                     \
        void *_items = NULL;                                                               \
        int _r = brig_json_objects((c), (obj), (key), sizeof *(arr), &_items, &(n), (fn)); \
        (arr) = _items;                                                                    \
        _r;                                                                                \
    })

/* An optional sub-object parsed by fn into a newly allocated *field;
 * evaluates to 1 when present, 0 when absent, -1 on error. */
#define BRIG_JSON_SUBOBJECT(c, obj, key, field, fn)            \
    ({                                                         \
        yajl_val _sub;                                         \
        int _r = brig_json_object((c), (obj), (key), &_sub);   \
        if (_r > 0) {                                          \
            (field) = calloc(1, sizeof *(field));              \
            if ((field) == NULL) {                             \
                _r = brig_json_oom(c);                         \
            } else {                                           \
                size_t _mark = brig_json_push_key((c), (key)); \
                _r = fn((c), _sub, (field)) < 0 ? -1 : 1;      \
                if (_r > 0)                                    \
                    brig_json_pop((c), _mark);                 \
            }                                                  \
        }                                                      \
        _r;                                                    \
    })

int brig_json_id_mappings(struct brig_json_ctx *c, yajl_val obj, const char *key,
                          struct brig_id_mapping **out, size_t *n);

void brig_strv_free(struct brig_strv *s);
void brig_kv_list_free(struct brig_kv_list *l);

/* linux.* (spec_linux.c) */
int brig_spec_parse_linux(struct brig_json_ctx *c, yajl_val v, struct brig_linux *out);
void brig_spec_free_linux(struct brig_linux *l);
int brig_spec_parse_resources(struct brig_json_ctx *c, yajl_val v, struct brig_resources *r);
int brig_spec_parse_seccomp(struct brig_json_ctx *c, yajl_val v, struct brig_seccomp *s);

#endif
