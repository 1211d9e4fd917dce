#define _GNU_SOURCE
/* The host's cgroup v1 hierarchies (and a hybrid host's v2 tree), from
 * the cgroup lines of /proc/self/mountinfo (mount_lines.c), with the
 * caller's own cgroup in each from /proc/self/cgroup. Found once per
 * process. */
#include "cgroup/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utils.h"

#define MAX_HIERARCHIES 32

/* The v1 controllers brig knows; any other super option ("rw", "xattr",
 * "clone_children", ...) is not one. */
static const char *const v1_controllers[] = {
    "cpu",   "cpuacct",    "cpuset",  "memory", "devices", "freezer", "net_cls", "net_prio",
    "blkio", "perf_event", "hugetlb", "pids",   "rdma",    "misc",    NULL,
};

static bool is_controller(const char *word, size_t len)
{
    if (len > 5 && strncmp(word, "name=", 5) == 0)
        return true;
    for (size_t i = 0; v1_controllers[i]; i++)
        if (strlen(v1_controllers[i]) == len && strncmp(v1_controllers[i], word, len) == 0)
            return true;
    return false;
}

/* "rw,memory" → "memory"; "rw,cpu,cpuacct" → "cpu,cpuacct". */
static char *controllers_of(const char *options)
{
    char *out = calloc(1, strlen(options) + 1);
    if (out == NULL)
        return NULL;
    for (const char *p = options; *p;) {
        size_t len = strcspn(p, ",");
        if (is_controller(p, len)) {
            if (*out)
                strcat(out, ",");
            strncat(out, p, len);
        }
        p += len + (p[len] == ',');
    }
    return out;
}

/* mountinfo escapes blanks and backslashes as \ooo; decoded in place. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0'
            && r[3] <= '7') {
            *w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

struct mount_line {
    char *root, *mountpoint, *fstype, *super;
};

/* Splits one mountinfo line in place; false when it isn't one. */
static bool split_line(char *line, struct mount_line *m)
{
    char *fields[6] = { 0 };
    char *save = NULL;
    char *tok = strtok_r(line, " \n", &save);
    for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " \n", &save))
        fields[i] = tok;
    while (tok && strcmp(tok, "-") != 0)
        tok = strtok_r(NULL, " \n", &save);
    if (fields[4] == NULL || tok == NULL)
        return false;
    m->root = fields[3];
    m->mountpoint = fields[4];
    m->fstype = strtok_r(NULL, " \n", &save);
    strtok_r(NULL, " \n", &save); /* source */
    m->super = strtok_r(NULL, " \n", &save);
    if (m->fstype == NULL || m->super == NULL)
        return false;
    unescape(m->root);
    unescape(m->mountpoint);
    return true;
}

struct found {
    struct brig_cgroup_hierarchy *v[MAX_HIERARCHIES + 1];
    size_t n;
};

static bool same_hierarchy(const struct found *f, const char *controllers, bool v2)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i]->v2 == v2 && strcmp(f->v[i]->controllers, controllers) == 0)
            return true;
    return false;
}

/* The first mount of each hierarchy; a second (a bind of part of it) is
 * the same hierarchy seen again. */
static int add_mount(struct found *f, const struct mount_line *m)
{
    bool v2 = strcmp(m->fstype, "cgroup2") == 0;
    if (!v2 && strcmp(m->fstype, "cgroup") != 0)
        return 0;
    cleanup_free char *controllers = v2 ? strdup("") : controllers_of(m->super);
    if (controllers == NULL)
        return -1;
    if ((!v2 && *controllers == '\0') || same_hierarchy(f, controllers, v2)
        || f->n == MAX_HIERARCHIES)
        return 0;
    struct brig_cgroup_hierarchy *h = calloc(1, sizeof *h);
    if (h == NULL)
        return -1;
    h->v2 = v2;
    h->controllers = brig_steal_ptr(controllers);
    h->mountpoint = strdup(m->mountpoint);
    h->mount_root = strdup(m->root);
    f->v[f->n++] = h;
    return h->mountpoint && h->mount_root ? 0 : -1;
}

