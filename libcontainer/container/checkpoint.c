#define _GNU_SOURCE
#include "container/checkpoint.h"

#include <criu.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "base/cleanup.h"
#include "cgroup/cgroup.h"
#include "container/container.h"
#include "container/handler.h"
#include "rootfs/mounts.h"
#include "rootfs/plan.h"
#include "container/state.h"
#include "base/utils.h"

/* criu names an external network namespace by this key in the images;
 * restore hands the namespace to join under the same key. */
#define EXT_NETNS_KEY "extRootNetNS"

int brig_cg_mode_parse(const char *name, enum brig_cg_mode *out, brig_error_t *err)
{
    static const char *const names[] = { "soft", "full", "strict", "ignore" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum brig_cg_mode)(BRIG_CG_MODE_SOFT + i);
            return 0;
        }
    }
    return brig_error_set(err, 0, "unknown cgroup mode `%s` (soft, full, strict or ignore)", name);
}

static enum criu_cg_mode criu_cg_mode(enum brig_cg_mode m)
{
    switch (m) {
    case BRIG_CG_MODE_FULL:
        return CRIU_CG_MODE_FULL;
    case BRIG_CG_MODE_STRICT:
        return CRIU_CG_MODE_STRICT;
    case BRIG_CG_MODE_IGNORE:
        return CRIU_CG_MODE_IGNORE;
    default:
        return CRIU_CG_MODE_SOFT;
    }
}

