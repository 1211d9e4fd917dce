#define _GNU_SOURCE
/* A v1 devices cgroup taken from the list it holds to the one the rules
 * make, with the container's processes running in it (`brig update`, or
 * any apply). Pure.
 *
 * Writing the whole plan again ("deny a", then every allow) would leave
 * the processes without any device, /dev/null included, between the
 * first write and the allow that gives it back: a loop writing to
 * /dev/null sees EPERM. So both sides are read as a state, a default and
 * its exceptions (the list from devices.list, which prints an allow-list
 * as its exceptions and allow-all as the single line "a *:* rwm"; the
 * rules from brig_cgroup_v1_devices_state), and only the difference is
 * written: first the allows of what each exception gains, then the
 * denies of what each loses. A write against the default changes the one
 * exception of the very same type and numbers and no other
 * (security/device_cgroup.c), so an exception that stays, and each
 * access it keeps, is never touched, and allows before denies mean that
 * a device moving from a wider exception to a narrower one ("c 136:*" to
 * "c 136:0") is allowed all along. */
#include "cgroup/cgroup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/plan.h"

#define ACC_R 1
#define ACC_W 2
#define ACC_M 4

/* One exception: "c 1:3" and its access. */
struct entry {
    char key[32];
    int access;
};

struct state {
    bool allow_all; /* the default: allow (the list's "a *:* rwm"), or deny */
    struct entry *e;
    size_t n, cap; /* cap: made for as many as there are lines to read */
};

static void state_clear(struct state *s)
{
    free(s->e);
}
#define cleanup_state __attribute__((cleanup(state_clear)))
#define STATE_INIT        \
    {                     \
        false, NULL, 0, 0 \
    }

/* "*" or a decimal number of at most 10 digits. */
static const char *skip_number(const char *s)
{
    if (*s == '*')
        return s + 1;
    size_t digits = strspn(s, "0123456789");
    return digits > 0 && digits <= 10 ? s + digits : NULL;
}

/* "c 1:3 rwm" (len bytes of s) → the entry; -1 when it's not that. */
static int read_entry(const char *s, size_t len, struct entry *out)
{
    char line[64];
    if (len >= sizeof line)
        return -1;
    memcpy(line, s, len);
    line[len] = '\0';
    if ((line[0] != 'c' && line[0] != 'b') || line[1] != ' ')
        return -1;
    const char *p = skip_number(line + 2);
    if (p == NULL || *p != ':' || (p = skip_number(p + 1)) == NULL || *p != ' ')
        return -1;
    snprintf(out->key, sizeof out->key, "%.*s", (int) (p - line), line);
    out->access = 0;
    for (p++; *p == 'r' || *p == 'w' || *p == 'm'; p++)
        out->access |= *p == 'r' ? ACC_R : (*p == 'w' ? ACC_W : ACC_M);
    return out->access != 0 && *p == '\0' ? 0 : -1;
}

/* The access bits as the kernel spells them, in its order. */
static const char *access_text(int access)
{
    static const char *const text[] = { "", "r", "w", "rw", "m", "rm", "wm", "rwm" };
    return text[access & (ACC_R | ACC_W | ACC_M)];
}

/* The access of the exception with this key; 0 when there is none. */
static int access_of(const struct state *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->e[i].key, key) == 0)
            return s->e[i].access;
    return 0;
}

static int state_make(struct state *s, size_t cap, brig_error_t *err)
{
    if ((s->e = calloc(cap ? cap : 1, sizeof *s->e)) == NULL)
        return brig_error_set(err, ENOMEM, "cgroup v1 devices");
    s->cap = cap;
    return 0;
}

/* As the kernel adds one: ORed into an exception of the same key. */
static void state_add(struct state *s, const struct entry *e)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->e[i].key, e->key) == 0) {
            s->e[i].access |= e->access;
            return;
        }
    if (s->n < s->cap)
        s->e[s->n++] = *e;
}

/* devices.list's text: "a *:* rwm" alone, or exceptions one a line. */
static int read_list(const char *text, struct state *out, brig_error_t *err)
{
    size_t lines = 1;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    if (state_make(out, lines, err) < 0)
        return -1;
    bool entries = false;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        struct entry e;
        if (len > 0 && p[0] == 'a' && (len == 1 || p[1] == ' ')) {
            out->allow_all = true;
        } else if (len > 0) {
            if (read_entry(p, len, &e) < 0)
                return brig_error_set(err, 0, "devices.list: can't read the line `%.*s`", (int) len,
                                      p);
            state_add(out, &e);
            entries = true;
        }
        p += len + (p[len] == '\n');
    }
    if (out->allow_all && entries)
        return brig_error_set(err, 0, "devices.list: `a *:* rwm` beside exceptions");
    return 0;
}

