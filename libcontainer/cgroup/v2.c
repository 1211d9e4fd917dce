#define _GNU_SOURCE
/* The kernel-facing half of cgroup v2: creating the container's cgroup,
 * delegating controllers down to it, writing the plan, freezing, killing,
 * listing and removing. What to write is decided in cgroup_plan.c. */
#include "cgroup/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cgroup/devices_bpf.h"
#include "base/path.h"
#include "base/utils.h"

#define WAIT_MS 2000 /* for dying processes, before rmdir */
#define FREEZE_WAIT_MS 5000

static bool is_cgroup2(const char *path)
{
    struct statfs sfs;
    return statfs(path, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

const char *brig_cgroup_root(brig_error_t *err)
{
    /* Found once per process: a create asks several times. */
    static const char *found;
    if (found)
        return found;
    if (is_cgroup2("/sys/fs/cgroup"))
        return found = "/sys/fs/cgroup";
    /* Hybrid hosts: v1 controllers on /sys/fs/cgroup, v2 beside them. */
    if (is_cgroup2("/sys/fs/cgroup/unified"))
        return found = "/sys/fs/cgroup/unified";
    brig_error_set(err, ENOENT,
                   "no cgroup v2 hierarchy at /sys/fs/cgroup or "
                   "/sys/fs/cgroup/unified");
    return NULL;
}

/* True when `word` is one of the space-separated words of `list`. */
static bool has_word(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += len) {
        bool starts = p == list || p[-1] == ' ' || p[-1] == '\n';
        bool ends = p[len] == '\0' || p[len] == ' ' || p[len] == '\n';
        if (starts && ends)
            return true;
    }
    return false;
}

static int write_at(int dir_fd, const char *file, const char *value, brig_error_t *err)
{
    cleanup_close int fd = openat(dir_fd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || brig_write_all(fd, value, strlen(value)) < 0)
        return brig_error_set(err, errno, "cgroup: write `%s` = `%s`", file, value);
    return 0;
}

/* "1"/"0" of a key of cgroup.events ("populated", "frozen"); -1 when it
 * can't be read. */
static int events_value(int dir_fd, const char *key)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file_at(dir_fd, "cgroup.events", &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return -1;
    }
    size_t len = strlen(key);
    for (char *line = text; line && *line;) {
        if (strncmp(line, key, len) == 0 && line[len] == ' ')
            return atoi(line + len + 1);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

/* ---- creation -------------------------------------------------------------------- */

/* root + the first `depth` components of relative. */
static char *prefix_path(const char *root, const char *relative, size_t depth)
{
    if (depth == 0)
        return strdup(root);
    const char *end = relative;
    for (size_t d = 0; d < depth; d++)
        end = strchrnul(d == 0 ? end : end + 1, '/');
    char *out = NULL;
    if (asprintf(&out, "%s/%.*s", root, (int) (end - relative), relative) < 0)
        return NULL;
    return out;
}

static size_t path_depth(const char *relative)
{
    size_t depth = 1;
    for (const char *p = relative; *p; p++)
        depth += *p == '/';
    return depth;
}

/* Removes the directories of depths [from, depth] that make_dirs() made. */
static void undo_dirs(const char *root, const char *relative, size_t from, size_t depth)
{
    for (size_t d = depth; d >= from && d > 0; d--) {
        cleanup_free char *p = prefix_path(root, relative, d);
        if (p)
            rmdir(p);
    }
}

/* mkdir -p of the first `depth` levels; *first_new is the depth of the
 * first directory it created (depth + 1 when all existed). */
static int make_dirs(const char *root, const char *relative, size_t depth, size_t *first_new,
                     brig_error_t *err)
{
    *first_new = depth + 1;
    for (size_t d = 1; d <= depth; d++) {
        cleanup_free char *p = prefix_path(root, relative, d);
        if (p == NULL)
            return brig_error_set(err, ENOMEM, "cgroup");
        if (mkdir(p, 0755) == 0) {
            if (*first_new > d)
                *first_new = d;
            continue;
        }
        if (errno != EEXIST) {
            int saved = errno;
            if (*first_new <= depth)
                undo_dirs(root, relative, *first_new, d - 1);
            return brig_error_set(err, saved, "cgroup: create `%s`", p);
        }
    }
    return 0;
}

/* The controllers a new cgroup gets where its parents have them, asked for
 * or not, as runc gives them: their statistics (a pod's memory use) and a
 * later update's limits need their files. */
static const char *const usual[] = { "cpu", "io", "memory", "pids", NULL };

/* dir's file `name`, or NULL. */
static char *read_in(const char *dir, const char *name)
{
    char path[PATH_MAX];
    char *text = NULL;
    brig_error_t ignored = NULL;
    if ((size_t) snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return NULL;
    if (brig_read_file(path, &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return NULL;
    }
    return text;
}

/* True when every needed controller, and each usual one dir has, shows in
 * dir's cgroup.subtree_control: one read in the usual case, a second only
 * where a usual controller is not enabled (is it there at all?). */
static bool all_enabled(const char *dir, const char *const *needed)
{
    cleanup_free char *subtree = read_in(dir, "cgroup.subtree_control"), *controllers = NULL;
    if (subtree == NULL)
        return false;
    for (size_t i = 0; needed[i]; i++)
        if (!has_word(subtree, needed[i]))
            return false;
    for (size_t i = 0; usual[i]; i++) {
        if (has_word(subtree, usual[i]))
            continue;
        if (controllers == NULL && (controllers = read_in(dir, "cgroup.controllers")) == NULL)
            return false;
        if (has_word(controllers, usual[i]))
            return false;
    }
    return true;
}

/* "+name" appended to a cgroup.subtree_control line, after a blank if it
 * has words already. */
static void add_word(char *line, size_t size, const char *name)
{
    size_t used = strlen(line);
    snprintf(line + used, size - used, "%s+%s", used ? " " : "", name);
}

/* What of `usual` is available in dir and not yet enabled, enabled; best
 * effort (a cgroup with processes of its own can't delegate). */
static void enable_usual(int dfd, const char *controllers, const char *subtree)
{
    char line[64] = "";
    for (size_t i = 0; usual[i]; i++)
        if (has_word(controllers, usual[i]) && !has_word(subtree, usual[i]))
            add_word(line, sizeof line, usual[i]);
    cleanup_close int fd = *line ? openat(dfd, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC) : -1;
    if (fd >= 0)
        (void) brig_write_all(fd, line, strlen(line));
}

static int enable_in(const char *dir, const char *const *needed, const struct brig_resources *r,
                     bool fast, brig_error_t *err)
{
    /* Already enabled, the usual case past the first container: nothing to
     * lock or write. A write that shows here may still be making its
     * files in the children, but the container's own cgroup is made only
     * after this, and mkdir waits for that write to finish. */
    if (fast && all_enabled(dir, needed))
        return 0;
    cleanup_free char *controllers = NULL, *subtree = NULL;
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return brig_error_set(err, errno, "cgroup: open `%s`", dir);
    /* Another brig may be enabling the same controllers here right now:
     * the kernel shows them in cgroup.subtree_control before it has made
     * their files in every child, so seeing them is not enough. Its write
     * has returned by the time we hold the lock (released with the fd). */
    while (flock(dfd, LOCK_EX) < 0)
        if (errno != EINTR)
            return brig_error_set(err, errno, "cgroup: lock `%s`", dir);
    if (brig_read_file_at(dfd, "cgroup.controllers", &controllers, NULL, err) < 0
        || brig_read_file_at(dfd, "cgroup.subtree_control", &subtree, NULL, err) < 0)
        return brig_error_wrap(err, "cgroup `%s`", dir);
    char line[256] = "";
    for (size_t i = 0; needed[i]; i++) {
        if (!has_word(controllers, needed[i])) {
            char by[256];
            brig_cgroup_needed_by(r, needed[i], by, sizeof by);
            return brig_error_set(err, 0,
                                  "cgroup `%s`: controller `%s` is not available "
                                  "(needed by %s)",
                                  dir, needed[i], by);
        }
        if (!has_word(subtree, needed[i]))
            add_word(line, sizeof line, needed[i]);
    }
    if (fast)
        enable_usual(dfd, controllers, subtree);
    if (*line == '\0')
        return 0;
    cleanup_close int fd = openat(dfd, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
    if (fd >= 0 && brig_write_all(fd, line, strlen(line)) == 0)
        return 0;
    if (errno == EBUSY)
        return brig_error_set(err, EBUSY,
                              "cgroup `%s`: enable `%s` for its children: it has "
                              "processes of its own, and cgroup v2 only lets a cgroup without "
                              "processes (or the root) delegate controllers; use a cgroupsPath "
                              "elsewhere or move those processes to a leaf cgroup",
                              dir, line);
    return brig_error_set(err, errno, "cgroup `%s`: write `cgroup.subtree_control` = `%s`", dir,
                          line);
}

/* Delegates the controllers from the root down to the cgroup's parent, so
 * the cgroup itself has their files. `leaf_is_new`: the cgroup is made
 * after this returns (create), so a controller seen enabled needs no lock
 * (enable_in), and the usual ones come too where they can; otherwise
 * (update, or a cgroup that was there) every level is locked and
 * checked. */
static int enable_controllers(const char *root, const char *relative, const char *const *needed,
                              const struct brig_resources *r, bool leaf_is_new, brig_error_t *err)
{
    if (needed[0] == NULL && !leaf_is_new)
        return 0;
    size_t depth = path_depth(relative);
    for (size_t d = 0; d < depth; d++) {
        cleanup_free char *dir = prefix_path(root, relative, d);
        if (dir == NULL)
            return brig_error_set(err, ENOMEM, "cgroup");
        if (enable_in(dir, needed, r, leaf_is_new, err) < 0)
            return -1;
    }
    return 0;
}

static int write_plan(int dir_fd, const struct brig_cgroup_write *w, size_t n, brig_error_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (write_at(dir_fd, w[i].file, w[i].value, err) < 0)
            return -1;
    return 0;
}

int brig_cgroup_devices_compile(const struct brig_resources *r, struct brig_devices_program *out,
                                brig_error_t *err)
{
    out->insns = NULL;
    out->len = 0;
    return brig_ebpf_devices_compile(r->devices, r->n_devices, true, &out->insns, &out->len, err);
}

static int v2_devices_attach(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                             brig_error_t *err)
{
    if (brig_ebpf_devices_attach(cg->dir_fd, p->insns, p->len, err) < 0)
        return brig_error_wrap(err, "cgroup `%s`: device rules", cg->path);
    return 0;
}

static int apply_devices(const struct brig_cgroup *cg, const struct brig_resources *r,
                         brig_error_t *err)
{
    struct brig_devices_program p;
    if (brig_cgroup_devices_compile(r, &p, err) < 0)
        return -1;
    int rc = v2_devices_attach(cg, &p, err);
    free(p.insns);
    return rc;
}

/* The root-relative part of an absolute cgroup path. */
static const char *relative_of(const char *root, const char *path)
{
    size_t len = strlen(root);
    if (strncmp(path, root, len) != 0 || path[len] != '/')
        return NULL;
    return path + len + 1;
}

static int apply_plan(const struct brig_cgroup *cg, const struct brig_resources *r, bool enabled,
                      brig_error_t *err)
{
    const char *root = brig_cgroup_root(err);
    if (root == NULL)
        return -1;
    const char *relative = relative_of(root, cg->path);
    if (relative == NULL)
        return brig_error_set(err, 0, "cgroup `%s` is not under `%s`", cg->path, root);
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_plan(r, &w, &n, err) < 0)
        return -1;
    const char *needed[BRIG_CGROUP_MAX_CONTROLLERS + 1];
    brig_cgroup_plan_controllers(w, n, needed);
    int rc = enabled ? 0 : enable_controllers(root, relative, needed, r, false, err);
    if (rc == 0)
        rc = write_plan(cg->dir_fd, w, n, err);
    brig_cgroup_plan_free(w, n);
    return rc;
}

/* `update` may leave devices out: then the program attached at create
 * stays as it is. */
static int v2_apply(const struct brig_cgroup *cg, const struct brig_resources *r, brig_error_t *err)
{
    if (apply_plan(cg, r, false, err) < 0)
        return -1;
    if (r->n_devices > 0 && apply_devices(cg, r, err) < 0)
        return -1;
    return 0;
}

static int check_empty(const struct brig_cgroup *cg, brig_error_t *err)
{
    cleanup_free char *procs = NULL;
    if (brig_read_file_at(cg->dir_fd, "cgroup.procs", &procs, NULL, err) < 0)
        return brig_error_wrap(err, "cgroup `%s`", cg->path);
    if (*procs != '\0')
        return brig_error_set(err, EEXIST, "cgroup `%s` already has processes", cg->path);
    return 0;
}

static int setup_new(const struct brig_resources *r, struct brig_cgroup *cg, bool existed,
                     bool devices, brig_error_t *err)
{
    cg->dir_fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg->dir_fd < 0)
        return brig_error_set(err, errno, "cgroup: open `%s`", cg->path);
    if (existed && check_empty(cg, err) < 0)
        return -1;
    /* A cgroup made after its controllers were enabled has their files; one
     * that was there goes through the locked check. */
    if (apply_plan(cg, r, !existed, err) < 0)
        return -1;
    /* Always a program, even without rules: no rules means only the
     * default devices, as with runc. */
    return devices ? apply_devices(cg, r, err) : 0;
}

static int check_relative(const char *relative, brig_error_t *err)
{
    cleanup_free char *clean = relative ? brig_path_clean(relative) : NULL;
    if (relative && clean == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    if (clean == NULL || *relative == '/' || strcmp(clean, relative) != 0 || strcmp(clean, ".") == 0
        || strncmp(clean, "../", 3) == 0 || strcmp(clean, "..") == 0)
        return brig_error_set(err, 0, "cgroup: bad relative path `%s`", relative ? relative : "");
    return 0;
}

static int create_cgroup(const char *relative, const struct brig_resources *r, bool devices,
                         struct brig_cgroup *out, brig_error_t *err)
{
    *out = (struct brig_cgroup) BRIG_CGROUP_INIT;
    const char *root = brig_cgroup_root(err);
    if (root == NULL || check_relative(relative, err) < 0)
        return -1;
    /* Validate the whole section before anything is created. */
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_plan(r, &w, &n, err) < 0)
        return -1;
    const char *needed[BRIG_CGROUP_MAX_CONTROLLERS + 1];
    brig_cgroup_plan_controllers(w, n, needed);
    brig_cgroup_plan_free(w, n);
    cleanup_cgroup struct brig_cgroup cg = BRIG_CGROUP_INIT;
    if (asprintf(&cg.path, "%s/%s", root, relative) < 0) {
        cg.path = NULL; /* undefined after a failure */
        return brig_error_set(err, ENOMEM, "cgroup");
    }
    /* The parents first, with the controllers enabled down to them, then
     * the cgroup itself. */
    size_t depth = path_depth(relative);
    size_t first_new; /* of the parents; depth when all were there */
    if (make_dirs(root, relative, depth - 1, &first_new, err) < 0)
        return -1;
    bool made = false, existed = false;
    int rc = enable_controllers(root, relative, needed, r, true, err);
    if (rc == 0 && mkdir(cg.path, 0755) == 0)
        made = true;
    else if (rc == 0 && errno == EEXIST)
        existed = true;
    else if (rc == 0)
        rc = brig_error_set(err, errno, "cgroup: create `%s`", cg.path);
    if (rc == 0)
        rc = setup_new(r, &cg, existed, devices, err);
    if (rc < 0) {
        brig_cgroup_close(&cg); /* before its directory goes */
        /* What this create made: parents from first_new, and the cgroup. */
        undo_dirs(root, relative, first_new, made ? depth : depth - 1);
        return -1;
    }
    cg.backend = &brig_cgroup_v2;
    *out = cg;
    cg = (struct brig_cgroup) BRIG_CGROUP_INIT; /* *out owns it now */
    return 0;
}

/* cgroupsPath placed from the caller's own cgroup (brig_cgroup_path_resolve). */
static int create_for(const char *cgroups_path, const char *id, const struct brig_resources *r,
                      bool devices, struct brig_cgroup *out, brig_error_t *err)
{
    cleanup_free char *own = brig_cgroup_own();
    cleanup_free char *relative = NULL;
    if (own == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    if (brig_cgroup_path_resolve(cgroups_path, id, own, &relative, err) < 0)
        return -1;
    return create_cgroup(relative, r, devices, out, err);
}

static int v2_planned_path(const char *cgroups_path, const char *id, char **out, brig_error_t *err)
{
    cleanup_free char *own = brig_cgroup_own();
    cleanup_free char *relative = NULL;
    if (own == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    const char *root = brig_cgroup_root(err);
    if (root == NULL || brig_cgroup_path_resolve(cgroups_path, id, own, &relative, err) < 0
        || check_relative(relative, err) < 0)
        return -1;
    if (asprintf(out, "%s/%s", root, relative) < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "cgroup");
    }
    return 0;
}

static int v2_create(const char *cgroups_path, const char *id, const struct brig_resources *r,
                     struct brig_cgroup *out, brig_error_t *err)
{
    return create_for(cgroups_path, id, r, true, out, err);
}

static int v2_create_without_devices(const char *cgroups_path, const char *id,
                                     const struct brig_resources *r, struct brig_cgroup *out,
                                     brig_error_t *err)
{
    return create_for(cgroups_path, id, r, false, out, err);
}

static int v2_open(const char *path, struct brig_cgroup *out, brig_error_t *err)
{
    out->backend = &brig_cgroup_v2;
    out->path = strdup(path);
    if (out->path == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    out->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out->dir_fd < 0) {
        int saved = errno;
        free(out->path);
        out->path = NULL;
        return brig_error_set(err, saved, "cgroup: open `%s`", path);
    }
    return 0;
}

static int v2_clone_fd(const struct brig_cgroup *cg)
{
    return cg->dir_fd;
}

/* One path, for the one hierarchy (brig_cgroup_sub_parse has refused
 * more than one without a controller). */
static int v2_open_sub(const struct brig_cgroup *cg, const struct brig_cgroup_sub *subs, size_t n,
                       struct brig_cgroup *out, brig_error_t *err)
{
    if (n != 1 || subs[0].controller)
        return brig_error_set(err, 0,
                              "sub-cgroup `%s`: a `<controller>:` prefix selects a cgroup v1 "
                              "hierarchy, and this container's cgroup is v2 (give the path alone)",
                              n ? subs[0].arg : "");
    cleanup_free char *path = NULL;
    if (asprintf(&path, "%s/%s", cg->path, subs[0].path) < 0)
        return brig_error_set(err, ENOMEM, "sub-cgroup `%s`", subs[0].arg);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "create sub-cgroup `%s`", path);
    return v2_open(path, out, err);
}

/* ---- processes ------------------------------------------------------------------- */

static int v2_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", (int) pid);
    if (write_at(cg->dir_fd, "cgroup.procs", buf, err) < 0)
        return brig_error_wrap(err, "cgroup `%s`: add pid %d", cg->path, (int) pid);
    return 0;
}

static int v2_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err)
{
    if (write_at(cg->dir_fd, "cgroup.freeze", frozen ? "1" : "0", err) < 0) {
        if ((*err)->errnum == ENOENT)
            return brig_error_set(err, ENOENT,
                                  "cgroup `%s`: no cgroup.freeze (freezing needs "
                                  "Linux 5.2 or later)",
                                  cg->path);
        return brig_error_wrap(err, "cgroup `%s`", cg->path);
    }
    /* The write only starts freezing; processes in the middle of a system
     * call stop when they leave it, and cgroup.events says when all did. */
    long long deadline = brig_cgroup_now_ms() + FREEZE_WAIT_MS;
    while (events_value(cg->dir_fd, "frozen") != (frozen ? 1 : 0)) {
        if (brig_cgroup_now_ms() > deadline) {
            if (frozen) {
                brig_error_t ignored = NULL;
                write_at(cg->dir_fd, "cgroup.freeze", "0", &ignored);
                brig_error_release(&ignored);
            }
            return brig_error_set(err, ETIMEDOUT,
                                  "cgroup `%s`: processes did not %s within "
                                  "%d s",
                                  cg->path, frozen ? "freeze" : "thaw", FREEZE_WAIT_MS / 1000);
        }
        brig_cgroup_sleep_ms(10);
    }
    return 0;
}

static bool v2_is_frozen(const struct brig_cgroup *cg)
{
    return brig_cgroup_first_byte(cg->dir_fd, "cgroup.freeze") == '1';
}

static int v2_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err)
{
    if (brig_cgroup_tree_pids(cg->dir_fd, out, n, err) < 0)
        return brig_error_wrap(err, "cgroup `%s`", cg->path);
    return 0;
}

