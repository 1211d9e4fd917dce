#define _GNU_SOURCE
/* The processes of a v1 cgroup: placing one in every hierarchy, freezing
 * through the freezer hierarchy, listing, killing, and removing the
 * directories once they are empty. */
#include "cgroup/v1_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

#define WAIT_MS 2000 /* for dying processes, before rmdir */
#define FREEZE_WAIT_MS 5000

/* The directory whose cgroup.procs lists the container: every process is
 * in every hierarchy, so any will do; the freezer's first, as pause and
 * kill act there. */
static const struct brig_cgroup_v1_dir *listing_dir(const struct brig_cgroup *cg)
{
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, "freezer");
    for (size_t i = 0; d == NULL && i < cg->v1->n; i++)
        if (cg->v1->dirs[i].fd >= 0)
            d = &cg->v1->dirs[i];
    return d;
}

int brig_cgroup_v1_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", (int) pid);
    for (size_t i = 0; i < cg->v1->n; i++) {
        const struct brig_cgroup_v1_dir *d = &cg->v1->dirs[i];
        if (d->fd < 0)
            return brig_error_set(err, ENOENT, "cgroup `%s`: gone", d->path);
        if (brig_cgroup_v1_write(d->fd, d->path, "cgroup.procs", buf, err) < 0)
            return brig_error_wrap(err, "add pid %d", (int) pid);
    }
    return 0;
}

int brig_cgroup_v1_add_pid_unfrozen(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    bool freezer = brig_cgroup_v1_dir(cg, "freezer") != NULL;
    char buf[32];
    snprintf(buf, sizeof buf, "%d", (int) pid);
    for (size_t i = 0; i < cg->v1->n; i++) {
        const struct brig_cgroup_v1_dir *d = &cg->v1->dirs[i];
        /* Where there is no freezer hierarchy, the v2 directory freezes. */
        bool freezes = freezer ? brig_cgroup_hierarchy_has(d->h, "freezer") : d->h->v2;
        if (d->fd >= 0 && !freezes
            && brig_cgroup_v1_write(d->fd, d->path, "cgroup.procs", buf, err) < 0)
            return brig_error_wrap(err, "add pid %d", (int) pid);
    }
    return 0;
}

/* cgroup.h's self-join: `tasks` of each v1 hierarchy; the v2 directory
 * of a hybrid host is the clone3 one. */
int brig_cgroup_v1_self_join_open(const struct brig_cgroup *cg, bool unfrozen,
                                  struct brig_cgroup_self_join *out, brig_error_t *err)
{
    bool freezer = brig_cgroup_v1_dir(cg, "freezer") != NULL;
    out->fds = calloc(cg->v1->n ? cg->v1->n : 1, sizeof *out->fds);
    if (out->fds == NULL)
        return brig_error_set(err, ENOMEM, "cgroup: join");
    for (size_t i = 0; i < cg->v1->n; i++) {
        const struct brig_cgroup_v1_dir *d = &cg->v1->dirs[i];
        bool freezes = freezer ? brig_cgroup_hierarchy_has(d->h, "freezer") : d->h->v2;
        if (d->fd < 0) {
            brig_cgroup_self_join_close(out);
            return brig_error_set(err, ENOENT, "cgroup `%s`: gone", d->path);
        }
        if (unfrozen && freezes)
            continue;
        if (d->h->v2) {
            out->clone_fd = d->fd;
            continue;
        }
        int fd = openat(d->fd, "tasks", O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            int saved = errno;
            brig_cgroup_self_join_close(out);
            return brig_error_set(err, saved, "cgroup: open `%s/tasks`", d->path);
        }
        out->fds[out->n++] = fd;
    }
    return 0;
}

/* ---- freezing ---- */

static int freezer_state(const struct brig_cgroup_v1_dir *d, char *out, size_t size)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file_at(d->fd, "freezer.state", &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return -1;
    }
    snprintf(out, size, "%.*s", (int) strcspn(text, "\n"), text);
    return 0;
}

/* A hybrid host without a freezer hierarchy freezes in its v2 tree. */
static int freeze_v2(const struct brig_cgroup_v1_dir *u, bool frozen, brig_error_t *err)
{
    struct brig_cgroup v2 = { .path = u->path, .dir_fd = u->fd, .backend = &brig_cgroup_v2 };
    return brig_cgroup_v2.freeze(&v2, frozen, err);
}

