/* The pure half of idrange.h: the pool read from /etc/subuid and
 * /etc/subgid, slots, and the spans of ids that others hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/idrange.h"

/* One "name:start:count" line of a subordinate-id file: 1 when it parses,
 * 0 when it is blank or a comment, -1 when it is malformed. */
static int parse_subid_line(char *line, char **name, uint64_t *start, uint64_t *count)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line == '\0' || *line == '#')
        return 0;
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL)
        return -1;
    *c1 = *c2 = '\0';
    char *end;
    errno = 0;
    unsigned long long s = strtoull(c1 + 1, &end, 10);
    if (errno || end == c1 + 1 || *end || c1[1] == '-')
        return -1;
    unsigned long long n = strtoull(c2 + 1, &end, 10);
    if (errno || end == c2 + 1 || (*end && *end != ' ' && *end != '\t') || c2[1] == '-')
        return -1;
    *name = line;
    *start = s;
    *count = n;
    return 1;
}

struct find_ctx {
    const char *file;
    uint32_t *start, *count;
    brig_error_t *err;
};

static int find_line(char *line, unsigned lineno, void *opaque)
{
    struct find_ctx *f = opaque;
    char *name;
    uint64_t s, n;
    if (parse_subid_line(line, &name, &s, &n) <= 0 || strcmp(name, BRIG_IDRANGE_USER) != 0)
        return 0;
    if (n < BRIG_IDRANGE_SIZE || s < BRIG_IDRANGE_SIZE || s + n > UINT64_C(0x100000000)) {
        brig_error_set(f->err, 0,
                       "%s: line %u: the `%s` range %" PRIu64 ":%" PRIu64
                       " must hold at least %u ids, start at %u or above and end below 2^32",
                       f->file, lineno, BRIG_IDRANGE_USER, s, n, BRIG_IDRANGE_SIZE,
                       BRIG_IDRANGE_SIZE);
        return -2;
    }
    *f->start = (uint32_t) s;
    *f->count = (uint32_t) (n > UINT32_MAX ? UINT32_MAX : n);
    return 1;
}

/* The `brig` line of one file: 1 with the range, 0 when it has none. */
static int find_brig(const char *text, const char *file, uint32_t *start, uint32_t *count,
                     brig_error_t *err)
{
    struct find_ctx f = { file, start, count, err };
    int r = brig_each_line(text, find_line, &f);
    if (r == -1)
        return brig_error_set(err, ENOMEM, "%s", file);
    return r < 0 ? -1 : r;
}

int brig_idpool_parse(const char *subuid, const char *subgid, struct brig_idpool *pool,
                      brig_error_t *err)
{
    *pool = (struct brig_idpool){ 0 };
    int u = find_brig(subuid, "/etc/subuid", &pool->uid_start, &pool->uid_count, err);
    if (u < 0)
        return -1;
    int g = find_brig(subgid, "/etc/subgid", &pool->gid_start, &pool->gid_count, err);
    if (g < 0)
        return -1;
    if (u != g)
        return brig_error_set(err, 0, "%s has a `%s` line and %s has none: give both",
                              u ? "/etc/subuid" : "/etc/subgid", BRIG_IDRANGE_USER,
                              u ? "/etc/subgid" : "/etc/subuid");
    if (u == 0) {
        pool->uid_start = pool->gid_start = BRIG_IDRANGE_DEFAULT_START;
        pool->uid_count = pool->gid_count = BRIG_IDRANGE_DEFAULT_COUNT;
    }
    pool->from_subid = u > 0;
    return 0;
}

size_t brig_idpool_slots(const struct brig_idpool *pool)
{
    uint32_t n = pool->uid_count < pool->gid_count ? pool->uid_count : pool->gid_count;
    return n / BRIG_IDRANGE_SIZE;
}

struct brig_idrange brig_idpool_range(const struct brig_idpool *pool, size_t slot)
{
    return (struct brig_idrange){
        .uid = pool->uid_start + (uint32_t) slot * BRIG_IDRANGE_SIZE,
        .gid = pool->gid_start + (uint32_t) slot * BRIG_IDRANGE_SIZE,
    };
}

