#define _GNU_SOURCE
/* The cgroup interface: which backend drives this host, and each
 * operation handed to the backend of the cgroup it is about. */
#include "cgroup/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

static long fs_type(const char *path)
{
    struct statfs sfs;
    return statfs(path, &sfs) == 0 ? (long) sfs.f_type : 0;
}

enum brig_cgroup_layout brig_cgroup_layout(void)
{
    static enum brig_cgroup_layout found = BRIG_CGROUP_LAYOUT_NONE;
    static bool known;
    if (known)
        return found;
    long top = fs_type("/sys/fs/cgroup");
    if (top == CGROUP2_SUPER_MAGIC)
        found = BRIG_CGROUP_LAYOUT_UNIFIED;
    else if (fs_type("/sys/fs/cgroup/unified") == CGROUP2_SUPER_MAGIC)
        found = BRIG_CGROUP_LAYOUT_HYBRID;
    else if (top == TMPFS_MAGIC || top == CGROUP_SUPER_MAGIC)
        found = BRIG_CGROUP_LAYOUT_LEGACY;
    known = true;
    return found;
}

const char *brig_cgroup_layout_name(enum brig_cgroup_layout l)
{
    switch (l) {
    case BRIG_CGROUP_LAYOUT_UNIFIED:
        return "unified";
    case BRIG_CGROUP_LAYOUT_HYBRID:
        return "hybrid";
    case BRIG_CGROUP_LAYOUT_LEGACY:
        return "legacy";
    default:
        return "none";
    }
}

/* The backend for new cgroups: v2 on a unified host, the v1 hierarchies
 * (with a hybrid host's v2 tree among them) otherwise. */
static const struct brig_cgroup_backend *host_backend(void)
{
    enum brig_cgroup_layout l = brig_cgroup_layout();
    return l == BRIG_CGROUP_LAYOUT_HYBRID || l == BRIG_CGROUP_LAYOUT_LEGACY ? &brig_cgroup_v1
                                                                            : &brig_cgroup_v2;
}

/* A path read back from a state file says whose it is: a v1 one ends in
 * a newline (cgroup.h). */
static const struct brig_cgroup_backend *backend_for_path(const char *path)
{
    if (brig_cgroup_is_systemd_record(path))
        return &brig_cgroup_systemd;
    size_t len = strlen(path);
    return len > 0 && path[len - 1] == '\n' ? &brig_cgroup_v1 : &brig_cgroup_v2;
}

/* A cgroup opened before it knew its backend (a zeroed struct) belongs to
 * the one its path names. */
static const struct brig_cgroup_backend *backend_of(const struct brig_cgroup *cg)
{
    return cg->backend ? cg->backend : backend_for_path(cg->path ? cg->path : "");
}

int brig_cgroup_create(const char *cgroups_path, const char *id, const struct brig_resources *r,
                       struct brig_cgroup *out, brig_error_t *err)
{
    return host_backend()->create(cgroups_path, id, r, out, err);
}

int brig_cgroup_create_without_devices(const char *cgroups_path, const char *id,
                                       const struct brig_resources *r, struct brig_cgroup *out,
                                       brig_error_t *err)
{
    return host_backend()->create_without_devices(cgroups_path, id, r, out, err);
}

int brig_cgroup_open(const char *path, struct brig_cgroup *out, brig_error_t *err)
{
    *out = (struct brig_cgroup) BRIG_CGROUP_INIT;
    return backend_for_path(path)->open(path, out, err);
}

void brig_cgroup_close(struct brig_cgroup *cg)
{
    if (cg->backend && cg->backend->close)
        cg->backend->close(cg);
    if (cg->dir_fd >= 0)
        close(cg->dir_fd);
    cg->dir_fd = -1;
    free(cg->path);
    cg->path = NULL;
    cg->backend = NULL;
}

int brig_cgroup_apply(const struct brig_cgroup *cg, const struct brig_resources *r,
                      brig_error_t *err)
{
    return backend_of(cg)->apply(cg, r, err);
}

int brig_cgroup_devices_attach(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                               brig_error_t *err)
{
    return backend_of(cg)->devices_attach(cg, p, err);
}

int brig_cgroup_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    return backend_of(cg)->add_pid(cg, pid, err);
}

int brig_cgroup_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err)
{
    return backend_of(cg)->freeze(cg, frozen, err);
}

