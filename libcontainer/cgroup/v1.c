#define _GNU_SOURCE
/* cgroup v1 hierarchies on hybrid and legacy hosts: the container gets a
 * directory of its own in every hierarchy the host mounts (and in a hybrid
 * host's v2 tree), each placed under the caller's own cgroup there unless
 * the spec gives an absolute path; its limits are the files of v1_plan.c,
 * written to the hierarchy that binds each controller. Processes, freezing
 * and removal are in v1_procs.c, statistics and OOM in v1_stats.c. */
#include "cgroup/v1_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "cgroup/devices_bpf.h"

/* ---- the cgroup's directories ---- */

static void v1_free(struct brig_cgroup_v1 *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n; i++) {
        if (v->dirs[i].fd >= 0)
            close(v->dirs[i].fd);
        free(v->dirs[i].path);
        free(v->dirs[i].made_from);
    }
    free(v->dirs);
    free(v);
}

static void v1_close(struct brig_cgroup *cg)
{
    v1_free(cg->v1);
    cg->v1 = NULL;
    cg->dir_fd = -1; /* the v2 directory's fd is one of the dirs' */
}

const struct brig_cgroup_v1_dir *brig_cgroup_v1_dir(const struct brig_cgroup *cg,
                                                    const char *controller)
{
    for (size_t i = 0; cg->v1 && i < cg->v1->n; i++)
        if (cg->v1->dirs[i].fd >= 0 && brig_cgroup_hierarchy_has(cg->v1->dirs[i].h, controller))
            return &cg->v1->dirs[i];
    return NULL;
}

int brig_cgroup_v1_fd(const struct brig_cgroup *cg, const char *controller)
{
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, controller);
    return d ? d->fd : -1;
}

const char *brig_cgroup_v1_dir_path(const struct brig_cgroup *cg, const char *controller)
{
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, controller);
    return d ? d->path : NULL;
}

/* The path the state file keeps: every directory, each ending in "\n". */
static int join_paths(const struct brig_cgroup_v1 *v, char **out, brig_error_t *err)
{
    size_t len = 1;
    for (size_t i = 0; i < v->n; i++)
        len += strlen(v->dirs[i].path) + 1;
    char *s = malloc(len), *p = s;
    if (s == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    for (size_t i = 0; i < v->n; i++)
        p = stpcpy(stpcpy(p, v->dirs[i].path), "\n");
    *p = '\0';
    *out = s;
    return 0;
}

/* The hierarchy a directory is in: the one whose mount point it is or is
 * under (the longest, for mount points under others). */
static const struct brig_cgroup_hierarchy *hierarchy_of(
    const struct brig_cgroup_hierarchy *const *all, const char *dir)
{
    const struct brig_cgroup_hierarchy *best = NULL;
    for (size_t i = 0; all[i]; i++) {
        size_t len = strlen(all[i]->mountpoint);
        if (strncmp(dir, all[i]->mountpoint, len) == 0 && (dir[len] == '/' || dir[len] == '\0')
            && (best == NULL || len > strlen(best->mountpoint)))
            best = all[i];
    }
    return best;
}

static int v1_open(const char *path, struct brig_cgroup *out, brig_error_t *err)
{
    const struct brig_cgroup_hierarchy *const *all = brig_cgroup_v1_hierarchies(err);
    if (all == NULL)
        return -1;
    struct brig_cgroup_v1 *v = calloc(1, sizeof *v);
    size_t lines = 0;
    for (const char *p = path; *p; p++)
        lines += *p == '\n';
    if (v == NULL || (v->dirs = calloc(lines + 1, sizeof *v->dirs)) == NULL) {
        free(v);
        return brig_error_set(err, ENOMEM, "cgroup");
    }
    size_t opened = 0;
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, "\n");
        struct brig_cgroup_v1_dir *d = &v->dirs[v->n];
        d->fd = -1;
        if ((d->path = strndup(p, len)) == NULL) {
            v1_free(v);
            return brig_error_set(err, ENOMEM, "cgroup");
        }
        v->n++;
        p += len + (p[len] == '\n');
        if ((d->h = hierarchy_of(all, d->path)) == NULL) {
            int r = brig_error_set(err, ENOENT, "cgroup `%s`: in no hierarchy this host mounts",
                                   d->path);
            v1_free(v);
            return r;
        }
        /* A hierarchy removed already (delete half-way) is left closed. */
        d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        opened += d->fd >= 0;
    }
    if (opened == 0) {
        int saved = v->n ? errno : ENOENT;
        v1_free(v);
        return brig_error_set(err, saved, "cgroup: open `%.*s`", (int) strcspn(path, "\n"), path);
    }
    if ((out->path = strdup(path)) == NULL) {
        v1_free(v);
        return brig_error_set(err, ENOMEM, "cgroup");
    }
    out->backend = &brig_cgroup_v1;
    out->v1 = v;
    const struct brig_cgroup_v1_dir *u = brig_cgroup_v1_dir(out, "");
    out->dir_fd = u ? u->fd : -1;
    return 0;
}

