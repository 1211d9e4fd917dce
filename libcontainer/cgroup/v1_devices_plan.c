#define _GNU_SOURCE
/* linux.resources.devices on cgroup v1: the rules as devices.deny and
 * devices.allow writes that give the access the eBPF program of v2 gives
 * (devices_bpf.c), or an error naming the rule v1 can't express. Pure.
 *
 * The two read rules differently. The program is an ordered list: the last
 * rule that matches a request decides (an allow when it grants all of the
 * request, a deny when it takes any of it), no match denies, and the
 * default devices come after the spec's rules. A v1 cgroup is a state: a
 * default and a list of exceptions to it, which each write changes
 * (security/device_cgroup.c):
 *   "a" to devices.deny   deny by default, no exceptions;
 *   "a" to devices.allow  allow by default, no exceptions (it copies the
 *                         parent's, and a container's parent has none);
 *   "c 1:3 rw" to the file that goes against the default adds an exception,
 *   or ORs the access into the one of the very same type and numbers; to
 *   the other file it takes the access away from that one only, never from
 *   a wider one ("c 1:*") nor a narrower one.
 * Denying by default, a request passes when one exception grants all of
 * it; allowing by default, it fails when any exception takes any of it.
 *
 * So the writes are "deny a", then every rule as it is ("a" alone for all
 * devices with all access, a type-a rule as a "c" and a "b" line, "*" for
 * a missing number), then the default devices. Replayed on v1's state,
 * that is the program's list exactly unless a deny cuts into a wider
 * allow (or, after "allow all", an allow into a wider deny), or two allows
 * of one device with different access get ORed together. The writes are
 * therefore checked: a model of the kernel's state must decide every kind
 * of request as the list does (a finite check, see check_points); a
 * difference refuses the rules, naming the one that made it. */
#include "cgroup/cgroup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "cgroup/devices_bpf.h"
#include "cgroup/plan.h"

#define ACC_ALL BRIG_DEVICES_ACC_ALL

/* ---- the kernel's state ----------------------------------------------------------- */

struct v1_exception {
    int type;             /* BPF_DEVCG_DEV_CHAR or BPF_DEVCG_DEV_BLOCK */
    int64_t major, minor; /* -1: "*" */
    int access;
};

struct v1_state {
    bool allow_default;
    struct v1_exception *ex;
    size_t n, cap;
};

static void state_free(struct v1_state *st)
{
    free(st->ex);
}
#define cleanup_state __attribute__((cleanup(state_free)))
/* A new cgroup under a parent that allows all: as a container's starts. */
#define V1_FRESH         \
    {                    \
        true, NULL, 0, 0 \
    }

/* What a write says: all devices ("a"), or one exception's worth. */
struct v1_line {
    bool allow, all;
    struct v1_exception e;
};

/* "*" or a decimal number below 2^32 (the kernel's u32, "*" being ~0). */
static const char *read_number(const char *s, int64_t *out)
{
    if (*s == '*') {
        *out = -1;
        return s + 1;
    }
    if (*s < '0' || *s > '9')
        return NULL;
    int64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v >= UINT32_MAX)
            return NULL;
    }
    *out = v;
    return s;
}

static const char *read_access(const char *s, int *out)
{
    *out = 0;
    for (; *s == 'r' || *s == 'w' || *s == 'm'; s++)
        *out |= *s == 'r' ? BPF_DEVCG_ACC_READ
                          : (*s == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD);
    return *out ? s : NULL;
}

/* A write as plan_rule() spells them: "a", or "c 1:3 rwm". */
static int read_line(const struct brig_cgroup_write *w, struct v1_line *out)
{
    if (strcmp(w->file, "devices.allow") != 0 && strcmp(w->file, "devices.deny") != 0)
        return -1;
    out->allow = strcmp(w->file, "devices.allow") == 0;
    out->all = strcmp(w->value, "a") == 0;
    if (out->all)
        return 0;
    const char *s = w->value;
    if ((s[0] != 'c' && s[0] != 'b') || s[1] != ' ')
        return -1;
    out->e.type = s[0] == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
    s = read_number(s + 2, &out->e.major);
    if (s == NULL || *s != ':')
        return -1;
    s = read_number(s + 1, &out->e.minor);
    if (s == NULL || *s != ' ')
        return -1;
    s = read_access(s + 1, &out->e.access);
    return s != NULL && *s == '\0' ? 0 : -1;
}