bool brig_cgroup_is_frozen(const struct brig_cgroup *cg)
{
    return backend_of(cg)->is_frozen(cg);
}

bool brig_cgroup_frozen_at(const char *path)
{
    const struct brig_cgroup_backend *b = backend_for_path(path);
    if (b == &brig_cgroup_v1)
        return brig_cgroup_v1_frozen_at(path);
    if (b == &brig_cgroup_v2) {
        char file[PATH_MAX];
        return snprintf(file, sizeof file, "%s/cgroup.freeze", path) < (int) sizeof file
               && brig_cgroup_first_byte(AT_FDCWD, file) == '1';
    }
    struct brig_cgroup cg;
    brig_error_t err = NULL;
    if (brig_cgroup_open(path, &cg, &err) < 0) {
        brig_error_release(&err);
        return false;
    }
    bool frozen = brig_cgroup_is_frozen(&cg);
    brig_cgroup_close(&cg);
    return frozen;
}

int brig_cgroup_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err)
{
    return backend_of(cg)->pids(cg, out, n, err);
}

int brig_cgroup_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err)
{
    return backend_of(cg)->signal_all(cg, sig, err);
}

int brig_cgroup_kill_all(const struct brig_cgroup *cg, brig_error_t *err)
{
    return backend_of(cg)->kill_all(cg, err);
}

int brig_cgroup_destroy(const char *path, brig_error_t *err)
{
    return backend_for_path(path)->destroy(path, err);
}

int brig_cgroup_planned_path(const char *cgroups_path, const char *id, char **out,
                             brig_error_t *err)
{
    *out = NULL;
    const struct brig_cgroup_backend *b = host_backend();
    return b->planned_path ? b->planned_path(cgroups_path, id, out, err) : 0;
}

void brig_cgroup_remove_planned(const char *path)
{
    /* A line per directory (v1), or one (v2): rmdir removes only an empty
     * cgroup without children, which nothing else can be using. */
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, "\n");
        char *dir = strndup(p, len);
        if (dir && *dir == '/')
            rmdir(dir);
        free(dir);
        p += len + (p[len] == '\n');
    }
}

void brig_cgroup_remove_parents_made(const struct brig_cgroup *cg)
{
    const struct brig_cgroup_backend *b = backend_of(cg);
    if (b->remove_parents_made)
        b->remove_parents_made(cg);
}

int brig_cgroup_add_pid_unfrozen(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    const struct brig_cgroup_backend *b = backend_of(cg);
    return b->add_pid_unfrozen ? b->add_pid_unfrozen(cg, pid, err) : 0;
}

int brig_cgroup_adopt(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    if (cg->path == NULL || cg->systemd == NULL || cg->systemd->started)
        return 0;
    return brig_cgroup_add_pid(cg, pid, err);
}

int brig_cgroup_self_join_open(const struct brig_cgroup *cg, bool unfrozen,
                               struct brig_cgroup_self_join *out, brig_error_t *err)
{
    *out = (struct brig_cgroup_self_join) BRIG_CGROUP_SELF_JOIN_INIT;
    const struct brig_cgroup_backend *b = backend_of(cg);
    return b->self_join_open ? b->self_join_open(cg, unfrozen, out, err) : 0;
}

int brig_cgroup_self_join(const struct brig_cgroup_self_join *j)
{
    for (size_t i = 0; i < j->n; i++)
        if (write(j->fds[i], "0", 1) != 1)
            return -1;
    return 0;
}

void brig_cgroup_self_join_close(struct brig_cgroup_self_join *j)
{
    for (size_t i = 0; i < j->n; i++)
        close(j->fds[i]);
    free(j->fds);
    *j = (struct brig_cgroup_self_join) BRIG_CGROUP_SELF_JOIN_INIT;
}

int brig_cgroup_clone_fd(const struct brig_cgroup *cg)
{
    return backend_of(cg)->clone_fd(cg);
}

int brig_cgroup_open_sub(const struct brig_cgroup *cg, const char *const *args, size_t n_args,
                         struct brig_cgroup *out, brig_error_t *err)
{
    *out = (struct brig_cgroup) BRIG_CGROUP_INIT;
    struct brig_cgroup_sub *subs = NULL;
    size_t n = 0;
    if (brig_cgroup_sub_parse(args, n_args, &subs, &n, err) < 0)
        return -1;
    int rc = backend_of(cg)->open_sub(cg, subs, n, out, err);
    brig_cgroup_sub_free(subs, n);
    return rc;
}