/* mkdir -p: runc makes the image path's parents too. */
static int make_dirs(const char *path)
{
    cleanup_free char *copy = strdup(path);
    if (copy == NULL)
        return -1;
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(copy, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

static int open_dir(const char *path, bool create, const char *what, brig_error_t *err)
{
    if (create && make_dirs(path) < 0)
        return brig_error_set(err, errno, "%s `%s`", what, path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "%s `%s`", what, path);
    return fd;
}

int brig_criu_begin(struct brig_criu *c, const struct brig_criu_options *o, bool create_images,
                    const char *log_name, brig_error_t *err)
{
    *c = (struct brig_criu){ .image_fd = -1, .work_fd = -1, .log_name = log_name };
    if (o->image_path == NULL || *o->image_path == '\0')
        return brig_error_set(err, 0, "the image path is empty");
    if ((c->image_fd = open_dir(o->image_path, create_images, "image path", err)) < 0)
        return -1;
    c->work_path = o->work_path ? o->work_path : o->image_path;
    if (o->work_path && (c->work_fd = open_dir(o->work_path, true, "work path", err)) < 0)
        return -1;
    /* libcriu runs "criu" from PATH; root's PATH may lack /usr/sbin
     * (sudo, systemd units), so look there too. */
    static const char *const sbins[] = { "/usr/sbin", "/sbin", "/usr/local/sbin", NULL };
    cleanup_free char *criu = brig_find_program("criu", sbins);
    if (criu == NULL)
        return brig_error_set(
            err, ENOENT, "criu: not found in PATH nor /usr/sbin (install the Debian package criu)");
    if (criu_local_init_opts(&c->opts) < 0 || c->opts == NULL)
        return brig_error_set(err, ENOMEM, "libcriu: init options");
    if (criu_local_set_service_binary(c->opts, criu) < 0
        || criu_local_set_log_file(c->opts, log_name) < 0)
        return brig_error_set(err, ENOMEM, "libcriu: options");
    criu_local_set_images_dir_fd(c->opts, c->image_fd);
    if (c->work_fd >= 0)
        criu_local_set_work_dir_fd(c->opts, c->work_fd);
    criu_local_set_log_level(c->opts, 4);
    criu_local_set_tcp_established(c->opts, o->tcp_established);
    criu_local_set_ext_unix_sk(c->opts, o->ext_unix_sk);
    criu_local_set_shell_job(c->opts, o->shell_job);
    criu_local_set_file_locks(c->opts, o->file_locks);
    criu_local_set_auto_dedup(c->opts, o->auto_dedup);
    criu_local_set_manage_cgroups(c->opts, true);
    criu_local_set_manage_cgroups_mode(c->opts, criu_cg_mode(o->cg_mode));
    return 0;
}

void brig_criu_end(struct brig_criu *c)
{
    if (c->opts)
        criu_local_free_opts(c->opts);
    c->opts = NULL;
    brig_closep(&c->image_fd);
    brig_closep(&c->work_fd);
    c->image_fd = c->work_fd = -1;
}

static bool spec_mount_is_bind(const struct brig_mount *m)
{
    if (m->type && strcmp(m->type, "bind") == 0)
        return true;
    if (m->type && strcmp(m->type, "none") != 0)
        return false;
    struct brig_mount_flags mf;
    brig_error_t ignored = NULL;
    if (brig_mount_parse_options(&m->options, &mf, &ignored) < 0) {
        brig_error_release(&ignored);
        return false;
    }
    bool bind = (mf.flags & MS_BIND) != 0;
    brig_mount_flags_free(&mf);
    return bind;
}

int brig_criu_add_bind_mounts(struct brig_criu *c, const struct brig_spec *spec,
                              const char *sources_from, brig_error_t *err)
{
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct brig_mount *m = &spec->mounts[i];
        if (!spec_mount_is_bind(m) || m->source == NULL)
            continue;
        cleanup_free char *source = NULL;
        if (sources_from && m->source[0] != '/'
            && asprintf(&source, "%s/%s", sources_from, m->source) < 0)
            return brig_error_set(err, ENOMEM, "external mount `%s`", m->destination);
        const char *value = sources_from ? (source ? source : m->source) : m->destination;
        if (criu_local_add_ext_mount(c->opts, m->destination, value) < 0)
            return brig_error_set(err, ENOMEM, "external mount `%s`", m->destination);
    }
    return 0;
}

static int add_ext_mount(struct brig_criu *c, const char *key, const char *value, brig_error_t *err)
{
    if (criu_local_add_ext_mount(c->opts, (char *) key, (char *) value) < 0)
        return brig_error_set(err, ENOMEM, "external mount `%s`", key);
    return 0;
}

/* A masked path that is a file, as the running init sees it. */
static bool masked_file(pid_t pid, const char *path)
{
    char where[PATH_MAX];
    struct stat st;
    snprintf(where, sizeof where, "/proc/%d/root%s", pid, path);
    return stat(where, &st) == 0 && !S_ISDIR(st.st_mode);
}

int brig_criu_add_userns_mounts(struct brig_criu *c, const struct brig_spec *spec,
                                const char *rootfs, pid_t pid, brig_error_t *err)
{
    const struct brig_namespace *user = brig_spec_namespace(spec, BRIG_NS_USER);
    if (user == NULL || user->path != NULL)
        return 0;
    cleanup_rootfs_plan struct brig_rootfs_plan *plan = NULL;
    if (brig_rootfs_plan_build(spec, rootfs, false, &plan, err) < 0)
        return brig_error_wrap(err, "external mounts");
    for (size_t i = 0; i < plan->n_steps; i++) {
        const struct brig_rootfs_step *s = &plan->steps[i];
        if (s->kind == BRIG_STEP_DEVICE && s->node.from_host
            && add_ext_mount(c, s->path, s->path, err) < 0)
            return -1;
    }
    const struct brig_strv *masked = spec->linux_ ? &spec->linux_->masked_paths : NULL;
    for (size_t i = 0; masked && i < masked->n; i++) {
        const char *path = masked->v[i];
        if (pid > 0 && !masked_file(pid, path))
            continue;
        if (add_ext_mount(c, path, pid > 0 ? path : "/dev/null", err) < 0)
            return -1;
    }
    return 0;
}

/* criu's log lines look like "(00.012345) Error (criu/mount.c:12): what";
 * the first such line is the cause, later ones its consequences. */
static char *first_error_line(int dir_fd, const char *name)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file_at(dir_fd, name, &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return NULL;
    }
    char *found = NULL;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        /* criu probes for tun support at every start and logs its absence
         * as an error even when all goes well: not a cause. */
        if (found == NULL && strstr(line, "Error (") != NULL && strstr(line, "tun.c") == NULL)
            found = line;
        line = nl ? nl + 1 : NULL;
    }
    if (found == NULL)
        return NULL;
    char *start = strstr(found, "Error (");
    char *colon = strstr(start, "): ");
    return strdup(colon ? colon + 3 : start);
}

int brig_criu_failed(struct brig_criu *c, const char *what, int ret, brig_error_t *err)
{
    int dir_fd = c->work_fd >= 0 ? c->work_fd : c->image_fd;
    cleanup_free char *cause = first_error_line(dir_fd, c->log_name);
    if (cause)
        return brig_error_set(err, 0, "%s: criu: %s (log: %s/%s)", what, cause, c->work_path,
                              c->log_name);
    /* No log: criu could not even start, libcriu's return says why. */
    return brig_error_set(err, ret < 0 ? -ret : 0, "%s: criu failed (log: %s/%s)", what,
                          c->work_path, c->log_name);
}