/* Two comma lists with the same words in any order. */
static bool same_words(const char *a, const char *b, size_t b_len)
{
    size_t n_a = 0, n_b = 0;
    for (const char *p = a; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        size_t len = strcspn(p, ",");
        n_a++;
        bool in_b = false;
        for (const char *q = b; q < b + b_len; q += strcspn(q, ",") + 1) {
            size_t ql = strcspn(q, ",");
            if (ql > (size_t) (b + b_len - q))
                ql = (size_t) (b + b_len - q);
            in_b |= ql == len && strncmp(p, q, len) == 0;
        }
        if (!in_b)
            return false;
    }
    for (const char *q = b; q < b + b_len; q += strcspn(q, ",") + 1)
        n_b++;
    return n_a == n_b;
}

/* The caller's cgroup in each hierarchy ("4:memory:/a/b" → "/a/b"),
 * relative to where the hierarchy is mounted from (its mount root). */
static int add_own(struct found *f)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file("/proc/self/cgroup", &text, NULL, &ignored) < 0)
        brig_error_release(&ignored);
    for (char *line = text; line && *line;) {
        char *nl = strchrnul(line, '\n');
        char *c1 = memchr(line, ':', (size_t) (nl - line));
        char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (nl - c1 - 1)) : NULL;
        for (size_t i = 0; c2 && i < f->n; i++) {
            struct brig_cgroup_hierarchy *h = f->v[i];
            bool match = h->v2 ? c2 == c1 + 1 && strncmp(line, "0:", 2) == 0
                               : same_words(h->controllers, c1 + 1, (size_t) (c2 - c1 - 1));
            if (!match || h->own)
                continue;
            const char *path = c2 + 1;
            size_t len = (size_t) (nl - path), root = strlen(h->mount_root);
            /* Mounted from a subtree (brig itself in a container): the
             * part below the mount's root. */
            if (strcmp(h->mount_root, "/") != 0 && strncmp(path, h->mount_root, root) == 0)
                path += root, len -= root;
            if ((h->own = strndup(len ? path : "/", len ? len : 1)) == NULL)
                return -1;
        }
        line = *nl ? nl + 1 : nl;
    }
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i]->own == NULL && (f->v[i]->own = strdup("/")) == NULL)
            return -1;
    return 0;
}

static int discover(struct found *f, brig_error_t *err)
{
    const char *lines = brig_cgroup_mount_lines(err);
    if (lines == NULL)
        return -1;
    cleanup_free char *text = strdup(lines);
    if (text == NULL)
        return brig_error_set(err, ENOMEM, "cgroup hierarchies");
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct mount_line m;
        if (split_line(line, &m) && add_mount(f, &m) < 0)
            return brig_error_set(err, ENOMEM, "cgroup hierarchies");
    }
    if (add_own(f) < 0)
        return brig_error_set(err, ENOMEM, "cgroup hierarchies");
    return 0;
}

const struct brig_cgroup_hierarchy *const *brig_cgroup_v1_hierarchies(brig_error_t *err)
{
    static struct found found;
    static bool done;
    if (done)
        return (const struct brig_cgroup_hierarchy *const *) found.v;
    if (discover(&found, err) < 0)
        return NULL;
    /* A legacy host has no v2 tree in use; a v2 mount there (or beyond the
     * first on a hybrid host) would only confuse the placement. */
    if (brig_cgroup_layout() != BRIG_CGROUP_LAYOUT_HYBRID)
        for (size_t i = 0; i < found.n; i++)
            if (found.v[i]->v2) {
                memmove(&found.v[i], &found.v[i + 1], (found.n - i) * sizeof found.v[0]);
                found.n--, i--;
            }
    if (found.n == 0)
        return brig_error_set(err, ENOENT, "cgroup: no cgroup v1 hierarchy is mounted"), NULL;
    done = true;
    return (const struct brig_cgroup_hierarchy *const *) found.v;
}

bool brig_cgroup_hierarchy_has(const struct brig_cgroup_hierarchy *h, const char *controller)
{
    if (*controller == '\0')
        return h->v2;
    size_t len = strlen(controller);
    for (const char *p = h->controllers; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, controller, len) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}