/* The rules' state, from brig_cgroup_v1_devices_state's writes. */
static int read_rules(const struct brig_device_rule *rules, size_t n_rules, struct state *out,
                      brig_error_t *err)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_v1_devices_state(rules, n_rules, &w, &n, err) < 0)
        return -1;
    int rc = state_make(out, n, err);
    out->allow_all = n > 0 && strcmp(w[0].file, "devices.allow") == 0;
    for (size_t i = 1; rc == 0 && i < n; i++) {
        struct entry e;
        if (read_entry(w[i].value, strlen(w[i].value), &e) < 0)
            rc = brig_error_set(err, 0, "cgroup v1 devices: no exception: `%s`", w[i].value);
        else
            state_add(out, &e);
    }
    brig_cgroup_plan_free(w, n);
    return rc;
}

static int add_write(struct brig_cgroup_plan_list *p, bool allow, const char *key, int access,
                     brig_error_t *err)
{
    return brig_cgroup_plan_add(p, err, allow ? "devices.allow" : "devices.deny", "%s %s", key,
                                access_text(access));
}

/* An allow-all target: "allow a" (it drops the denies the list can't
 * show), then its denies. */
static int to_allow_all(struct brig_cgroup_plan_list *p, const struct state *to, brig_error_t *err)
{
    if (brig_cgroup_plan_add(p, err, "devices.allow", "a") < 0)
        return -1;
    for (size_t i = 0; i < to->n; i++)
        if (add_write(p, false, to->e[i].key, to->e[i].access, err) < 0)
            return -1;
    return 0;
}

/* An allow-list target: "deny a" only when the cgroup allows all now;
 * the allows each exception gains, then the denies each loses. */
static int to_allow_list(struct brig_cgroup_plan_list *p, const struct state *from,
                         const struct state *to, brig_error_t *err)
{
    static const struct state none = STATE_INIT;
    if (from->allow_all) {
        if (brig_cgroup_plan_add(p, err, "devices.deny", "a") < 0)
            return -1;
        from = &none;
    }
    for (size_t i = 0; i < to->n; i++) {
        int gained = to->e[i].access & ~access_of(from, to->e[i].key);
        if (gained && add_write(p, true, to->e[i].key, gained, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < from->n; i++) {
        int lost = from->e[i].access & ~access_of(to, from->e[i].key);
        if (lost && add_write(p, false, from->e[i].key, lost, err) < 0)
            return -1;
    }
    return 0;
}

static int transition(const struct state *from, const struct state *to,
                      struct brig_cgroup_plan_list *p, brig_error_t *err)
{
    return to->allow_all ? to_allow_all(p, to, err) : to_allow_list(p, from, to, err);
}

int brig_cgroup_v1_devices_update(const char *list, const struct brig_device_rule *rules,
                                  size_t n_rules, struct brig_cgroup_write **out, size_t *n,
                                  brig_error_t *err)
{
    cleanup_state struct state from = STATE_INIT;
    cleanup_state struct state to = STATE_INIT;
    struct brig_cgroup_plan_list p = { NULL, 0, 0 };
    int rc = read_list(list, &from, err);
    if (rc == 0)
        rc = read_rules(rules, n_rules, &to, err);
    if (rc == 0)
        rc = transition(&from, &to, &p, err);
    return brig_cgroup_plan_finish(&p, rc, out, n);
}

int brig_cgroup_v1_devices_check_list(const char *list, const struct brig_device_rule *rules,
                                      size_t n_rules, brig_error_t *err)
{
    cleanup_state struct state from = STATE_INIT;
    cleanup_state struct state to = STATE_INIT;
    if (read_list(list, &from, err) < 0 || read_rules(rules, n_rules, &to, err) < 0)
        return -1;
    if (to.allow_all || from.allow_all)
        return to.allow_all == from.allow_all
                   ? 0
                   : brig_error_set(err, 0, "devices.list %s all devices, the rules %s",
                                    from.allow_all ? "allows" : "doesn't allow",
                                    to.allow_all ? "do" : "don't");
    struct brig_cgroup_plan_list p = { NULL, 0, 0 };
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_plan_finish(&p, transition(&from, &to, &p, err), &w, &n) < 0)
        return -1;
    int rc = n == 0 ? 0
                    : brig_error_set(err, 0,
                                     "devices.list differs from the rules' list (it still needs "
                                     "`%s` ← `%s`)",
                                     w[0].file, w[0].value);
    brig_cgroup_plan_free(w, n);
    return rc;
}