/* The kernel moves FREEZING to FROZEN once every task has stopped; a task
 * in an uninterruptible sleep can keep it there. As runc does, such a
 * freeze is undone and tried again, until the deadline. */
int brig_cgroup_v1_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err)
{
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, "freezer");
    if (d == NULL) {
        const struct brig_cgroup_v1_dir *u = brig_cgroup_v1_dir(cg, "");
        if (u)
            return freeze_v2(u, frozen, err);
        return brig_error_set(err, ENOENT,
                              "cgroup: no freezer hierarchy on this host (pause needs one)");
    }
    const char *want = frozen ? "FROZEN" : "THAWED";
    long long deadline = brig_cgroup_now_ms() + FREEZE_WAIT_MS;
    for (int attempt = 0;; attempt++) {
        if (brig_cgroup_v1_write(d->fd, d->path, "freezer.state", want, err) < 0)
            return -1;
        char state[32];
        for (int i = 0; i < 100; i++) {
            if (freezer_state(d, state, sizeof state) == 0 && strcmp(state, want) == 0)
                return 0;
            brig_cgroup_sleep_ms(attempt < 10 ? 1 : 10);
        }
        if (brig_cgroup_now_ms() > deadline)
            break;
        if (frozen) {
            brig_error_t ignored = NULL;
            brig_cgroup_v1_write(d->fd, d->path, "freezer.state", "THAWED", &ignored);
            brig_error_release(&ignored);
        }
    }
    if (frozen) {
        brig_error_t ignored = NULL;
        brig_cgroup_v1_write(d->fd, d->path, "freezer.state", "THAWED", &ignored);
        brig_error_release(&ignored);
    }
    return brig_error_set(err, ETIMEDOUT, "cgroup `%s`: processes did not %s within %d s", d->path,
                          frozen ? "freeze" : "thaw", FREEZE_WAIT_MS / 1000);
}

bool brig_cgroup_v1_is_frozen(const struct brig_cgroup *cg)
{
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, "freezer");
    if (d == NULL) {
        const struct brig_cgroup_v1_dir *u = brig_cgroup_v1_dir(cg, "");
        struct brig_cgroup v2 = { .path = u ? u->path : NULL,
                                  .dir_fd = u ? u->fd : -1,
                                  .backend = &brig_cgroup_v2 };
        return u && brig_cgroup_v2.is_frozen(&v2);
    }
    char state[32];
    if (freezer_state(d, state, sizeof state) < 0 || strcmp(state, "THAWED") == 0)
        return false;
    /* Frozen by itself, not by a frozen ancestor (then resume could not
     * thaw it): freezer.self_freezing, where the kernel has it. */
    int self = brig_cgroup_first_byte(d->fd, "freezer.self_freezing");
    return self < 0 || self == '1';
}

/* The first byte of `file` in the directory of one record line (line,
 * len), -1 when it has none. */
static int line_first_byte(const char *line, size_t len, const char *file)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%.*s/%s", (int) len, line, file) >= (int) sizeof path)
        return -1;
    return brig_cgroup_first_byte(AT_FDCWD, path);
}

bool brig_cgroup_v1_frozen_at(const char *lines)
{
    /* The freezer hierarchy's directory is the one with freezer.state;
     * a line that names it is tried first. */
    for (int pass = 0; pass < 2; pass++) {
        for (const char *l = lines; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
            size_t len = strcspn(l, "\n");
            bool named = memmem(l, len, "freezer", 7) != NULL;
            if (named != (pass == 0))
                continue;
            char path[PATH_MAX];
            cleanup_free char *text = NULL;
            brig_error_t ignored = NULL;
            if (snprintf(path, sizeof path, "%.*s/freezer.state", (int) len, l) >= (int) sizeof path
                || brig_read_file(path, &text, NULL, &ignored) < 0) {
                brig_error_release(&ignored);
                continue;
            }
            if (strncmp(text, "THAWED", 6) == 0)
                return false;
            int self = line_first_byte(l, len, "freezer.self_freezing");
            return self < 0 || self == '1';
        }
    }
    /* No freezer hierarchy: the hybrid host's v2 directory. */
    for (const char *l = lines; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
        int b = line_first_byte(l, strcspn(l, "\n"), "cgroup.freeze");
        if (b >= 0)
            return b == '1';
    }
    return false;
}

