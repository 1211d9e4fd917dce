#define _GNU_SOURCE
#include "container/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "base/cleanup.h"
#include "process/hooks.h"
#include "rootfs/mounts.h"
#include "rootfs/plan.h"
#include "process/process.h"
#include "process/seccomp.h"
#include "spec/spec.h"
#include "process/sysctl.h"
#include "process/terminal.h"
#include "base/utils.h"

#define KILL_WAIT_MS 10000

/* ---- pidfds: signals that can't hit a recycled pid ---- */

/* Opens a pidfd for the container's init, or -1 (errno ESRCH) when the
 * recorded process is gone or the pid now belongs to someone else. */
static int init_pidfd(const struct brig_state *st)
{
    int fd = (int) syscall(SYS_pidfd_open, st->pid, 0);
    if (fd < 0)
        return -1;
    /* Checked after opening: from here on the pidfd pins the process. */
    if (!brig_state_init_alive(st)) {
        close(fd);
        errno = ESRCH;
        return -1;
    }
    return fd;
}

static bool wait_pidfd(int pidfd, int timeout_ms)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    return r > 0;
}

/* Pids whose pid namespace is the init's: every process of a container
 * that has a pid namespace of its own. */
static int signal_pid_namespace(pid_t init, int sig, brig_error_t *err)
{
    char path[64];
    struct stat init_ns, ns;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", init);
    if (stat(path, &init_ns) < 0)
        return brig_error_set(err, errno, "stat `%s`", path);
    cleanup_dir DIR *d = opendir("/proc");
    if (d == NULL)
        return brig_error_set(err, errno, "open /proc");
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
        if (stat(path, &ns) == 0 && ns.st_ino == init_ns.st_ino && ns.st_dev == init_ns.st_dev)
            kill((pid_t) pid, sig);
    }
    return 0;
}

/* ---- create ---- */

struct create_ctx {
    struct brig_state *state;
    const struct brig_spec *spec;
    const struct brig_cgroup *cgroup;
    struct brig_devices_program devices; /* attached after the clone */
};

/* The verifier's half millisecond runs while the init sets up its mounts:
 * the init asks for the runtime hooks (and so waits for us) before any
 * hook or process of the container runs, and this is done by then. Until
 * then only brig's own set-up runs in the cgroup. */
static int attach_devices(void *opaque, brig_error_t *err)
{
    struct create_ctx *ctx = opaque;
    if (ctx->devices.insns == NULL)
        return 0;
    return brig_cgroup_devices_attach(ctx->cgroup, &ctx->devices, err);
}

static int run_runtime_hooks(void *opaque, pid_t init_pid, char **state_json, brig_error_t *err)
{
    struct create_ctx *ctx = opaque;
    ctx->state->pid = init_pid;
    /* The environment is set up (lifecycle step 2) when these hooks run, so
     * their state says `created`, as the runtime-spec's status list has it
     * and crun does (runc says `creating`). createContainer gets the same. */
    if (brig_state_to_json(ctx->state, BRIG_STATUS_CREATED, false, state_json, err) < 0)
        return -1;
    if (brig_hooks_run(&ctx->spec->hooks.prestart, "prestart", *state_json, err) < 0)
        return -1;
    return brig_hooks_run(&ctx->spec->hooks.create_runtime, "createRuntime", *state_json, err);
}

/* A seccomp notify fd, for linux.seccomp.listenerPath, with the state. */
static int hand_to_listener(void *opaque, pid_t init_pid, int notify_fd, brig_error_t *err)
{
    struct create_ctx *ctx = opaque;
    const struct brig_seccomp *s = ctx->spec->linux_->seccomp;
    cleanup_free char *json = NULL;
    ctx->state->pid = init_pid;
    if (brig_state_to_json(ctx->state, BRIG_STATUS_CREATING, false, &json, err) < 0)
        return -1;
    return brig_seccomp_send_to_listener(s->listener_path, s->listener_metadata, notify_fd,
                                         init_pid, json, err);
}