/* ---- creation ---- */

/* A cpuset directory brig made copies its cpus and mems into each child
 * the moment the child is made, so a child needs no write of its own:
 * such a write checks the new value against every sibling and rebuilds
 * the scheduler's domains, which costs more with every container already
 * there. Best effort: where it fails, cpuset_inherit fills the child. */
static void cpuset_clone_children(const char *dir)
{
    cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    brig_error_t e = NULL;
    if (fd >= 0)
        brig_cgroup_v1_write(fd, dir, "cgroup.clone_children", "1", &e);
    brig_error_release(&e);
}

/* mkdir -p of dir below the mount point; *first_new is the first
 * directory it made (NULL when all were there), for the undo. */
static int make_dirs_once(const char *mountpoint, const char *dir, bool cpuset, char **first_new,
                          brig_error_t *err)
{
    cleanup_free char *p = strdup(dir);
    if (p == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    for (char *s = p + strlen(mountpoint) + 1;; s++) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = '\0';
        if (mkdir(p, 0755) == 0) {
            if (cpuset)
                cpuset_clone_children(p);
            if (*first_new == NULL && (*first_new = strdup(p)) == NULL)
                return brig_error_set(err, ENOMEM, "cgroup");
        } else if (errno != EEXIST) {
            return brig_error_set(err, errno, "cgroup: create `%s`", p);
        }
        if (slash == NULL)
            return 0;
        *slash = '/';
        s = slash;
    }
}

/* A parent seen a moment ago may be gone: another create that failed
 * removed what it made. Then the walk starts again. */
static int make_dirs(const char *mountpoint, const char *dir, bool cpuset, char **first_new,
                     brig_error_t *err)
{
    *first_new = NULL;
    for (int attempt = 0;; attempt++) {
        if (make_dirs_once(mountpoint, dir, cpuset, first_new, err) == 0)
            return 0;
        if ((*err)->errnum != ENOENT || attempt == 3)
            return -1;
        brig_error_release(err);
    }
}