/* ---- listing and signals ---- */

int brig_cgroup_v1_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err)
{
    const struct brig_cgroup_v1_dir *d = listing_dir(cg);
    if (d == NULL)
        return brig_error_set(err, ENOENT, "cgroup: none of its directories is left");
    if (brig_cgroup_tree_pids(d->fd, out, n, err) < 0)
        return brig_error_wrap(err, "cgroup `%s`", d->path);
    return 0;
}

int brig_cgroup_v1_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err)
{
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    if (brig_cgroup_v1_pids(cg, &pids, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (kill(pids[i], sig) < 0 && errno != ESRCH)
            return brig_error_set(err, errno, "cgroup: signal %d to pid %d", sig, (int) pids[i]);
    return 0;
}

/* A hybrid host's v2 tree has cgroup.kill (Linux 5.14), which ends every
 * process, forking or not. Otherwise: frozen, they can't fork between the
 * listing and the kill. Either way a v1-frozen process holds SIGKILL back
 * until it thaws, so the freezer is thawed last (a paused container being
 * deleted included). */
int brig_cgroup_v1_kill_all(const struct brig_cgroup *cg, brig_error_t *err)
{
    const struct brig_cgroup_v1_dir *u = brig_cgroup_v1_dir(cg, "");
    int rc = u ? brig_cgroup_v1_write(u->fd, u->path, "cgroup.kill", "1", err) : -1;
    if (rc < 0) {
        if (u)
            brig_error_release(err);
        brig_error_t ignored = NULL;
        brig_cgroup_v1_freeze(cg, true, &ignored);
        brig_error_release(&ignored);
        rc = brig_cgroup_v1_signal_all(cg, SIGKILL, err);
    }
    const struct brig_cgroup_v1_dir *f = brig_cgroup_v1_dir(cg, "freezer");
    if (f) {
        brig_error_t ignored = NULL;
        brig_cgroup_v1_write(f->fd, f->path, "freezer.state", "THAWED", &ignored);
        brig_error_release(&ignored);
    }
    return rc;
}

/* ---- removal ---- */

static bool is_cgroupfs(const char *path)
{
    struct statfs sfs;
    return statfs(path, &sfs) == 0
           && (sfs.f_type == CGROUP_SUPER_MAGIC || sfs.f_type == CGROUP2_SUPER_MAGIC);
}

static int destroy_dir(const char *path, long long deadline, brig_error_t *err)
{
    cleanup_close int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "cgroup: open `%s`", path);
    if (!is_cgroupfs(path))
        return brig_error_set(err, 0, "cgroup: `%s` is not a cgroup directory", path);
    /* Most containers make no child cgroups: one rmdir, and the listing
     * only when it fails (exited processes also leave the cgroup a moment
     * after their parent sees them go: rmdir_patiently waits for that). */
    if (unlinkat(AT_FDCWD, path, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return 0;
    int copy = dup(dfd);
    if (copy < 0)
        return brig_error_set(err, errno, "cgroup: remove `%s`", path);
    if (brig_cgroup_remove_children(copy, path, deadline, err) < 0)
        return -1;
    if (brig_cgroup_rmdir_patiently(AT_FDCWD, path, deadline) < 0)
        return brig_error_set(err, errno == EBUSY ? EBUSY : errno, "cgroup: remove `%s`%s", path,
                              errno == EBUSY ? ": it still has processes" : "");
    return 0;
}

int brig_cgroup_v1_destroy(const char *path, brig_error_t *err)
{
    long long deadline = brig_cgroup_now_ms() + WAIT_MS;
    int rc = 0;
    /* Every hierarchy is tried, so one that fails leaves the others gone. */
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, "\n");
        cleanup_free char *dir = strndup(p, len);
        if (dir == NULL)
            return brig_error_set(err, ENOMEM, "cgroup");
        brig_error_t one = NULL;
        if (*dir && destroy_dir(dir, deadline, &one) < 0) {
            if (rc == 0)
                *err = brig_steal_ptr(one);
            rc = -1;
        }
        brig_error_release(&one);
        p += len + (p[len] == '\n');
    }
    return rc;
}