long brig_idpool_slot_of(const struct brig_idpool *pool, const struct brig_idrange *r)
{
    if (r->uid < pool->uid_start || (r->uid - pool->uid_start) % BRIG_IDRANGE_SIZE)
        return -1;
    size_t slot = (r->uid - pool->uid_start) / BRIG_IDRANGE_SIZE;
    if (slot >= brig_idpool_slots(pool))
        return -1;
    struct brig_idrange want = brig_idpool_range(pool, slot);
    return want.gid == r->gid ? (long) slot : -1;
}

static bool meets(uint32_t start, const struct brig_id_span *spans, size_t n)
{
    uint64_t end = (uint64_t) start + BRIG_IDRANGE_SIZE;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = spans[i].start, e = s + spans[i].count;
        if (s < end && start < e)
            return true;
    }
    return false;
}

bool brig_idpool_slot_clear(const struct brig_idpool *pool, size_t slot,
                            const struct brig_id_span *uids, size_t n_uids,
                            const struct brig_id_span *gids, size_t n_gids)
{
    struct brig_idrange r = brig_idpool_range(pool, slot);
    return !meets(r.uid, uids, n_uids) && !meets(r.gid, gids, n_gids);
}

/* Marks in `blocked` each slot of a pool side (ids from `start`, `slots`
 * of BRIG_IDRANGE_SIZE) that one of the spans meets. */
static void block_slots(uint32_t start, size_t slots, const struct brig_id_span *spans, size_t n,
                        unsigned char *blocked)
{
    uint64_t end = (uint64_t) start + (uint64_t) slots * BRIG_IDRANGE_SIZE;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = spans[i].start, e = s + spans[i].count;
        if (e <= start || s >= end || e == s)
            continue;
        uint64_t first = s > start ? (s - start) / BRIG_IDRANGE_SIZE : 0;
        uint64_t last = (e - 1 - start) / BRIG_IDRANGE_SIZE;
        if (last >= slots)
            last = slots - 1;
        memset(blocked + first, 1, (size_t) (last - first + 1));
    }
}

long brig_idpool_first_clear(const struct brig_idpool *pool, const struct brig_id_span *uids,
                             size_t n_uids, const struct brig_id_span *gids, size_t n_gids)
{
    size_t slots = brig_idpool_slots(pool);
    cleanup_free unsigned char *blocked = calloc(slots ? slots : 1, 1);
    if (blocked == NULL)
        return -2;
    block_slots(pool->uid_start, slots, uids, n_uids, blocked);
    block_slots(pool->gid_start, slots, gids, n_gids, blocked);
    unsigned char *clear = memchr(blocked, 0, slots);
    return clear ? (long) (clear - blocked) : -1;
}

static int span_add(struct brig_id_span **spans, size_t *n, uint64_t start, uint64_t count)
{
    if (count == 0 || start > UINT32_MAX)
        return 0;
    if (start + count > UINT64_C(0x100000000))
        count = UINT64_C(0x100000000) - start;
    struct brig_id_span *bigger = realloc(*spans, (*n + 1) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    *spans = bigger;
    bigger[(*n)++] = (struct brig_id_span){ (uint32_t) start, (uint32_t) count };
    return 0;
}

struct spans_ctx {
    const char *except;
    struct brig_id_span **spans;
    size_t *n;
};

static int subid_line(char *line, unsigned lineno, void *opaque)
{
    struct spans_ctx *c = opaque;
    char *name;
    uint64_t s, n;
    (void) lineno;
    if (parse_subid_line(line, &name, &s, &n) == 1 && strcmp(name, c->except) != 0)
        return span_add(c->spans, c->n, s, n);
    return 0;
}

/* name:password:ID:... */
static int account_line(char *line, unsigned lineno, void *opaque)
{
    struct spans_ctx *c = opaque;
    (void) lineno;
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL)
        return 0;
    char *end;
    errno = 0;
    unsigned long long id = strtoull(c2 + 1, &end, 10);
    if (errno || end == c2 + 1 || (*end != ':' && *end != '\0'))
        return 0;
    return span_add(c->spans, c->n, id, 1);
}

int brig_id_spans_add_subid(const char *text, const char *except, struct brig_id_span **spans,
                            size_t *n)
{
    struct spans_ctx c = { except, spans, n };
    return brig_each_line(text, subid_line, &c) < 0 ? -1 : 0;
}

int brig_id_spans_add_accounts(const char *text, struct brig_id_span **spans, size_t *n)
{
    struct spans_ctx c = { NULL, spans, n };
    return brig_each_line(text, account_line, &c) < 0 ? -1 : 0;
}