/* ---- checkpoint ---- */

/* The mount id an open file sits on (the "mnt_id:" line of fdinfo), -1 if unknown. */
static long fd_mount_id(pid_t pid, int fd)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", pid, fd);
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file(path, &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return -1;
    }
    const char *line = strstr(text, "mnt_id:");
    return line ? strtol(line + 7, NULL, 10) : -1;
}

/* True when mount `id` is one of the process's mount namespace. */
static bool mount_id_visible(pid_t pid, long id)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mountinfo", pid);
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file(path, &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return false;
    }
    for (char *line = text; line && *line;) {
        if (strtol(line, NULL, 10) == id)
            return true;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return false;
}

/* What the init's stdio fd is, as descriptors.json records it: "pipe:[N]"
 * (restore hands ours over in its place), criu's "file[mnt:ino]" for a file
 * of the caller's namespace (/dev/null, a log file: criu can't reopen it
 * from inside the container, so it is marked external here and restore
 * hands ours over too), else the path, which criu restores by itself. */
static int describe_stdio(struct brig_criu *c, pid_t pid, int fd, char *out, size_t size,
                          brig_error_t *err)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, fd);
    ssize_t n = readlink(link, out, size - 1);
    out[n > 0 ? n : 0] = '\0';
    if (n <= 0 || out[0] != '/')
        return 0; /* closed, a pipe, a socket, an anon inode */
    struct stat st;
    long mnt_id = fd_mount_id(pid, fd);
    if (mnt_id < 0 || stat(link, &st) < 0 || mount_id_visible(pid, mnt_id))
        return 0;
    /* A terminal of the caller is --shell-job's business. */
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) != 1)
        return 0;
    snprintf(out, size, "file[%lx:%llx]", (unsigned long) mnt_id, (unsigned long long) st.st_ino);
    if (criu_local_add_external(c->opts, out) < 0)
        return brig_error_set(err, ENOMEM, "external file");
    return 0;
}

static int write_descriptors(struct brig_criu *c, pid_t pid, brig_error_t *err)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return brig_error_set(err, ENOMEM, BRIG_CRIU_DESCRIPTORS);
    yajl_gen_array_open(g);
    int r = 0;
    for (int fd = 0; r == 0 && fd < 3; fd++) {
        char what[PATH_MAX];
        r = describe_stdio(c, pid, fd, what, sizeof what, err);
        yajl_gen_string(g, (const unsigned char *) what, strlen(what));
    }
    yajl_gen_array_close(g);
    const unsigned char *buf;
    size_t len;
    if (r == 0 && yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
        r = brig_error_set(err, ENOMEM, BRIG_CRIU_DESCRIPTORS);
    if (r == 0)
        r = brig_write_file_atomic_at(c->image_fd, BRIG_CRIU_DESCRIPTORS, (const char *) buf, len,
                                      0600, err);
    yajl_gen_free(g);
    return r;
}

/* A network namespace the container joined (podman's, a pod's) is not the
 * container's to dump: criu records it as external, restore joins it again. */
static int add_external_netns(struct brig_criu *c, const struct brig_spec *spec, brig_error_t *err)
{
    const struct brig_namespace *ns = brig_spec_namespace(spec, BRIG_NS_NETWORK);
    if (ns == NULL || ns->path == NULL)
        return 0;
    struct stat st;
    if (stat(ns->path, &st) < 0)
        return brig_error_set(err, errno, "network namespace `%s`", ns->path);
    char key[96];
    snprintf(key, sizeof key, "net[%lu]:" EXT_NETNS_KEY, (unsigned long) st.st_ino);
    if (criu_local_add_external(c->opts, key) < 0)
        return brig_error_set(err, ENOMEM, "external network namespace");
    return 0;
}

static int check_parent(int image_fd, const char *parent, brig_error_t *err)
{
    if (parent[0] == '/')
        return brig_error_set(err, 0, "parent images `%s`: must be relative to the image path",
                              parent);
    struct stat st;
    if (fstatat(image_fd, parent, &st, 0) < 0)
        return brig_error_set(err, errno, "parent images `%s`", parent);
    if (!S_ISDIR(st.st_mode))
        return brig_error_set(err, ENOTDIR, "parent images `%s`", parent);
    return 0;
}

/* A handler's container: its name and its state go with the images, so
 * that restore makes the same kind of container again. */