/* Removes dir and its parents up to and including first_new. */
static void undo_dirs(const char *dir, const char *first_new)
{
    if (first_new == NULL)
        return;
    cleanup_free char *p = strdup(dir);
    size_t stop = strlen(first_new);
    while (p && strlen(p) >= stop) {
        rmdir(p);
        char *slash = strrchr(p, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
    }
}

/* An empty cpuset.cpus or .mems of dir is filled from its parent's. */
static int fill_cpuset(const char *dir, brig_error_t *err)
{
    static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
    cleanup_close int child = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cleanup_close int parent = openat(child, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (child < 0 || parent < 0)
        return brig_error_set(err, errno, "cgroup: open `%s`", dir);
    for (size_t i = 0; i < 2; i++) {
        cleanup_free char *mine = NULL, *value = NULL;
        if (brig_read_file_at(child, files[i], &mine, NULL, err) < 0
            || brig_read_file_at(parent, files[i], &value, NULL, err) < 0)
            return brig_error_wrap(err, "cgroup `%s`", dir);
        if (*mine != '\n' && *mine != '\0')
            continue;
        if (*value != '\n' && *value != '\0'
            && brig_cgroup_v1_write(child, dir, files[i], value, err) < 0)
            return -1;
    }
    return 0;
}

/* cpuset.cpus and .mems start empty in a new cpuset cgroup, and an empty
 * one takes no process. Every level from `from` (an offset into dir, at a
 * "/") down is filled where empty, parents first, whoever made it: a
 * parent another create has just made may not be filled yet. */
static int cpuset_inherit(const char *dir, size_t from, brig_error_t *err)
{
    cleanup_free char *p = strdup(dir);
    if (p == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    for (char *end = strchrnul(p + from + 1, '/');; end = strchrnul(end + 1, '/')) {
        char saved = *end;
        *end = '\0';
        if (fill_cpuset(p, err) < 0)
            return -1;
        *end = saved;
        if (saved == '\0')
            break;
    }
    return 0;
}

static int make_one(struct brig_cgroup_v1_dir *d, bool *existed, brig_error_t *err)
{
    bool cpuset = brig_cgroup_hierarchy_has(d->h, "cpuset");
    if (make_dirs(d->h->mountpoint, d->path, cpuset, &d->made_from, err) < 0)
        return -1;
    *existed = d->made_from == NULL;
    if (cpuset && cpuset_inherit(d->path, strlen(d->h->mountpoint), err) < 0)
        return -1;
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd < 0)
        return brig_error_set(err, errno, "cgroup: open `%s`", d->path);
    if (*existed) {
        cleanup_free char *procs = NULL;
        if (brig_read_file_at(d->fd, "cgroup.procs", &procs, NULL, err) < 0)
            return brig_error_wrap(err, "cgroup `%s`", d->path);
        if (*procs)
            return brig_error_set(err, EEXIST, "cgroup `%s` already has processes", d->path);
    }
    return 0;
}

/* The directory in every hierarchy: cgroupsPath resolved against the
 * caller's own cgroup there (brig(8), CGROUPS). */
static int plan_dirs(const char *cgroups_path, const char *id, struct brig_cgroup_v1 *v,
                     brig_error_t *err)
{
    const struct brig_cgroup_hierarchy *const *all = brig_cgroup_v1_hierarchies(err);
    if (all == NULL)
        return -1;
    size_t n = 0;
    while (all[n])
        n++;
    if ((v->dirs = calloc(n, sizeof *v->dirs)) == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    for (size_t i = 0; i < n; i++) {
        cleanup_free char *rel = NULL;
        struct brig_cgroup_v1_dir *d = &v->dirs[v->n];
        /* v1 nests under the caller's own cgroup; the v2 tree of a hybrid
         * host beside it, as on a v2 host (a v2 cgroup with processes
         * can't give controllers to children). */
        int r = all[i]->v2
                    ? brig_cgroup_path_resolve(cgroups_path, id, all[i]->own, &rel, err)
                    : brig_cgroup_path_resolve_under(cgroups_path, id, all[i]->own, &rel, err);
        if (r < 0)
            return -1;
        if (strpbrk(rel, "\n\r") != NULL)
            return brig_error_set(err, 0, "cgroup path `%s`: has a line break", rel);
        if (asprintf(&d->path, "%s/%s", all[i]->mountpoint, rel) < 0)
            return brig_error_set(err, ENOMEM, "cgroup");
        d->h = all[i];
        d->fd = -1;
        v->n++;
    }
    return 0;
}

/* What a create made: the directories, and their parents it made. */
static void v1_remove_parents_made(const struct brig_cgroup *cg)
{
    for (size_t i = 0; cg->v1 && i < cg->v1->n; i++)
        undo_dirs(cg->v1->dirs[i].path, cg->v1->dirs[i].made_from);
}

static void undo_made(struct brig_cgroup_v1 *v)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->dirs[i].fd >= 0)
            close(v->dirs[i].fd);
        v->dirs[i].fd = -1;
        undo_dirs(v->dirs[i].path, v->dirs[i].made_from);
    }
}

/* The v1 directories; the v2 one comes later (make_v2). */
static int make_all(struct brig_cgroup_v1 *v, brig_error_t *err)
{
    for (size_t i = 0; i < v->n; i++) {
        bool existed;
        if (!v->dirs[i].h->v2 && make_one(&v->dirs[i], &existed, err) < 0)
            return -1;
    }
    return 0;
}

/* The first directory of path, from the offset `from` (at a "/") down,
 * that isn't there: what a mkdir -p of path will make first. */
static char *first_missing(const char *path, size_t from)
{
    char *p = strdup(path);
    for (char *end = p ? strchrnul(p + from + 1, '/') : NULL; end;
         end = *end ? strchrnul(end + 1, '/') : NULL) {
        char saved = *end;
        *end = '\0';
        if (access(p, F_OK) < 0)
            return p;
        *end = saved;
    }
    return p;
}

/* A hybrid host's v2 directory, made by the v2 backend with the part of
 * the resources that goes there: it enables those controllers down the v2
 * tree, refuses a directory that has processes, and undoes itself. What
 * it made is recorded for an undo later. */