static int resolve_paths(const struct brig_create_options *o, const struct brig_spec *spec,
                         char **bundle, char **rootfs, brig_error_t *err)
{
    const char *b = o->bundle ? o->bundle : ".";
    if ((*bundle = realpath(b, NULL)) == NULL)
        return brig_error_set(err, errno, "bundle `%s`", b);
    cleanup_free char *joined = NULL;
    const char *r = spec->root->path;
    if (r[0] != '/') {
        if (asprintf(&joined, "%s/%s", *bundle, r) < 0)
            return brig_error_set(err, ENOMEM, "rootfs");
        r = joined;
    }
    if ((*rootfs = realpath(r, NULL)) == NULL)
        return brig_error_set(err, errno, "rootfs `%s`", r);
    struct stat st;
    if (stat(*rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
        return brig_error_set(err, ENOTDIR, "rootfs `%s`", r);
    return 0;
}

static int copy_annotations(const struct brig_kv_list *from, struct brig_kv_list *to)
{
    if (from->n == 0)
        return 0;
    to->items = calloc(from->n, sizeof *to->items);
    if (to->items == NULL)
        return -1;
    for (size_t i = 0; i < from->n; i++, to->n++) {
        to->items[i].key = strdup(from->items[i].key);
        to->items[i].value = strdup(from->items[i].value);
        if (!to->items[i].key || !to->items[i].value) {
            to->n++;
            return -1;
        }
    }
    return 0;
}

int brig_container_new_state(const struct brig_create_options *o, const struct brig_spec *spec,
                     struct brig_state **out, brig_error_t *err)
{
    struct brig_state *st = calloc(1, sizeof *st);
    if (st == NULL)
        return brig_error_set(err, ENOMEM, "state");
    *out = st;
    st->id = strdup(o->id);
    st->created = brig_timestamp_now();
    st->owner = strdup("");
    st->cgroup_path = strdup("");
    const struct brig_namespace *pid_ns = brig_spec_namespace(spec, BRIG_NS_PID);
    st->own_pid_ns = pid_ns != NULL && pid_ns->path == NULL;
    st->post_hooks = (int) (spec->hooks.poststart.n + spec->hooks.poststop.n);
    if (!st->id || !st->created || !st->owner || !st->cgroup_path || copy_annotations(&spec->annotations, &st->annotations) < 0)
        return brig_error_set(err, ENOMEM, "state");
    return resolve_paths(o, spec, &st->bundle, &st->rootfs, err);
}


char *brig_container_own_cgroup(void)
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

/* A create or restore that failed: whatever reached the cgroup is killed
 * and the cgroup removed, best effort. */
void brig_container_undo_cgroup(struct brig_cgroup *cg)
{
    if (cg->path == NULL)
        return;
    brig_error_t ignored = NULL;
    if (cg->dir_fd >= 0)
        brig_cgroup_kill_all(cg, &ignored);
    brig_error_release(&ignored);
    brig_cgroup_destroy(cg->path, &ignored);
    brig_error_release(&ignored);
}

int brig_container_setup_cgroup(const struct brig_create_options *o, const struct brig_spec *spec,
                                struct brig_cgroup *cg, struct brig_devices_program *deferred,
                                brig_error_t *err)
{
    const struct brig_linux *l = spec->linux_;
    cleanup_free char *mine = brig_container_own_cgroup();
    cleanup_free char *relative = NULL;
    if (mine == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    if (brig_cgroup_path_resolve(l ? l->cgroups_path : NULL, o->id, mine, &relative, err) < 0)
        return -1;
    /* The devices the spec creates are allowed to the container, on top of
     * the rules in linux.resources.devices (what users of runc expect). */
    struct brig_resources res = { 0 };
    if (l && l->resources)
        res = *l->resources;
    size_t n_extra = l ? l->n_devices : 0;
    cleanup_free struct brig_device_rule *rules = calloc(res.n_devices + n_extra + 1, sizeof *rules);
    if (rules == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    if (res.n_devices)
        memcpy(rules, res.devices, res.n_devices * sizeof *rules);
    size_t n = res.n_devices;
    for (size_t i = 0; i < n_extra; i++) {
        const struct brig_device *d = &l->devices[i];
        if (d->type[0] == 'p')
            continue; /* a fifo is no device the cgroup guards */
        /* "u" (unbuffered) is a character device to the kernel. */
        rules[n++] = (struct brig_device_rule) {
            .allow = true, .type = (char *) (d->type[0] == 'b' ? "b" : "c"), .has_major = true,
            .major = d->major, .has_minor = true, .minor = d->minor, .access = (char *) "rwm",
        };
    }
    res.devices = rules;
    res.n_devices = n;
    if (deferred == NULL)
        return brig_cgroup_create(relative, &res, cg, err);
    /* Compiled (so checked) now, attached by the caller later. */
    if (brig_cgroup_devices_compile(&res, deferred, err) < 0)
        return -1;
    return brig_cgroup_create_without_devices(relative, &res, cg, err);
}

static int create_in_dir(const struct brig_create_options *o, const struct brig_spec *spec,
                         const char *config_path, const char *config_text, size_t config_len,
                         int dir_fd, pid_t *init_pid, struct brig_state **keep, brig_error_t *err)
{
    struct brig_state *st = NULL;
    int r = brig_container_new_state(o, spec, &st, err);
    /* Every decision about the root filesystem, checked before anything of
     * the container exists; the init only carries it out. */
    cleanup_rootfs_plan struct brig_rootfs_plan *rootfs_plan = NULL;
    if (r == 0 && brig_rootfs_plan_build(spec, st->rootfs, o->no_pivot, &rootfs_plan, err) < 0)
        r = brig_error_wrap(err, "%s", config_path);
    /* Writable by all (the dir is 0700, so only through the fd the init
     * holds): the init may have switched to an unprivileged or user-namespaced
     * uid by the time it opens it. fchmod because umask trims mkfifo's mode. */
    if (r == 0 && (mkfifoat(dir_fd, BRIG_EXEC_FIFO, 0622) < 0
                   || fchmodat(dir_fd, BRIG_EXEC_FIFO, 0622, 0) < 0))
        r = brig_error_set(err, errno, "create exec fifo");
    /* post* hooks and exec need the spec: keep it as it was created (the
     * very bytes parsed), rather than trusting the bundle to stay unchanged.
     * Written in place: the dir is new, and ours under its lock until
     * state.json appears. */
    if (r == 0)
        r = brig_write_file_new_at(dir_fd, BRIG_SAVED_CONFIG, config_text, config_len, 0600, err);
    if (r == 0 && brig_mounts_check_destinations(spec, st->rootfs, err) < 0)
        r = brig_error_wrap(err, "%s", config_path);
    struct brig_cgroup cg = { NULL, -1 };
    struct create_ctx ctx = { st, spec, &cg, { NULL, 0 } };
    if (r == 0 && !o->no_cgroup && brig_container_setup_cgroup(o, spec, &cg, &ctx.devices, err) < 0)
        r = -1;
    if (r == 0 && cg.path) {
        free(st->cgroup_path);
        if ((st->cgroup_path = strdup(cg.path)) == NULL)
            r = brig_error_set(err, ENOMEM, "cgroup");
    }
    /* Recorded before the init exists: if this runtime dies half-way,
     * `delete` still finds the cgroup (and with it any process) to remove. */
    if (r == 0)
        r = brig_state_write(dir_fd, st, err);
    struct brig_seccomp_filter *filter = NULL;
    const struct brig_seccomp *seccomp = spec->linux_ ? spec->linux_->seccomp : NULL;
    if (r == 0 && seccomp && brig_seccomp_compile(seccomp, &filter, err) < 0)
        r = brig_error_wrap(err, "%s", config_path);
    struct brig_init_config ic = {
        .spec = spec,
        .rootfs_plan = rootfs_plan,
        .id = o->id,
        .bundle = st ? st->bundle : NULL,
        .state_dir_fd = dir_fd,
        .no_new_keyring = o->no_new_keyring,
        .preserve_fds = o->preserve_fds,
        .listen_fds = o->listen_fds,
        .cgroup_fd = cg.dir_fd,
        .seccomp = filter,
        .after_clone = attach_devices,
        .runtime_hooks = run_runtime_hooks,
        .seccomp_listener = hand_to_listener,
        .ctx = &ctx,
    };
    int master = -1;
    if (r == 0)
        r = brig_process_spawn_init(&ic, init_pid, &master, err);
    if (r == 0 && master >= 0) {
        if (o->console_socket)
            r = brig_terminal_send_to_socket(o->console_socket, master, err);
        if (r == 0 && o->pty_master)
            *o->pty_master = brig_steal_fd(master);
        if (master >= 0)
            close(master);
        if (r < 0)
            kill(*init_pid, SIGKILL);
    }
    if (r == 0) {
        st->pid = *init_pid;
        r = brig_process_start_time(st->pid, &st->pid_start_time, err);
        if (r == 0)
            r = brig_state_write(dir_fd, st, err);
        if (r == 0 && o->pid_file)
            r = brig_write_pid_file(o->pid_file, st->pid, err);
        if (r < 0)
            kill(st->pid, SIGKILL);
    }
    if (r < 0)
        brig_container_undo_cgroup(&cg);
    brig_seccomp_free(filter);
    free(ctx.devices.insns);
    brig_cgroup_close(&cg);
    if (r == 0 && keep)
        *keep = brig_steal_ptr(st);
    brig_state_free(st);
    return r;
}

static int start_opened(int dir_fd, const struct brig_state *st, brig_error_t *warning,
                        brig_error_t *err);

/* With `warning` (run), the new container is started too, while its state
 * dir is still open and locked and its state in memory. */
static int create(const struct brig_create_options *o, pid_t *init_pid, bool *created,
                  brig_error_t *warning, brig_error_t *err)
{
    cleanup_free char *config_path = NULL;
    if (asprintf(&config_path, "%s/config.json", o->bundle ? o->bundle : ".") < 0)
        return brig_error_set(err, ENOMEM, "create");
    struct brig_spec *spec = NULL;
    cleanup_free char *config_text = NULL;
    size_t config_len = 0;
    if (brig_spec_load_text(config_path, &spec, &config_text, &config_len, err) < 0)
        return -1;
    struct brig_state *st = NULL;
    int r = 0;
    if (spec->process && o->terminal)
        spec->process->terminal = true;
    if (spec->process == NULL)
        r = brig_error_set(err, 0, "%s: missing process", config_path);
    else if (spec->process->terminal && !o->console_socket && !o->pty_master)
        r = brig_error_set(err, 0, "%s: process.terminal is true: give --console-socket to receive it",
                           config_path);
    else if (brig_sysctl_validate(spec, err) < 0)
        r = brig_error_wrap(err, "%s", config_path);
    else if (!spec->process->terminal && o->console_socket)
        r = brig_error_set(err, 0, "--console-socket needs process.terminal to be true in %s",
                           config_path);
    cleanup_close int root_fd = r < 0 ? -1 : brig_state_root_open(o->root, true, err);
    if (r == 0 && root_fd < 0)
        r = -1;
    if (r == 0) {
        cleanup_close int dir_fd = brig_state_dir_create(root_fd, o->id, err);
        if (dir_fd < 0) {
            r = -1;
        } else if (brig_container_profile_setup(o, spec, dir_fd, err) < 0
                   || create_in_dir(o, spec, config_path, config_text, config_len, dir_fd,
                                    init_pid, warning ? &st : NULL, err) < 0) {
            brig_error_t ignored = NULL;
            brig_container_profile_teardown(dir_fd, &ignored);
            brig_error_release(&ignored);
            brig_state_dir_remove(root_fd, dir_fd, o->id, &ignored);
            brig_error_release(&ignored);
            r = -1;
        } else if (st) {
            /* Created: a failing start leaves it for the caller to delete. */
            *created = true;
            r = start_opened(dir_fd, st, warning, err);
        }
    }
    brig_state_free(st);
    brig_spec_free(spec);
    return r;
}

int brig_container_create(const struct brig_create_options *o, pid_t *init_pid, brig_error_t *err)
{
    return create(o, init_pid, NULL, NULL, err);
}

int brig_container_create_started(const struct brig_create_options *o, pid_t *init_pid,
                                  bool *created, brig_error_t *warning, brig_error_t *err)
{
    *created = false;
    return create(o, init_pid, created, warning, err);
}

/* ---- the saved spec for post* hooks ---- */

int brig_container_load_spec(int dir_fd, struct brig_spec **spec, brig_error_t *err)
{
    cleanup_free char *json = NULL;
    size_t len = 0;
    *spec = NULL;
    if (brig_read_file_at(dir_fd, BRIG_SAVED_CONFIG, &json, &len, err) < 0) {
        if ((*err)->errnum == ENOENT) {
            brig_error_release(err);
            return 0;
        }
        return -1;
    }
    if (brig_spec_parse(json, len, "saved config.json", spec, err) < 0)
        return -1;
    /* A sandboxed container: exec gets the profile's process defaults. */
    if (brig_container_profile_reapply(dir_fd, *spec, err) < 0) {
        brig_spec_free(*spec);
        *spec = NULL;
        return -1;
    }
    return 0;
}

static int run_post_hooks(int dir_fd, const struct brig_state *st, enum brig_status status,
                          bool poststart, brig_error_t *warning)
{
    /* Most containers have no post* hooks: then the saved spec stays unread. */
    if (st->post_hooks == 0)
        return 0;
    struct brig_spec *spec = NULL;
    if (brig_container_load_spec(dir_fd, &spec, warning) < 0 || spec == NULL)
        return spec == NULL && *warning ? -1 : 0;
    cleanup_free char *json = NULL;
    int r = brig_state_to_json(st, status, false, &json, warning);
    const struct brig_hook_list *all = poststart ? &spec->hooks.poststart : &spec->hooks.poststop;
    /* A failing post* hook is a warning and the others still run: the
     * container's fate is already sealed either way. The first failure is
     * the one reported. */
    for (size_t i = 0; r == 0 && i < all->n; i++) {
        struct brig_hook_list one = { &all->items[i], 1 };
        brig_error_t failed = NULL;
        if (brig_hooks_run(&one, poststart ? "poststart" : "poststop", json, &failed) < 0) {
            if (*warning == NULL)
                *warning = brig_steal_ptr(failed);
            brig_error_release(&failed);
        }
    }
    brig_spec_free(spec);
    return *warning ? -1 : r;
}

/* ---- start ---- */

int brig_container_open(const char *root, const char *id, int *root_fd, struct brig_state **st,
                        brig_error_t *err)
{
    *root_fd = brig_state_root_open(root, false, err);
    if (*root_fd < 0) {
        if ((*err)->errnum == ENOENT)
            return brig_error_not_found(err, id);
        return -1;
    }
    int dir_fd = brig_state_dir_open(*root_fd, id, true, err);
    if (dir_fd < 0)
        return -1;
    if (brig_state_read(dir_fd, id, st, err) < 0) {
        close(dir_fd);
        return -1;
    }
    return dir_fd;
}

/* Reads the byte the init writes into the exec fifo, watching the init so a
 * dead one doesn't leave us waiting forever. */
static int release_init(int dir_fd, const struct brig_state *st, brig_error_t *err)
{
    /* The pidfd first: opening the fifo lets the init go, and a short-lived
     * process could be gone before we looked for it. */
    cleanup_close int pidfd = init_pidfd(st);
    if (pidfd < 0)
        return brig_error_set(err, 0, "container `%s`: its init has exited", st->id);
    cleanup_close int fifo = openat(dir_fd, BRIG_EXEC_FIFO, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fifo < 0)
        return brig_error_set(err, errno, "open exec fifo");
    for (;;) {
        struct pollfd p[2] = { { .fd = fifo, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return brig_error_set(err, errno, "wait for exec fifo");
        }
        if (p[0].revents & POLLIN) {
            char msg[4096];
            ssize_t n = read(fifo, msg, sizeof msg - 1);
            if (n > 0 && msg[0] == '0')
                break;
            if (n > 0 && msg[0] == 'E') {
                /* A startContainer hook failed; the init has given up. */
                fcntl(fifo, F_SETFL, 0); /* block: the rest comes before the init exits */
                ssize_t more = brig_read_all(fifo, msg + n, sizeof msg - 1 - (size_t) n);
                msg[n + (more > 0 ? more : 0)] = '\0';
                return brig_error_set(err, 0, "container `%s`: %s", st->id, msg + 1);
            }
        }
        if (p[1].revents & POLLIN)
            return brig_error_set(err, 0, "container `%s`: its init exited before start", st->id);
    }
    if (unlinkat(dir_fd, BRIG_EXEC_FIFO, 0) < 0)
        return brig_error_set(err, errno, "remove exec fifo");
    return 0;
}

static int start_opened(int dir_fd, const struct brig_state *st, brig_error_t *warning,
                        brig_error_t *err)
{
    if (release_init(dir_fd, st, err) < 0)
        return -1;
    if (run_post_hooks(dir_fd, st, BRIG_STATUS_RUNNING, true, warning) < 0)
        brig_error_wrap(warning, "container `%s`", st->id);
    return 0;
}

int brig_container_start(const char *root, const char *id, brig_error_t *warning, brig_error_t *err)
{
    cleanup_close int root_fd = -1;
    struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (dir_fd < 0)
        return -1;
    enum brig_status status = brig_state_status(dir_fd, st);
    int r;
    if (status != BRIG_STATUS_CREATED)
        r = brig_error_set(err, 0, "cannot start container `%s`: it is %s, not created", id,
                           brig_status_name(status));
    else
        r = start_opened(dir_fd, st, warning, err);
    brig_state_free(st);
    return r;
}

/* ---- kill ---- */

/* Every process of the container: through its cgroup when brig manages
 * one, else through its pid namespace. Returns 1 when that reached every
 * process (the init included), 0 when only the init is left to signal. */
static int signal_all(const struct brig_state *st, int sig, brig_error_t *err)
{
    if (*st->cgroup_path) {
        struct brig_cgroup cg;
        if (brig_cgroup_open(st->cgroup_path, &cg, err) < 0)
            return -1;
        int r = sig == SIGKILL ? brig_cgroup_kill_all(&cg, err)
                               : brig_cgroup_signal_all(&cg, sig, err);
        brig_cgroup_close(&cg);
        return r < 0 ? -1 : 1;
    }
    if (st->own_pid_ns && sig != SIGKILL)
        return signal_pid_namespace(st->pid, sig, err) < 0 ? -1 : 1;
    return 0;
}

static int signal_container(const struct brig_state *st, int sig, bool all, brig_error_t *err)
{
    cleanup_close int pidfd = init_pidfd(st);
    if (pidfd < 0)
        return brig_error_set(err, 0, "container `%s` is not running", st->id);
    int done = all ? signal_all(st, sig, err) : 0;
    if (done < 0)
        return -1;
    if (done)
        return 0;
    /* SIGKILL to the init of a pid namespace takes every process in it. */
    if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
        return brig_error_set(err, errno, "signal container `%s`", st->id);
    /* After a signal meant to end it, give the init a moment to be gone,
     * so `kill c1 KILL && delete c1` finds it stopped. */
    if (sig == SIGKILL)
        wait_pidfd(pidfd, 1000);
    else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)
        wait_pidfd(pidfd, 200);
    return 0;
}

int brig_container_kill(const char *root, const char *id, int sig, bool all, brig_error_t *err)
{
    cleanup_close int root_fd = -1;
    struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (dir_fd < 0)
        return -1;
    enum brig_status status = brig_state_status(dir_fd, st);
    int r;
    if (status == BRIG_STATUS_STOPPED || status == BRIG_STATUS_CREATING)
        r = brig_error_set(err, 0, "container `%s` is %s", id, brig_status_name(status));
    else
        r = signal_container(st, sig, all, err);
    brig_state_free(st);
    return r;
}

/* ---- delete ---- */

static int kill_and_wait(const struct brig_state *st, brig_error_t *err)
{
    cleanup_close int pidfd = init_pidfd(st);
    /* A frozen cgroup would hold SIGKILL back until thawed; cgroup.kill
     * works on frozen cgroups, and takes the processes outside the init's
     * pid namespace too. */
    if (*st->cgroup_path && signal_all(st, SIGKILL, err) < 0)
        return -1;
    if (pidfd < 0)
        return 0;
    if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
        return brig_error_set(err, errno, "kill container `%s`", st->id);
    if (!wait_pidfd(pidfd, KILL_WAIT_MS))
        return brig_error_set(err, ETIMEDOUT, "container `%s` did not die after SIGKILL", st->id);
    return 0;
}

int brig_container_delete(const char *root, const char *id, bool force, brig_error_t *warning,
                          brig_error_t *err)
{
    cleanup_close int root_fd = -1;
    struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (dir_fd < 0) {
        /* `delete --force` of what isn't there is done already. */
        if (force && (*err)->errnum == ENOENT) {
            brig_error_release(err);
            return 0;
        }
        return -1;
    }
    enum brig_status status = brig_state_status(dir_fd, st);
    int r = 0;
    if ((status == BRIG_STATUS_RUNNING || status == BRIG_STATUS_PAUSED) && !force)
        r = brig_error_set(err, 0, "cannot delete container `%s`: it is %s (use --force)", id,
                           brig_status_name(status));
    if (r == 0 && status != BRIG_STATUS_STOPPED && status != BRIG_STATUS_CREATING)
        r = kill_and_wait(st, err);
    /* A stopped init may leave processes behind in its cgroup (no pid
     * namespace of its own): they go too, or the cgroup can't be removed. */
    if (r == 0 && (status == BRIG_STATUS_STOPPED || status == BRIG_STATUS_CREATING)
        && *st->cgroup_path && signal_all(st, SIGKILL, err) < 0)
        r = -1;
    if (r == 0 && status != BRIG_STATUS_CREATING
        && run_post_hooks(dir_fd, st, BRIG_STATUS_STOPPED, false, warning) < 0)
        brig_error_wrap(warning, "container `%s`", id);
    if (r == 0 && *st->cgroup_path)
        r = brig_cgroup_destroy(st->cgroup_path, err);
    if (r == 0)
        r = brig_container_profile_teardown(dir_fd, err);
    if (r == 0)
        r = brig_state_dir_remove(root_fd, dir_fd, id, err);
    brig_state_free(st);
    return r;
}

/* ---- state, list ---- */

int brig_container_state(const char *root, const char *id, struct brig_state **st,
                         enum brig_status *status, brig_error_t *err)
{
    cleanup_close int root_fd = brig_state_root_open(root, false, err);
    if (root_fd < 0) {
        if ((*err)->errnum == ENOENT)
            return brig_error_not_found(err, id);
        return -1;
    }
    cleanup_close int dir_fd = brig_state_dir_open(root_fd, id, false, err);
    if (dir_fd < 0 || brig_state_read(dir_fd, id, st, err) < 0)
        return -1;
    *status = brig_state_status(dir_fd, *st);
    return 0;
}

/* list names the owner (the user who created the container, i.e. who owns
 * its state dir) where `state` leaves the field empty, as runc does. */
static void set_owner_from_dir(int root_fd, struct brig_state *st)
{
    struct stat sb;
    if (fstatat(root_fd, st->id, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    char user[256];
    if (brig_passwd_lookup("/etc/passwd", sb.st_uid, user, sizeof user, NULL, 0) < 0)
        snprintf(user, sizeof user, "#%u", sb.st_uid);
    char *name = strdup(user);
    if (name) {
        free(st->owner);
        st->owner = name;
    }
}

static int compare_entries(const void *a, const void *b)
{
    const struct brig_container_entry *x = a, *y = b;
    return strcmp(x->state->id, y->state->id);
}

int brig_container_list(const char *root, struct brig_container_entry **out, size_t *n,
                        brig_error_t *err)
{
    *out = NULL;
    *n = 0;
    cleanup_dir DIR *d = opendir(root);
    if (d == NULL)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open state root `%s`", root);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        struct brig_state *st = NULL;
        enum brig_status status;
        brig_error_t ignored = NULL;
        if (brig_container_state(root, de->d_name, &st, &status, &ignored) < 0) {
            brig_error_release(&ignored);
            continue;
        }
        if (*st->owner == '\0')
            set_owner_from_dir(dirfd(d), st);
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct brig_container_entry *bigger = realloc(*out, cap * sizeof **out);
            if (bigger == NULL) {
                brig_state_free(st);
                brig_container_list_free(*out, *n);
                *out = NULL;
                *n = 0;
                return brig_error_set(err, ENOMEM, "list");
            }
            *out = bigger;
        }
        (*out)[(*n)++] = (struct brig_container_entry) { st, status };
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, compare_entries);
    return 0;
}

void brig_container_list_free(struct brig_container_entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++)
        brig_state_free(entries[i].state);
    free(entries);
}
