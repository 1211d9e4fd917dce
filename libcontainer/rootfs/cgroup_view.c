/* The container's /sys/fs/cgroup on a host with v1 hierarchies, planned
 * from its mountinfo and /proc/self/cgroup (rootfs/cgroup_view.h). Pure:
 * two texts in, a list of mounts and links out. */
#define _GNU_SOURCE
#include "rootfs/cgroup_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "rootfs/mountinfo.h"

static int oom(brig_error_t *err)
{
    return brig_error_set(err, ENOMEM, "cgroup mount");
}

/* ---- /proc/self/cgroup ---- */

/* One line: "4:memory:/brig/c1", "1:cpu,cpuacct:/", "0::/brig/c1". */
struct hierarchy {
    char *controllers; /* "memory", "cpu,cpuacct", "name=systemd"; "" for v2 */
    char *path;        /* the container's cgroup in it */
    bool v2;
    bool planned;
    /* A mount of it seen that doesn't reach `path` (no cgroup namespace):
     * an error unless a later one does. */
    const char *unreached;
};

struct hierarchies {
    struct hierarchy *v;
    size_t n;
};

/* Splits `text` in place; lines that don't parse are skipped. */
static int parse_proc_cgroup(char *text, struct hierarchies *hs, brig_error_t *err)
{
    char *save = NULL;
    size_t cap = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *controllers = strchr(line, ':');
        char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (path == NULL || path[1] != '/')
            continue;
        *controllers++ = '\0';
        *path++ = '\0';
        if (hs->n == cap) {
            cap = cap ? cap * 2 : 16;
            struct hierarchy *bigger = realloc(hs->v, cap * sizeof *bigger);
            if (bigger == NULL)
                return oom(err);
            hs->v = bigger;
        }
        hs->v[hs->n++] = (struct hierarchy){
            .controllers = controllers,
            .path = path,
            .v2 = strcmp(line, "0") == 0 && *controllers == '\0',
        };
    }
    return 0;
}

/* ---- matching mounts to hierarchies ---- */