static int make_v2(struct brig_cgroup_v1 *v, const struct brig_resources *r, brig_error_t *err)
{
    struct brig_cgroup_v1_split split;
    brig_cgroup_v1_split(r, &split);
    for (size_t i = 0; i < v->n; i++) {
        struct brig_cgroup_v1_dir *d = &v->dirs[i];
        if (!d->h->v2)
            continue;
        struct brig_cgroup made = BRIG_CGROUP_INIT;
        const char *from_root = d->path + strlen(d->h->mountpoint);
        if ((d->made_from = first_missing(d->path, strlen(d->h->mountpoint))) == NULL)
            return brig_error_set(err, ENOMEM, "cgroup");
        if (brig_cgroup_v2.create_without_devices(from_root, NULL, &split.v2, &made, err) < 0)
            return -1;
        d->fd = brig_steal_fd(made.dir_fd);
        brig_cgroup_close(&made);
    }
    return 0;
}

/* The device rules where the v1 devices hierarchy isn't: as the eBPF
 * program of the v2 directory. */
static int devices_in_v2(const struct brig_cgroup *cg, const struct brig_resources *r,
                         brig_error_t *err)
{
    if (brig_cgroup_v1_bound("devices"))
        return 0;
    struct brig_resources only = { .devices = r->devices, .n_devices = r->n_devices };
    return brig_cgroup_v1_apply_all(cg, &only, true, false, err);
}