int brig_cgroup_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err)
{
    *fd = -1;
    const struct brig_cgroup_backend *b = backend_of(cg);
    if (b->oom_watch == NULL)
        return brig_error_set(err, ENOSYS, "cgroup: OOM notification (%s)", b->name);
    return b->oom_watch(cg, fd, err);
}

int brig_cgroup_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err)
{
    *out = 0;
    const struct brig_cgroup_backend *b = backend_of(cg);
    if (b->oom_kills == NULL)
        return brig_error_set(err, ENOSYS, "cgroup: OOM count (%s)", b->name);
    return b->oom_kills(cg, out, err);
}

int brig_cgroup_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                      brig_error_t *err)
{
    const struct brig_cgroup_backend *b = backend_of(cg);
    if (b->stats == NULL)
        return brig_error_set(err, ENOSYS, "cgroup: statistics (%s)", b->name);
    return b->stats(cg, out, err);
}

char *brig_cgroup_own(void)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file("/proc/self/cgroup", &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return strdup("/");
    }
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "0::", 3) == 0)
            return strdup(line + 3);
        line = nl ? nl + 1 : NULL;
    }
    return strdup("/");
}

/* v1: the caller's cgroup in every hierarchy, as a v1 path. */
static int own_v1_path(char **out, brig_error_t *err)
{
    const struct brig_cgroup_hierarchy *const *all = brig_cgroup_v1_hierarchies(err);
    if (all == NULL)
        return -1;
    size_t len = 0;
    cleanup_file FILE *f = open_memstream(out, &len);
    if (f == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    for (size_t i = 0; all[i]; i++)
        fprintf(f, "%s%s\n", all[i]->mountpoint, strcmp(all[i]->own, "/") == 0 ? "" : all[i]->own);
    if (fclose(brig_steal_ptr(f)) != 0)
        return brig_error_set(err, ENOMEM, "cgroup");
    return 0;
}

int brig_cgroup_open_own(struct brig_cgroup *out, brig_error_t *err)
{
    *out = (struct brig_cgroup) BRIG_CGROUP_INIT;
    cleanup_free char *path = NULL;
    if (host_backend() == &brig_cgroup_v1) {
        if (own_v1_path(&path, err) < 0)
            return -1;
    } else {
        const char *root = brig_cgroup_root(err);
        cleanup_free char *own = brig_cgroup_own();
        if (root == NULL)
            return -1;
        if (own == NULL || asprintf(&path, "%s%s", root, strcmp(own, "/") == 0 ? "" : own) < 0)
            return brig_error_set(err, ENOMEM, "cgroup");
    }
    return brig_cgroup_open(path, out, err);
}

int brig_cgroup_each_root(const struct brig_cgroup *cg,
                          int (*fn)(void *data, const char *controllers, const char *root),
                          void *data, brig_error_t *err)
{
    if (cg->systemd)
        cg = &cg->systemd->inner;
    if (cg->v1 == NULL) {
        const char *top = brig_cgroup_root(err);
        if (top == NULL)
            return -1;
        size_t n = strlen(top);
        const char *rel = strncmp(cg->path, top, n) == 0 ? cg->path + n : cg->path;
        return fn(data, NULL, *rel ? rel : "/");
    }
    for (size_t i = 0; i < cg->v1->n; i++) {
        const struct brig_cgroup_v1_dir *d = &cg->v1->dirs[i];
        const char *rel = d->path + strlen(d->h->mountpoint);
        if (fn(data, d->h->v2 ? NULL : d->h->controllers, *rel ? rel : "/") < 0)
            return brig_error_set(err, ENOMEM, "cgroup root of `%s`", d->path);
    }
    return 0;
}

const char *brig_cgroup_freezer_dir(const struct brig_cgroup *cg)
{
    if (cg->systemd)
        cg = &cg->systemd->inner;
    if (cg->v1 == NULL)
        return cg->path;
    const char *d = brig_cgroup_v1_dir_path(cg, "freezer");
    return d ? d : brig_cgroup_v1_dir_path(cg, "");
}