static struct v1_exception *find_exception(struct v1_state *st, const struct v1_exception *e)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->ex[i].type == e->type && st->ex[i].major == e->major && st->ex[i].minor == e->minor)
            return &st->ex[i];
    return NULL;
}

/* One write, as devcgroup_update_access() takes it. -1 only when out of
 * memory. */
static int state_apply(struct v1_state *st, const struct v1_line *l)
{
    if (l->all) {
        st->allow_default = l->allow;
        st->n = 0;
        return 0;
    }
    struct v1_exception *same = find_exception(st, &l->e);
    if (l->allow == st->allow_default) {
        /* Along the default: takes access from the very same exception. */
        if (same && (same->access &= ~l->e.access) == 0)
            *same = st->ex[--st->n];
        return 0;
    }
    if (same) {
        same->access |= l->e.access;
        return 0;
    }
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        struct v1_exception *bigger = realloc(st->ex, cap * sizeof *bigger);
        if (bigger == NULL)
            return -1;
        st->ex = bigger;
        st->cap = cap;
    }
    st->ex[st->n++] = l->e;
    return 0;
}

/* A request: `access` (BPF_DEVCG_ACC_* bits) to the device
 * type:major:minor. */
struct request {
    int type;
    int64_t major, minor;
    int access;
};

/* As devcgroup_check_permission() decides. */
static bool state_allows(const struct v1_state *st, const struct request *q)
{
    for (size_t i = 0; i < st->n; i++) {
        const struct v1_exception *e = &st->ex[i];
        if (e->type != q->type || (e->major >= 0 && e->major != q->major)
            || (e->minor >= 0 && e->minor != q->minor))
            continue;
        if (!st->allow_default && (q->access & ~e->access) == 0)
            return true;
        if (st->allow_default && (q->access & e->access) != 0)
            return false;
    }
    return st->allow_default;
}

/* Replays writes [from, to) onto the state: 0, or -1 (and *err) when one
 * isn't a devices write or memory ran out. */
static int state_replay(struct v1_state *st, const struct brig_cgroup_write *w, size_t from,
                        size_t to, brig_error_t *err)
{
    for (size_t i = from; i < to; i++) {
        struct v1_line l;
        if (read_line(&w[i], &l) < 0)
            return brig_error_set(err, 0, "cgroup v1: `%s` ← `%s` is no device rule", w[i].file,
                                  w[i].value);
        if (state_apply(st, &l) < 0)
            return brig_error_set(err, ENOMEM, "cgroup v1 devices");
    }
    return 0;
}