static int export_handler(int dir_fd, int image_fd, brig_error_t *err)
{
    const struct brig_handler *h = NULL;
    if (brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, err) < 0)
        return -1;
    if (h == NULL)
        return 0;
    if (h->checkpoint && h->checkpoint(dir_fd, image_fd, err) < 0)
        return brig_error_wrap(err, "%s", h->name);
    return brig_handler_record(image_fd, BRIG_HANDLER_IMAGE_FILE, h, err);
}

static int dump(const struct brig_checkpoint_options *o, int dir_fd, const struct brig_state *st,
                const struct brig_spec *spec, brig_error_t *err)
{
    struct brig_criu c;
    int r = brig_criu_begin(&c, &o->criu, true, BRIG_CRIU_DUMP_LOG, err);
    if (r == 0) {
        criu_local_set_pid(c.opts, st->pid);
        criu_local_set_leave_running(c.opts, o->leave_running);
        if (criu_local_set_root(c.opts, st->rootfs) < 0)
            r = brig_error_set(err, ENOMEM, "criu root");
    }
    cleanup_cgroup struct brig_cgroup cg = BRIG_CGROUP_INIT;
    if (r == 0 && *st->cgroup_path && brig_cgroup_open(st->cgroup_path, &cg, err) < 0)
        r = -1;
    const char *freezer = cg.path ? brig_cgroup_freezer_dir(&cg) : NULL;
    if (r == 0 && freezer && criu_local_set_freeze_cgroup(c.opts, (char *) freezer) < 0)
        r = brig_error_set(err, ENOMEM, "criu freeze cgroup");
    if (r == 0)
        r = brig_criu_add_bind_mounts(&c, spec, NULL, err);
    if (r == 0)
        r = brig_criu_add_userns_mounts(&c, spec, st->rootfs, st->pid, err);
    if (r == 0)
        r = add_external_netns(&c, spec, err);
    if (r == 0 && o->parent_path) {
        r = check_parent(c.image_fd, o->parent_path, err);
        if (r == 0 && criu_local_set_parent_images(c.opts, o->parent_path) < 0)
            r = brig_error_set(err, ENOMEM, "criu parent images");
    }
    if (r == 0 && (o->pre_dump || o->parent_path))
        criu_local_set_track_mem(c.opts, true);
    if (r == 0 && !o->pre_dump)
        r = write_descriptors(&c, st->pid, err);
    if (r == 0 && !o->pre_dump)
        r = export_handler(dir_fd, c.image_fd, err);
    if (r == 0) {
        int ret = o->pre_dump ? criu_local_pre_dump(c.opts) : criu_local_dump(c.opts);
        if (ret != 0)
            r = brig_criu_failed(&c, o->pre_dump ? "pre-dump" : "dump", ret, err);
    }
    brig_criu_end(&c);
    return r;
}

int brig_container_checkpoint(const struct brig_checkpoint_options *o, brig_error_t *err)
{
    if (geteuid() != 0)
        return brig_error_set(err, EPERM, "checkpoint `%s`: criu needs root", o->id);
    cleanup_close int root_fd = -1;
    cleanup_state struct brig_state *st = NULL;
    int dir_fd = brig_container_open(o->root, o->id, &root_fd, &st, err);
    if (dir_fd < 0)
        return -1;
    enum brig_status status = brig_state_status(dir_fd, st);
    cleanup_spec struct brig_spec *spec = NULL;
    int r = 0;
    if (status != BRIG_STATUS_RUNNING && status != BRIG_STATUS_PAUSED)
        r = brig_error_set(err, 0, "container `%s` is %s, not running", o->id,
                           brig_status_name(status));
    if (r == 0 && brig_container_load_spec(dir_fd, &spec, err) < 0)
        r = -1;
    if (r == 0 && spec == NULL)
        r = brig_error_set(err, 0, "container `%s`: no saved config.json to checkpoint with",
                           o->id);
    /* The terminal's master lives outside the container (a console socket's
     * receiver): a restored init could not get it back. */
    if (r == 0 && spec->process && spec->process->terminal)
        r = brig_error_set(err, 0,
                           "container `%s` has a terminal (process.terminal): not supported",
                           o->id);
    if (r == 0)
        r = dump(o, dir_fd, st, spec, err);
    if (r < 0)
        brig_error_wrap(err, "checkpoint `%s`", o->id);
    /* The lock is per open file: delete takes its own after this one goes. */
    close(dir_fd);
    if (r == 0 && !o->leave_running && !o->pre_dump) {
        brig_error_t warning = NULL;
        r = brig_container_delete(o->root, o->id, true, &warning, err);
        brig_error_release(&warning);
    }
    return r;
}
