#define _GNU_SOURCE
/* create: from a loaded bundle to an init blocked on the exec fifo, as
 * steps with one undo (container/provision.h): validate, a state dir, the
 * handler's set-up, state and cgroup, the init. */
#include "container/container.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "container/provision.h"
#include "process/hooks.h"
#include "process/process.h"
#include "process/seccomp.h"
#include "process/sysctl.h"
#include "process/terminal.h"
#include "rootfs/mounts.h"
#include "rootfs/plan.h"

struct create_ctx {
    struct brig_state *state;
    const struct brig_spec *spec;
    const struct brig_cgroup *cgroup;
    struct brig_devices_program devices; /* attached after the clone */
    const int *stdio;                    /* the caller's, or NULL */
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

static int place_init(void *opaque, pid_t init_pid, brig_error_t *err)
{
    struct create_ctx *ctx = opaque;
    return brig_cgroup_add_pid(ctx->cgroup, init_pid, err);
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
    /* With stdio of its own the container's output is where its hooks'
     * goes too, as if the runtime itself had been given that stdio. */
    const int *out = ctx->stdio ? ctx->stdio + 1 : NULL;
    if (brig_hooks_run_with_output(&ctx->spec->hooks.prestart, "prestart", *state_json, out, err)
        < 0)
        return -1;
    return brig_hooks_run_with_output(&ctx->spec->hooks.create_runtime, "createRuntime",
                                      *state_json, out, err);
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

/* What the library checks of a bundle before anything exists. */
static int validate(const struct brig_create_options *o, const struct brig_bundle *b,
                    brig_error_t *err)
{
    const struct brig_spec *spec = b->spec;
    if (spec->process == NULL)
        return brig_error_set(err, 0, "%s: missing process", b->config_path);
    if (spec->process->terminal && !o->console_socket && !o->pty_master)
        return brig_error_set(err, 0, "%s: process.terminal is true, and nobody takes the terminal",
                              b->config_path);
    if (!spec->process->terminal && o->console_socket)
        return brig_error_set(err, 0, "%s: a console socket needs process.terminal to be true",
                              b->config_path);
    if (brig_sysctl_validate(spec, err) < 0)
        return brig_error_wrap(err, "%s", b->config_path);
    return 0;
}

/* The pty master, to the console socket or to the caller. */
static int hand_over_master(const struct brig_create_options *o, int master, brig_error_t *err)
{
    cleanup_close int fd = master;
    if (o->console_socket && brig_terminal_send_to_socket(o->console_socket, fd, err) < 0)
        return -1;
    if (o->pty_master)
        *o->pty_master = brig_steal_fd(fd);
    return 0;
}

/* The init, cloned into the container's namespaces and cgroup, blocked on
 * the exec fifo. */
static int spawn_init(const struct brig_create_options *o, struct provision *p,
                      struct create_ctx *ctx, const struct brig_rootfs_plan *rootfs_plan,
                      struct brig_seccomp_filter *filter, int fifo, pid_t *init_pid,
                      brig_error_t *err)
{
    /* v1 hierarchies: the init enters them itself (cgroup.h), also from
     * a user namespace of its own: the kernel checks the write against
     * our credentials, which opened the files. */
    cleanup_self_join struct brig_cgroup_self_join self = BRIG_CGROUP_SELF_JOIN_INIT;
    int clone_fd = p->cgroup.path ? brig_cgroup_clone_fd(&p->cgroup) : -1;
    if (p->cgroup.path && clone_fd < 0
        && brig_cgroup_self_join_open(&p->cgroup, false, &self, err) < 0)
        return -1;
    bool joins = self.n > 0 || self.clone_fd >= 0;
    struct brig_init_config ic = {
        .spec = ctx->spec,
        .rootfs_plan = rootfs_plan,
        .id = o->id,
        .bundle = p->state->bundle,
        .state_dir_fd = p->dir_fd,
        .exec_fifo_fd = fifo,
        .no_new_keyring = o->no_new_keyring,
        .preserve_fds = o->preserve_fds,
        .listen_fds = o->listen_fds,
        .cgroup_fd = joins ? self.clone_fd : clone_fd,
        .place_in_cgroup = p->cgroup.path && !joins ? place_init : NULL,
        .self_join = joins ? &self : NULL,
        .stdio = o->stdio,
        .seccomp = filter,
        .after_clone = attach_devices,
        .runtime_hooks = run_runtime_hooks,
        .seccomp_listener = hand_to_listener,
        .ctx = ctx,
    };
    int master = -1;
    if (brig_process_spawn_init(&ic, init_pid, &master, err) < 0)
        return -1;
    if (master >= 0 && hand_over_master(o, master, err) < 0) {
        kill(*init_pid, SIGKILL);
        return -1;
    }
    return 0;
}

static int create_in_dir(const struct brig_create_options *o, struct provision *p, pid_t *init_pid,
                         brig_error_t *err)
{
    const struct brig_bundle *b = o->config;
    struct create_ctx ctx = { NULL, b->spec, &p->cgroup, { NULL, 0 }, o->stdio };
    /* Writable by all (the dir is 0700, so only through the fd the init
     * holds): the init may have switched to an unprivileged or user-namespaced
     * uid by the time it opens it. fchmod because umask trims mkfifo's mode. */
    if (mkfifoat(p->dir_fd, BRIG_EXEC_FIFO, 0622) < 0
        || fchmodat(p->dir_fd, BRIG_EXEC_FIFO, 0622, 0) < 0)
        return brig_error_set(err, errno, "create exec fifo");
    /* The init gets it as an O_PATH fd: it opens it for writing from
     * inside, where the state dir is out of reach. */
    cleanup_close int fifo = openat(p->dir_fd, BRIG_EXEC_FIFO, O_PATH | O_CLOEXEC);
    if (fifo < 0)
        return brig_error_set(err, errno, "open exec fifo");
    if (provision_state(p, o, b->spec, err) < 0)
        return -1;
    /* Every decision about the root filesystem, checked before anything of
     * the container exists (cgroup, init); the init only carries it out. */
    cleanup_rootfs_plan struct brig_rootfs_plan *rootfs_plan = NULL;
    if (brig_rootfs_plan_build(b->spec, p->state->rootfs, o->no_pivot, &rootfs_plan, err) < 0
        || brig_mounts_check_destinations(b->spec, p->state->rootfs, err) < 0)
        return brig_error_wrap(err, "%s", b->config_path);
    if (brig_spec_namespace(b->spec, BRIG_NS_USER)
        && brig_rootfs_open_sources(rootfs_plan, p->state->bundle, err) < 0)
        return -1;
    int r = provision_container(p, o, b, &ctx.devices, err);
    struct brig_seccomp_filter *filter = NULL;
    const struct brig_seccomp *seccomp = b->spec->linux_ ? b->spec->linux_->seccomp : NULL;
    if (r == 0 && seccomp && brig_seccomp_compile_cached(seccomp, p->root_fd, &filter, err) < 0)
        r = brig_error_wrap(err, "%s", b->config_path);
    ctx.state = p->state;
    if (r == 0)
        r = spawn_init(o, p, &ctx, rootfs_plan, filter, fifo, init_pid, err);
    if (r == 0)
        r = provision_started(p, *init_pid, o->pid_file, err);
    brig_seccomp_free(filter);
    free(ctx.devices.insns);
    return r;
}

/* With `warning` (run), the new container is started too, while its state
 * dir is still open and locked and its state in memory. */
static int create(const struct brig_create_options *o, pid_t *init_pid, bool *created,
                  brig_error_t *warning, brig_error_t *err)
{
    if (o->config == NULL || o->config->spec == NULL)
        return brig_error_set(err, EINVAL, "create `%s`: no config", o->id);
    if (o->config->spec->process && o->terminal)
        o->config->spec->process->terminal = true;
    if (validate(o, o->config, err) < 0)
        return -1;
    struct provision p;
    int r = provision_begin(&p, o->root, o->id, err);
    if (r == 0)
        r = provision_handler(&p, o->handler, o->handler_data, o->config->spec, err);
    if (r == 0)
        r = create_in_dir(o, &p, init_pid, err);
    if (r < 0 && p.dir_fd >= 0)
        provision_undo(&p);
    if (r == 0 && warning) {
        /* Created: a failing start leaves it for the caller to delete. */
        *created = true;
        r = brig_container_start_opened(p.dir_fd, p.state, warning, err);
    }
    provision_end(&p);
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