static int v2_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err)
{
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    if (v2_pids(cg, &pids, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (kill(pids[i], sig) < 0 && errno != ESRCH)
            return brig_error_set(err, errno, "cgroup `%s`: signal %d to pid %d", cg->path, sig,
                                  (int) pids[i]);
    return 0;
}

/* Without cgroup.kill, processes could fork between listing and killing:
 * frozen, they can't, and SIGKILL still ends frozen processes in v2. */
static int kill_by_listing(const struct brig_cgroup *cg, brig_error_t *err)
{
    brig_error_t ignored = NULL;
    bool froze = v2_freeze(cg, true, &ignored) == 0;
    brig_error_release(&ignored);
    int rc = v2_signal_all(cg, SIGKILL, err);
    if (froze) {
        write_at(cg->dir_fd, "cgroup.freeze", "0", &ignored);
        brig_error_release(&ignored);
    }
    return rc;
}

static int v2_kill_all(const struct brig_cgroup *cg, brig_error_t *err)
{
    if (write_at(cg->dir_fd, "cgroup.kill", "1", err) == 0)
        return 0;
    if ((*err)->errnum != ENOENT)
        return brig_error_wrap(err, "cgroup `%s`", cg->path);
    brig_error_release(err);
    return kill_by_listing(cg, err);
}

/* ---- removal --------------------------------------------------------------------- */

static int v2_destroy(const char *path, brig_error_t *err)
{
    cleanup_close int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT)
            return 0;
        return brig_error_set(err, errno, "cgroup: open `%s`", path);
    }
    if (!is_cgroup2(path))
        return brig_error_set(err, 0, "cgroup: `%s` is not a cgroup v2 directory", path);
    long long deadline = brig_cgroup_now_ms() + WAIT_MS;
    while (events_value(dfd, "populated") == 1) {
        if (brig_cgroup_now_ms() > deadline)
            return brig_error_set(err, EBUSY, "cgroup `%s`: still has processes after %d s", path,
                                  WAIT_MS / 1000);
        brig_cgroup_sleep_ms(10);
    }
    /* Most containers make no child cgroups: one rmdir, and the listing
     * only when that finds some. */
    if (unlinkat(AT_FDCWD, path, AT_REMOVEDIR) < 0 && errno != ENOENT) {
        int copy = dup(dfd);
        if (copy < 0)
            return brig_error_set(err, errno, "cgroup: remove `%s`", path);
        if (brig_cgroup_remove_children(copy, path, deadline, err) < 0)
            return -1;
        if (brig_cgroup_rmdir_patiently(AT_FDCWD, path, deadline) < 0)
            return brig_error_set(err, errno, "cgroup: remove `%s`", path);
    }
    return 0;
}

/* ---- the backend ---- */

const struct brig_cgroup_backend brig_cgroup_v2 = {
    .name = "v2",
    .create = v2_create,
    .create_without_devices = v2_create_without_devices,
    .open = v2_open,
    .apply = v2_apply,
    .devices_attach = v2_devices_attach,
    .add_pid = v2_add_pid,
    .freeze = v2_freeze,
    .is_frozen = v2_is_frozen,
    .pids = v2_pids,
    .signal_all = v2_signal_all,
    .kill_all = v2_kill_all,
    .destroy = v2_destroy,
    .planned_path = v2_planned_path,
    .stats = brig_cgroup_v2_stats,
    .oom_watch = brig_cgroup_v2_oom_watch,
    .oom_kills = brig_cgroup_v2_oom_kills,
    .clone_fd = v2_clone_fd,
    .open_sub = v2_open_sub,
};