int brig_cgroup_v1_devices_eval(const struct brig_cgroup_write *w, size_t n, char type,
                                int64_t major, int64_t minor, const char *access)
{
    struct request q = { type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR, major, minor, 0 };
    if ((type != 'c' && type != 'b') || access == NULL || read_access(access, &q.access) == NULL)
        return -1;
    cleanup_state struct v1_state st = V1_FRESH;
    brig_error_t err = NULL;
    if (state_replay(&st, w, 0, n, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    return state_allows(&st, &q) ? 1 : 0;
}

/* ---- the list's meaning ----------------------------------------------------------- */

/* The eBPF program's answer for the first n rules: the last that matches
 * decides, none denies. */
static bool list_allows(const struct brig_devices_rule *rules, size_t n, const struct request *q)
{
    for (size_t i = n; i-- > 0;)
        if (brig_devices_rule_matches(&rules[i], q->type, q->major, q->minor, q->access))
            return rules[i].allow;
    return false;
}

/* ---- the writes ------------------------------------------------------------------- */

static void number_text(int64_t v, char buf[24])
{
    if (v < 0)
        snprintf(buf, 24, "*");
    else
        snprintf(buf, 24, "%" PRId64, v);
}

static void access_text(int access, char buf[4])
{
    size_t k = 0;
    if (access & BPF_DEVCG_ACC_READ)
        buf[k++] = 'r';
    if (access & BPF_DEVCG_ACC_WRITE)
        buf[k++] = 'w';
    if (access & BPF_DEVCG_ACC_MKNOD)
        buf[k++] = 'm';
    buf[k] = '\0';
}

/* "allow c 1:3 rwm", "deny a *:* r": a rule, for messages. */
static void rule_text(const struct brig_devices_rule *r, char *buf, size_t size)
{
    char major[24], minor[24], access[4];
    number_text(r->major, major);
    number_text(r->minor, minor);
    access_text(r->access, access);
    char type = r->type == BPF_DEVCG_DEV_CHAR ? 'c' : (r->type == BPF_DEVCG_DEV_BLOCK ? 'b' : 'a');
    snprintf(buf, size, "%s %c %s:%s %s", r->allow ? "allow" : "deny", type, major, minor, access);
}

static int plan_rule(struct brig_cgroup_plan_list *p, const struct brig_devices_rule *r,
                     brig_error_t *err)
{
    const char *file = r->allow ? "devices.allow" : "devices.deny";
    if (r->type == 0 && r->major < 0 && r->minor < 0 && r->access == ACC_ALL)
        return brig_cgroup_plan_add(p, err, file, "a");
    char major[24], minor[24], access[4];
    number_text(r->major, major);
    number_text(r->minor, minor);
    access_text(r->access, access);
    /* v1 reads a type-a line as all devices, whatever follows. */
    if (r->type != BPF_DEVCG_DEV_BLOCK
        && brig_cgroup_plan_add(p, err, file, "c %s:%s %s", major, minor, access) < 0)
        return -1;
    if (r->type != BPF_DEVCG_DEV_CHAR
        && brig_cgroup_plan_add(p, err, file, "b %s:%s %s", major, minor, access) < 0)
        return -1;
    return 0;
}

/* ---- the check -------------------------------------------------------------------- */

struct point {
    int64_t major, minor;
};

/* 1 + the largest major (or minor) the rules name: a number none names. */
static int64_t unnamed(const struct brig_devices_rule *rules, size_t n, bool minor)
{
    int64_t top = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t v = minor ? rules[i].minor : rules[i].major;
        if (v > top)
            top = v;
    }
    return top + 1;
}

/* The devices to ask about. Both sides compare a request's numbers only
 * for equality with the numbers the rules name (the exceptions carry the
 * rules' numbers), so two devices that equal the same rules' numbers are
 * decided alike. Every such class has a member here: a number no rule
 * names stands for all the unnamed ones, so each rule's own numbers are
 * asked with a wildcard read as unnamed; a named pair (M, N) that is no
 * rule's own is decided as (M, unnamed) unless a rule is "*:N", and as
 * (unnamed, N) unless a rule is "M:*", so where both are, the pair is
 * added. */
static struct point *check_points(const struct brig_devices_rule *rules, size_t n, size_t *np)
{
    int64_t other_major = unnamed(rules, n, false), other_minor = unnamed(rules, n, true);
    size_t wild_minor = 0, wild_major = 0;
    for (size_t i = 0; i < n; i++) {
        wild_minor += rules[i].major >= 0 && rules[i].minor < 0;
        wild_major += rules[i].major < 0 && rules[i].minor >= 0;
    }
    struct point *pts = calloc(1 + n + wild_minor * wild_major, sizeof *pts);
    if (pts == NULL)
        return NULL;
    size_t k = 0;
    pts[k++] = (struct point){ other_major, other_minor };
    for (size_t i = 0; i < n; i++) {
        pts[k].major = rules[i].major < 0 ? other_major : rules[i].major;
        pts[k++].minor = rules[i].minor < 0 ? other_minor : rules[i].minor;
        if (rules[i].major < 0 || rules[i].minor >= 0)
            continue;
        for (size_t j = 0; j < n; j++)
            if (rules[j].major < 0 && rules[j].minor >= 0)
                pts[k++] = (struct point){ rules[i].major, rules[j].minor };
    }
    *np = k;
    return pts;
}

/* The first request (of the kinds the kernel asks: read, write, both on
 * open; mknod) that the state decides otherwise than the list; false when
 * there is none. */
static bool find_difference(const struct brig_devices_rule *rules, size_t n,
                            const struct v1_state *st, const struct point *pts, size_t np,
                            struct request *q)
{
    static const int kinds[] = { BPF_DEVCG_ACC_READ, BPF_DEVCG_ACC_WRITE,
                                 BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE, BPF_DEVCG_ACC_MKNOD };
    static const int types[] = { BPF_DEVCG_DEV_CHAR, BPF_DEVCG_DEV_BLOCK };
    for (size_t i = 0; i < np; i++)
        for (size_t t = 0; t < 2; t++)
            for (size_t k = 0; k < 4; k++) {
                *q = (struct request){ types[t], pts[i].major, pts[i].minor, kinds[k] };
                if (state_allows(st, q) != list_allows(rules, n, q))
                    return true;
            }
    return false;
}

/* The spec rule to blame for request q: the one after which the writes
 * have decided q otherwise than the list ever since; or, when the two
 * agree until the default devices, the last spec rule that matches q (on
 * v1 the defaults can't give back what it took). ends[i] counts the writes
 * up to rule i's. */
static int blame(const struct brig_devices_rule *rules, size_t n_spec,
                 const struct brig_cgroup_write *w, const size_t *ends, const struct request *q,
                 size_t *rule, bool *by_defaults, brig_error_t *err)
{
    cleanup_state struct v1_state st = V1_FRESH;
    size_t since = SIZE_MAX, done = 0;
    for (size_t i = 0; i < n_spec; i++) {
        if (state_replay(&st, w, done, ends[i], err) < 0)
            return -1;
        done = ends[i];
        if (state_allows(&st, q) == list_allows(rules, i + 1, q))
            since = SIZE_MAX;
        else if (since == SIZE_MAX)
            since = i;
    }
    *by_defaults = since == SIZE_MAX;
    *rule = since;
    for (size_t i = n_spec; *by_defaults && i-- > 0;) {
        *rule = i;
        if (brig_devices_rule_matches(&rules[i], q->type, q->major, q->minor, q->access))
            break;
    }
    return 0;
}

static int refuse(const struct brig_devices_rule *rules, size_t n_spec,
                  const struct brig_cgroup_write *w, const size_t *ends, const struct request *q,
                  brig_error_t *err)
{
    size_t i = 0;
    bool by_defaults = false;
    if (n_spec == 0) /* "deny a" and the defaults alone always agree */
        return brig_error_set(err, 0, "cgroup v1: the default devices don't translate");
    if (blame(rules, n_spec, w, ends, q, &i, &by_defaults, err) < 0)
        return -1;
    char rule[80], major[24], minor[24];
    rule_text(&rules[i], rule, sizeof rule);
    number_text(q->major, major);
    number_text(q->minor, minor);
    const char *what = q->access == BPF_DEVCG_ACC_MKNOD   ? "a mknod of"
                       : q->access == BPF_DEVCG_ACC_WRITE ? "a write to"
                       : q->access == BPF_DEVCG_ACC_READ  ? "a read of"
                                                          : "a read-write open of";
    bool list = list_allows(rules, n_spec + brig_devices_n_default_rules, q);
    return brig_error_set(err, 0,
                          "linux.resources.devices[%zu]: cgroup v1 can't express `%s` %s "
                          "(it would %s %s %c %s:%s, which the rules %s)",
                          i, rule,
                          by_defaults ? "with the default devices after it"
                                      : "after the rules before it",
                          list ? "deny" : "allow", what, q->type == BPF_DEVCG_DEV_BLOCK ? 'b' : 'c',
                          major, minor, list ? "allow" : "deny");
}

/* "deny a", the spec's rules, the defaults; then the check. */
static int plan_devices(struct brig_cgroup_plan_list *p, const struct brig_devices_rule *rules,
                        size_t n_spec, brig_error_t *err)
{
    size_t n = n_spec + brig_devices_n_default_rules;
    cleanup_free size_t *ends = calloc(n, sizeof *ends);
    if (ends == NULL)
        return brig_error_set(err, ENOMEM, "cgroup v1 devices");
    if (brig_cgroup_plan_add(p, err, "devices.deny", "a") < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (plan_rule(p, &rules[i], err) < 0)
            return -1;
        ends[i] = p->n;
    }
    cleanup_state struct v1_state st = V1_FRESH;
    size_t np = 0;
    cleanup_free struct point *pts = check_points(rules, n, &np);
    if (pts == NULL || state_replay(&st, p->w, 0, p->n, err) < 0)
        return pts ? -1 : brig_error_set(err, ENOMEM, "cgroup v1 devices");
    struct request q;
    if (find_difference(rules, n, &st, pts, np, &q))
        return refuse(rules, n_spec, p->w, ends, &q, err);
    return 0;
}

int brig_cgroup_v1_devices_plan(const struct brig_device_rule *rules, size_t n_rules,
                                struct brig_cgroup_write **out, size_t *n, brig_error_t *err)
{
    size_t total = n_rules + brig_devices_n_default_rules;
    cleanup_free struct brig_devices_rule *all = calloc(total, sizeof *all);
    if (all == NULL)
        return brig_error_set(err, ENOMEM, "cgroup v1 devices");
    for (size_t i = 0; i < n_rules; i++)
        if (brig_devices_rule_read(&rules[i], i, &all[i], err) < 0)
            return -1;
    memcpy(all + n_rules, brig_devices_default_rules,
           brig_devices_n_default_rules * sizeof brig_devices_default_rules[0]);
    struct brig_cgroup_plan_list p = { NULL, 0, 0 };
    return brig_cgroup_plan_finish(&p, plan_devices(&p, all, n_rules, err), out, n);
}

/* ---- the state, written out ------------------------------------------------------- */

/* The default's "a", then every exception to the other file. */
static int state_writes(struct brig_cgroup_plan_list *p, const struct v1_state *st,
                        brig_error_t *err)
{
    const char *against = st->allow_default ? "devices.deny" : "devices.allow";
    if (brig_cgroup_plan_add(p, err, st->allow_default ? "devices.allow" : "devices.deny", "a") < 0)
        return -1;
    for (size_t i = 0; i < st->n; i++) {
        const struct v1_exception *e = &st->ex[i];
        char major[24], minor[24], access[4];
        number_text(e->major, major);
        number_text(e->minor, minor);
        access_text(e->access, access);
        if (brig_cgroup_plan_add(p, err, against, "%c %s:%s %s",
                                 e->type == BPF_DEVCG_DEV_BLOCK ? 'b' : 'c', major, minor, access)
            < 0)
            return -1;
    }
    return 0;
}

int brig_cgroup_v1_devices_state(const struct brig_device_rule *rules, size_t n_rules,
                                 struct brig_cgroup_write **out, size_t *n, brig_error_t *err)
{
    struct brig_cgroup_write *w = NULL;
    size_t nw = 0;
    if (brig_cgroup_v1_devices_plan(rules, n_rules, &w, &nw, err) < 0)
        return -1;
    cleanup_state struct v1_state st = V1_FRESH;
    int rc = state_replay(&st, w, 0, nw, err);
    brig_cgroup_plan_free(w, nw);
    struct brig_cgroup_plan_list p = { NULL, 0, 0 };
    if (rc == 0)
        rc = state_writes(&p, &st, err);
    return brig_cgroup_plan_finish(&p, rc, out, n);
}