static bool list_has(const char *list, const char *word, size_t len)
{
    for (const char *p = list; *p;) {
        const char *end = strchrnul(p, ',');
        if ((size_t) (end - p) == len && strncmp(p, word, len) == 0)
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* True when the superblock options ("rw,cpu,cpuacct", "rw,xattr,
 * name=systemd") name every controller of the hierarchy: a controller
 * (and a name) belongs to one hierarchy only. */
static bool options_name_all(const char *options, const char *controllers)
{
    if (*controllers == '\0')
        return false;
    for (const char *p = controllers; *p;) {
        const char *end = strchrnul(p, ',');
        if (end == p || !list_has(options, p, (size_t) (end - p)))
            return false;
        p = *end ? end + 1 : end;
    }
    return true;
}

static struct hierarchy *hierarchy_of(struct hierarchies *hs, const struct brig_mountinfo *e,
                                      bool with_unified)
{
    bool v2 = strcmp(e->fstype, "cgroup2") == 0;
    if ((!v2 && strcmp(e->fstype, "cgroup") != 0) || (v2 && !with_unified))
        return NULL;
    for (size_t i = 0; i < hs->n; i++) {
        struct hierarchy *h = &hs->v[i];
        if (h->v2 == v2 && (v2 || options_name_all(e->super_options, h->controllers)))
            return h;
    }
    return NULL;
}

/* ---- what one hierarchy becomes ---- */

static bool has_dotdot(const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
            return true;
    return false;
}

/* The container's directory below mount e: its mount point joined with the
 * part of `path` below the mount's root. 1 when the mount doesn't reach
 * it (a path outside its root, or one that climbs with ".."). */
static int host_dir(const struct brig_mountinfo *e, const char *path, char **out, brig_error_t *err)
{
    if (has_dotdot(path) || has_dotdot(e->root) || !brig_path_is_under(path, e->root))
        return 1;
    const char *rest = strcmp(e->root, "/") == 0 ? path : path + strlen(e->root);
    while (*rest == '/')
        rest++;
    size_t n = strlen(e->mountpoint);
    bool slash = n > 0 && e->mountpoint[n - 1] == '/';
    if (*rest == '\0')
        *out = strdup(e->mountpoint);
    else if (asprintf(out, "%s%s%s", e->mountpoint, slash ? "" : "/", rest) < 0)
        *out = NULL;
    return *out ? 0 : oom(err);
}

/* "memory" → "memory"; a named hierarchy without controllers says "none"
 * too, or the kernel would take every free controller into a new one. */
static char *fresh_data(const char *controllers)
{
    bool only_names = true;
    for (const char *p = controllers; *p;) {
        only_names &= strncmp(p, "name=", 5) == 0;
        const char *end = strchrnul(p, ',');
        p = *end ? end + 1 : end;
    }
    char *out = NULL;
    if (asprintf(&out, "%s%s", only_names ? "none," : "", controllers) < 0)
        return NULL;
    return out;
}

/* The last component of a mount point, when it can name a directory. */
static const char *dir_name(const char *mountpoint)
{
    const char *slash = strrchr(mountpoint, '/');
    const char *name = slash ? slash + 1 : mountpoint;
    if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return NULL;
    return name;
}

static bool name_taken(const struct brig_cgroup_view *v, const char *name)
{
    for (size_t i = 0; i < v->n_mounts; i++)
        if (strcmp(v->mounts[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < v->n_links; i++)
        if (strcmp(v->links[i].name, name) == 0)
            return true;
    return false;
}

static struct brig_cgroup_view_mount *add_mount(struct brig_cgroup_view *v, const char *name,
                                                brig_error_t *err)
{
    struct brig_cgroup_view_mount *bigger = realloc(v->mounts, (v->n_mounts + 1) * sizeof *bigger);
    if (bigger == NULL) {
        oom(err);
        return NULL;
    }
    v->mounts = bigger;
    struct brig_cgroup_view_mount *m = &v->mounts[v->n_mounts];
    *m = (struct brig_cgroup_view_mount){ .name = strdup(name) };
    if (m->name == NULL) {
        oom(err);
        return NULL;
    }
    v->n_mounts++;
    return m;
}

/* Mount e of hierarchy h, into the view unless it can't be named or (no
 * cgroup namespace) doesn't reach the container's directory. */
static int plan_hierarchy(struct brig_cgroup_view *v, struct hierarchy *h,
                          const struct brig_mountinfo *e, bool cgroupns, brig_error_t *err)
{
    const char *name = h->v2 ? "unified" : dir_name(e->mountpoint);
    if (name == NULL || name_taken(v, name))
        return 0;
    cleanup_free char *source = NULL;
    if (!cgroupns) {
        int r = host_dir(e, h->path, &source, err);
        if (r < 0)
            return -1;
        if (r > 0) {
            h->unreached = h->unreached ? h->unreached : e->mountpoint;
            return 0;
        }
    }
    cleanup_free char *data = NULL;
    if (!h->v2 && source == NULL && (data = fresh_data(h->controllers)) == NULL)
        return oom(err);
    struct brig_cgroup_view_mount *m = add_mount(v, name, err);
    if (m == NULL)
        return -1;
    m->fstype = h->v2 ? "cgroup2" : "cgroup";
    m->data = brig_steal_ptr(data);
    m->source = brig_steal_ptr(source);
    h->planned = true;
    return 0;
}

/* ---- links ---- */

static int add_link(struct brig_cgroup_view *v, const char *name, size_t len, const char *target,
                    brig_error_t *err)
{
    struct brig_cgroup_view_link *bigger = realloc(v->links, (v->n_links + 1) * sizeof *bigger);
    if (bigger == NULL)
        return oom(err);
    v->links = bigger;
    struct brig_cgroup_view_link *l = &v->links[v->n_links];
    *l = (struct brig_cgroup_view_link){ .name = strndup(name, len), .target = strdup(target) };
    v->n_links++;
    return l->name && l->target ? 0 : oom(err);
}

/* "cpu,cpuacct" → links "cpu" and "cpuacct" to it, where the names are
 * free; never for "name=..." parts. */
static int plan_links(struct brig_cgroup_view *v, brig_error_t *err)
{
    size_t n = v->n_mounts;
    for (size_t i = 0; i < n; i++) {
        const char *target = v->mounts[i].name;
        if (strchr(target, ',') == NULL)
            continue;
        for (const char *p = target; *p;) {
            const char *end = strchrnul(p, ',');
            size_t len = (size_t) (end - p);
            cleanup_free char *part = strndup(p, len);
            if (part == NULL)
                return oom(err);
            if (len > 0 && memchr(p, '=', len) == NULL && dir_name(part) == part
                && !name_taken(v, part) && add_link(v, p, len, target, err) < 0)
                return -1;
            p = *end ? end + 1 : end;
        }
    }
    return 0;
}

/* ---- the view ---- */

static int plan_from_mountinfo(struct brig_cgroup_view *v, struct hierarchies *hs, char *mountinfo,
                               bool cgroupns, bool with_unified, brig_error_t *err)
{
    char *save = NULL;
    for (char *line = strtok_r(mountinfo, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct brig_mountinfo e;
        if (!brig_mountinfo_parse_line(line, &e))
            continue;
        struct hierarchy *h = hierarchy_of(hs, &e, with_unified);
        if (h != NULL && !h->planned && plan_hierarchy(v, h, &e, cgroupns, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < hs->n; i++) {
        const struct hierarchy *h = &hs->v[i];
        if (!h->planned && h->unreached)
            return brig_error_set(err, 0,
                                  "cgroup hierarchy `%s`: the container's cgroup `%s` is not "
                                  "below its mount at `%s`",
                                  h->v2 ? "unified" : h->controllers, h->path, h->unreached);
    }
    return 0;
}

int brig_cgroup_view_plan(const char *mountinfo, const char *proc_cgroup, bool cgroupns,
                          bool with_unified, struct brig_cgroup_view *out, brig_error_t *err)
{
    *out = (struct brig_cgroup_view){ 0 };
    cleanup_free char *cgroup_text = strdup(proc_cgroup);
    cleanup_free char *mountinfo_text = strdup(mountinfo);
    cleanup_free struct hierarchy *hv = NULL;
    struct hierarchies hs = { 0 };
    if (cgroup_text == NULL || mountinfo_text == NULL)
        return oom(err);
    int r = parse_proc_cgroup(cgroup_text, &hs, err);
    hv = hs.v;
    if (r == 0)
        r = plan_from_mountinfo(out, &hs, mountinfo_text, cgroupns, with_unified, err);
    if (r == 0)
        r = plan_links(out, err);
    if (r < 0)
        brig_cgroup_view_free(out);
    return r;
}

void brig_cgroup_view_free(struct brig_cgroup_view *v)
{
    for (size_t i = 0; i < v->n_mounts; i++) {
        free(v->mounts[i].name);
        free(v->mounts[i].data);
        free(v->mounts[i].source);
    }
    for (size_t i = 0; i < v->n_links; i++) {
        free(v->links[i].name);
        free(v->links[i].target);
    }
    free(v->mounts);
    free(v->links);
    *v = (struct brig_cgroup_view){ 0 };
}