static int create_cgroup(const char *cgroups_path, const char *id, const struct brig_resources *r,
                         struct brig_cgroup *out, brig_error_t *err)
{
    *out = (struct brig_cgroup) BRIG_CGROUP_INIT;
    /* Everything asked for is checked before anything is made. */
    if (brig_cgroup_v1_check(r, err) < 0)
        return -1;
    struct brig_cgroup_v1 *v = calloc(1, sizeof *v);
    if (v == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    out->v1 = v;
    out->backend = &brig_cgroup_v1;
    int rc = plan_dirs(cgroups_path, id, v, err);
    if (rc == 0)
        rc = make_all(v, err);
    if (rc == 0)
        rc = brig_cgroup_v1_apply_all(out, r, brig_cgroup_v1_bound("devices"), false, err);
    if (rc == 0)
        rc = make_v2(v, r, err);
    const struct brig_cgroup_v1_dir *u = rc == 0 ? brig_cgroup_v1_dir(out, "") : NULL;
    out->dir_fd = u ? u->fd : -1;
    if (rc == 0)
        rc = devices_in_v2(out, r, err);
    if (rc == 0)
        rc = join_paths(v, &out->path, err);
    if (rc < 0)
        undo_made(v);
    if (rc < 0)
        brig_cgroup_close(out);
    return rc;
}

static int v1_planned_path(const char *cgroups_path, const char *id, char **out, brig_error_t *err)
{
    struct brig_cgroup_v1 *v = calloc(1, sizeof *v);
    if (v == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    int rc = plan_dirs(cgroups_path, id, v, err);
    if (rc == 0)
        rc = join_paths(v, out, err);
    v1_free(v);
    return rc;
}

static int v1_create(const char *cgroups_path, const char *id, const struct brig_resources *r,
                     struct brig_cgroup *out, brig_error_t *err)
{
    return create_cgroup(cgroups_path, id, r, out, err);
}

static int v1_apply(const struct brig_cgroup *cg, const struct brig_resources *r, brig_error_t *err)
{
    if (brig_cgroup_v1_check(r, err) < 0)
        return -1;
    return brig_cgroup_v1_apply_all(cg, r, r->n_devices > 0, true, err);
}

/* The device rules went in with the cgroup (list writes cost nothing like
 * a verifier run); nothing is left to attach. */
static int v1_devices_attach(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                             brig_error_t *err)
{
    (void) cg, (void) p, (void) err;
    return 0;
}

static int v1_clone_fd(const struct brig_cgroup *cg)
{
    (void) cg;
    return -1; /* clone3 reaches one hierarchy: the runtime places it */
}

/* Which sub-path each of the container's directories takes: a path
 * without a controller, every one's; else the path of the entry whose
 * controller its hierarchy binds, or "" (the container's own). Two
 * entries can name one hierarchy ("cpu" and "cpuacct") only with one
 * path; every controller named must be bound by a v1 hierarchy. */
static int sub_paths(const struct brig_cgroup_v1 *v, const struct brig_cgroup_sub *subs, size_t n,
                     const struct brig_cgroup_sub **by, brig_error_t *err)
{
    for (size_t k = 0; k < n; k++) {
        bool bound = false;
        for (size_t i = 0; i < v->n; i++) {
            const struct brig_cgroup_hierarchy *h = v->dirs[i].h;
            if (subs[k].controller && (h->v2 || !brig_cgroup_hierarchy_has(h, subs[k].controller)))
                continue;
            bound = true;
            if (by[i] && strcmp(by[i]->path, subs[k].path) != 0)
                return brig_error_set(err, 0,
                                      "sub-cgroups `%s` and `%s`: %s and %s are one hierarchy "
                                      "(%s), which can't go to two paths",
                                      by[i]->arg, subs[k].arg, by[i]->controller,
                                      subs[k].controller, h->controllers);
            by[i] = &subs[k];
        }
        if (!bound)
            return brig_error_set(err, 0,
                                  "sub-cgroup `%s`: no cgroup v1 hierarchy on this host binds "
                                  "controller `%s`",
                                  subs[k].arg, subs[k].controller);
    }
    return 0;
}

/* The directory of d for sub (NULL: d's own), made when missing; its
 * path goes to f as a line. */
static int sub_dir(const struct brig_cgroup_v1_dir *d, const struct brig_cgroup_sub *sub, FILE *f,
                   brig_error_t *err)
{
    if (sub == NULL || *sub->path == '\0') {
        fprintf(f, "%s\n", d->path);
        return 0;
    }
    cleanup_free char *dir = NULL;
    if (asprintf(&dir, "%s/%s", d->path, sub->path) < 0)
        return brig_error_set(err, ENOMEM, "sub-cgroup");
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "create sub-cgroup `%s`", dir);
    if (brig_cgroup_hierarchy_has(d->h, "cpuset") && cpuset_inherit(dir, strlen(d->path), err) < 0)
        return -1;
    fprintf(f, "%s\n", dir);
    return 0;
}

static int v1_open_sub(const struct brig_cgroup *cg, const struct brig_cgroup_sub *subs, size_t n,
                       struct brig_cgroup *out, brig_error_t *err)
{
    cleanup_free const struct brig_cgroup_sub **by = calloc(cg->v1->n + 1, sizeof *by);
    if (by == NULL)
        return brig_error_set(err, ENOMEM, "sub-cgroup");
    if (sub_paths(cg->v1, subs, n, by, err) < 0)
        return -1;
    cleanup_free char *path = NULL;
    size_t len = 0;
    cleanup_file FILE *f = open_memstream(&path, &len);
    if (f == NULL)
        return brig_error_set(err, ENOMEM, "sub-cgroup");
    for (size_t i = 0; i < cg->v1->n; i++)
        if (sub_dir(&cg->v1->dirs[i], by[i], f, err) < 0)
            return -1;
    if (fclose(brig_steal_ptr(f)) != 0)
        return brig_error_set(err, ENOMEM, "sub-cgroup");
    return v1_open(path, out, err);
}

const struct brig_cgroup_backend brig_cgroup_v1 = {
    .name = "v1",
    .create = v1_create,
    .create_without_devices = v1_create,
    .open = v1_open,
    .apply = v1_apply,
    .devices_attach = v1_devices_attach,
    .add_pid = brig_cgroup_v1_add_pid,
    .freeze = brig_cgroup_v1_freeze,
    .is_frozen = brig_cgroup_v1_is_frozen,
    .pids = brig_cgroup_v1_pids,
    .signal_all = brig_cgroup_v1_signal_all,
    .kill_all = brig_cgroup_v1_kill_all,
    .stats = brig_cgroup_v1_stats,
    .oom_watch = brig_cgroup_v1_oom_watch,
    .oom_kills = brig_cgroup_v1_oom_kills,
    .destroy = brig_cgroup_v1_destroy,
    .clone_fd = v1_clone_fd,
    .open_sub = v1_open_sub,
    .close = v1_close,
    .remove_parents_made = v1_remove_parents_made,
    .add_pid_unfrozen = brig_cgroup_v1_add_pid_unfrozen,
    .self_join_open = brig_cgroup_v1_self_join_open,
    .planned_path = v1_planned_path,
};
