#define _GNU_SOURCE
#include "service.h"

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "events.pb-c.h"
#include "metrics.h"
#include "options.pb-c.h"
#include "spec/spec.h"
#include "task.h"
#include "task.pb-c.h"
#include "types.pb-c.h"

#define PROFILE_ANNOTATION "run.brig.profile"

/* An exit that happened while a Start was under way: published after the
 * start event, never before it. */
struct held_exit {
    char *id, *exec_id;
    pid_t pid;
    uint32_t status;
    struct timespec at;
    struct held_exit *next;
};

struct shim_service {
    struct shim_loop *loop;
    struct shim_publisher *pub;
    struct shim_tasks *tasks;
    bool starting;
    struct held_exit *held, **held_tail;
};

static int grpc_code(int rc)
{
    switch (rc) {
    case SHIM_E_NOT_FOUND:
        return TTRPC_NOT_FOUND;
    case SHIM_E_EXISTS:
        return TTRPC_ALREADY_EXISTS;
    case SHIM_E_PRECONDITION:
        return TTRPC_FAILED_PRECONDITION;
    case SHIM_E_INVALID:
        return TTRPC_INVALID_ARGUMENT;
    default:
        return TTRPC_UNKNOWN;
    }
}

/* Answers call with the core's error and releases it. */
static void reply_failure(struct ttrpc_call *call, int rc, brig_error_t *err)
{
    ttrpc_reply_error(call, grpc_code(rc), "%s", *err && (*err)->msg ? (*err)->msg : "failed");
    brig_error_release(err);
}

/* Answers a method whose response is Empty. */
static void finish(struct ttrpc_call *call, int rc, brig_error_t *err)
{
    if (rc < 0)
        reply_failure(call, rc, err);
    else
        ttrpc_reply(call, NULL);
}

static void reply_undecodable(struct ttrpc_call *call)
{
    ttrpc_reply_error(call, TTRPC_INTERNAL, "ttrpc: error unmarshalling payload of %s",
                      ttrpc_call_method(call));
}

/* Decodes the request into `req` or answers INTERNAL and returns. */
#define DECODE(type, fn, req)           \
    type *req = fn(NULL, len, payload); \
    if (!req) {                         \
        reply_undecodable(call);        \
        return;                         \
    }

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

/* A timestamp field: absent until the process has exited. */
static Shimpb__Timestamp *timestamp(Shimpb__Timestamp *ts, const struct timespec *t)
{
    if (t->tv_sec == 0 && t->tv_nsec == 0)
        return NULL;
    shimpb__timestamp__init(ts);
    ts->seconds = t->tv_sec;
    ts->nanos = t->tv_nsec;
    return ts;
}

static void publish_exit(struct shim_service *s, const char *id, const char *exec_id, pid_t pid,
                         uint32_t status, const struct timespec *at)
{
    Shimpb__Timestamp ts;
    Shimpb__TaskExit ev = SHIMPB__TASK_EXIT__INIT;
    ev.container_id = (char *) id;
    ev.id = (char *) (exec_id && *exec_id ? exec_id : id);
    ev.pid = pid;
    ev.exit_status = status;
    ev.exited_at = timestamp(&ts, at);
    shim_publish(s->pub, "/tasks/exit", "containerd.events.TaskExit", &ev.base);
}

static void task_exited(void *data, const struct shim_exit *e)
{
    struct shim_service *s = data;
    if (!s->starting) {
        publish_exit(s, e->id, e->exec_id, e->pid, e->status, &e->exited_at);
        return;
    }
    struct held_exit *h = calloc(1, sizeof(*h));
    if (!h || !(h->id = strdup(e->id)) || !(h->exec_id = strdup(e->exec_id ? e->exec_id : ""))) {
        if (h)
            free(h->id);
        free(h);
        publish_exit(s, e->id, e->exec_id, e->pid, e->status, &e->exited_at);
        return;
    }
    h->pid = e->pid;
    h->status = e->status;
    h->at = e->exited_at;
    *s->held_tail = h;
    s->held_tail = &h->next;
}

static void release_held(struct shim_service *s)
{
    s->starting = false;
    while (s->held) {
        struct held_exit *h = s->held;
        s->held = h->next;
        publish_exit(s, h->id, h->exec_id, h->pid, h->status, &h->at);
        free(h->id);
        free(h->exec_id);
        free(h);
    }
    s->held_tail = &s->held;
}

static void on_oom(void *data, const char *id)
{
    struct shim_service *s = data;
    Shimpb__TaskOOM ev = SHIMPB__TASK_OOM__INIT;
    ev.container_id = (char *) id;
    shim_publish(s->pub, "/tasks/oom", "containerd.events.TaskOOM", &ev.base);
}

/* ---- Create ---- */

/* What a runtime options file (CRI's ConfigPath, `ctr
 * --runtime-config-path`) says, in the TOML of containerd's runtime
 * options: `profile = "NAME"`, `SystemdCgroup = true` and `userns =
 * "host"`. */
struct runtime_config {
    char *profile;
    bool systemd_cgroup;
    bool userns_host; /* userns = "host" */
};

static void read_runtime_config(const char *path, struct runtime_config *out)
{
    cleanup_file FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        char name[64], value[8];
        if (out->profile == NULL && sscanf(line, " profile = \"%63[^\"]\"", name) == 1)
            out->profile = strdup(name);
        if (sscanf(line, " SystemdCgroup = %7[a-z]", value) == 1)
            out->systemd_cgroup = strcmp(value, "true") == 0;
        if (sscanf(line, " userns = \"%7[a-z]\"", value) == 1)
            out->userns_host = strcmp(value, "host") == 0;
    }
}

/* The runtime options of a create: runtimeoptions.v1.Options names a
 * config file (what containerd's CRI plugin sends a shim that is not
 * runc's); containerd.runc.v1.Options carries SystemdCgroup itself. */
static void create_options(const Shimpb__CreateTaskRequest *req, struct runtime_config *out)
{
    if (req->options == NULL)
        return;
    const ProtobufCBinaryData *v = &req->options->value;
    if (strcmp(req->options->type_url, "runtimeoptions.v1.Options") == 0) {
        Shimpb__RuntimeOptions *o = shimpb__runtime_options__unpack(NULL, v->len, v->data);
        if (o && *o->config_path)
            read_runtime_config(o->config_path, out);
        if (o)
            shimpb__runtime_options__free_unpacked(o, NULL);
    } else if (strcmp(req->options->type_url, "containerd.runc.v1.Options") == 0) {
        Shimpb__RuncOptions *o = shimpb__runc_options__unpack(NULL, v->len, v->data);
        if (o)
            out->systemd_cgroup = o->systemd_cgroup;
        if (o)
            shimpb__runc_options__free_unpacked(o, NULL);
    }
}

/* The profile the runtime options or the bundle's annotation ask for. */
static char *create_profile(const Shimpb__CreateTaskRequest *req, struct runtime_config *rc)
{
    if (rc->profile)
        return brig_steal_ptr(rc->profile);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/config.json", req->bundle);
    struct brig_spec *spec = NULL;
    brig_error_t err = NULL;
    if (brig_spec_load(path, &spec, &err) < 0) {
        brig_error_release(&err);
        return NULL;
    }
    const char *asked = brig_spec_annotation(spec, PROFILE_ANNOTATION);
    char *p = asked ? strdup(asked) : NULL;
    brig_spec_free(spec);
    return p;
}

static void h_create(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__CreateTaskRequest, shimpb__create_task_request__unpack, req);
    struct shim_mount *mounts = calloc(req->n_rootfs ? req->n_rootfs : 1, sizeof(*mounts));
    if (!mounts) {
        ttrpc_reply_error(call, TTRPC_RESOURCE_EXHAUSTED, "create: out of memory");
        shimpb__create_task_request__free_unpacked(req, NULL);
        return;
    }
    for (size_t i = 0; i < req->n_rootfs; i++) {
        mounts[i].type = req->rootfs[i]->type;
        mounts[i].source = req->rootfs[i]->source;
        mounts[i].target = req->rootfs[i]->target;
        mounts[i].options = (const char **) req->rootfs[i]->options;
        mounts[i].n_options = req->rootfs[i]->n_options;
    }
    struct runtime_config opts = { 0 };
    create_options(req, &opts);
    cleanup_free char *profile = create_profile(req, &opts);
    struct shim_create_opts o = {
        .id = req->id,
        .bundle = req->bundle,
        .io = { nonempty(req->stdin), nonempty(req->stdout), nonempty(req->stderr), req->terminal },
        .mounts = mounts,
        .n_mounts = req->n_rootfs,
        .profile = profile,
        .systemd_cgroup = opts.systemd_cgroup,
        .userns_host = opts.userns_host,
        .checkpoint = nonempty(req->checkpoint),
    };
    brig_error_t err = NULL;
    pid_t pid = 0;
    int rc = shim_task_create(s->tasks, &o, &pid, &err);
    free(mounts);
    if (rc < 0) {
        reply_failure(call, rc, &err);
        shimpb__create_task_request__free_unpacked(req, NULL);
        return;
    }
    Shimpb__CreateTaskResponse resp = SHIMPB__CREATE_TASK_RESPONSE__INIT;
    resp.pid = pid;
    ttrpc_reply(call, &resp.base);

    Shimpb__TaskIO io = SHIMPB__TASK_IO__INIT;
    io.stdin = req->stdin;
    io.stdout = req->stdout;
    io.stderr = req->stderr;
    io.terminal = req->terminal;
    Shimpb__TaskCreate ev = SHIMPB__TASK_CREATE__INIT;
    ev.container_id = req->id;
    ev.bundle = req->bundle;
    ev.n_rootfs = req->n_rootfs;
    ev.rootfs = req->rootfs;
    ev.io = &io;
    ev.pid = pid;
    shim_publish(s->pub, "/tasks/create", "containerd.events.TaskCreate", &ev.base);
    shimpb__create_task_request__free_unpacked(req, NULL);
}

/* ---- Start, Delete, State ---- */

static void h_start(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__StartRequest, shimpb__start_request__unpack, req);
    brig_error_t err = NULL;
    pid_t pid = 0;
    s->starting = true;
    int rc = shim_task_start(s->tasks, req->id, req->exec_id, &pid, &err);
    if (rc < 0) {
        reply_failure(call, rc, &err);
    } else {
        Shimpb__StartResponse resp = SHIMPB__START_RESPONSE__INIT;
        resp.pid = pid;
        ttrpc_reply(call, &resp.base);
        if (*req->exec_id) {
            Shimpb__TaskExecStarted ev = SHIMPB__TASK_EXEC_STARTED__INIT;
            ev.container_id = req->id;
            ev.exec_id = req->exec_id;
            ev.pid = pid;
            shim_publish(s->pub, "/tasks/exec-started", "containerd.events.TaskExecStarted",
                         &ev.base);
        } else {
            Shimpb__TaskStart ev = SHIMPB__TASK_START__INIT;
            ev.container_id = req->id;
            ev.pid = pid;
            shim_publish(s->pub, "/tasks/start", "containerd.events.TaskStart", &ev.base);
        }
    }
    release_held(s);
    shimpb__start_request__free_unpacked(req, NULL);
}

static void h_delete(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__DeleteRequest, shimpb__delete_request__unpack, req);
    brig_error_t err = NULL;
    struct shim_exit e = { 0 };
    int rc = shim_task_delete(s->tasks, req->id, req->exec_id, &e, &err);
    if (rc < 0) {
        reply_failure(call, rc, &err);
        shimpb__delete_request__free_unpacked(req, NULL);
        return;
    }
    Shimpb__Timestamp ts;
    Shimpb__DeleteResponse resp = SHIMPB__DELETE_RESPONSE__INIT;
    resp.pid = e.pid;
    resp.exit_status = e.status;
    resp.exited_at = timestamp(&ts, &e.exited_at);
    ttrpc_reply(call, &resp.base);
    Shimpb__TaskDelete ev = SHIMPB__TASK_DELETE__INIT;
    ev.container_id = req->id;
    ev.pid = e.pid;
    ev.exit_status = e.status;
    ev.exited_at = resp.exited_at;
    ev.id = req->exec_id;
    shim_publish(s->pub, "/tasks/delete", "containerd.events.TaskDelete", &ev.base);
    shimpb__delete_request__free_unpacked(req, NULL);
}

static void h_state(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__StateRequest, shimpb__state_request__unpack, req);
    brig_error_t err = NULL;
    struct shim_state st = { 0 };
    int rc = shim_task_state(s->tasks, req->id, req->exec_id, &st, &err);
    if (rc < 0) {
        reply_failure(call, rc, &err);
        shimpb__state_request__free_unpacked(req, NULL);
        return;
    }
    Shimpb__Timestamp ts;
    Shimpb__StateResponse resp = SHIMPB__STATE_RESPONSE__INIT;
    resp.id = *req->exec_id ? req->exec_id : req->id;
    resp.bundle = (char *) (st.bundle ? st.bundle : "");
    resp.pid = st.pid;
    resp.status = (Shimpb__TaskStatus) st.status;
    resp.stdin = (char *) (st.io.stdin_path ? st.io.stdin_path : "");
    resp.stdout = (char *) (st.io.stdout_path ? st.io.stdout_path : "");
    resp.stderr = (char *) (st.io.stderr_path ? st.io.stderr_path : "");
    resp.terminal = st.io.terminal;
    resp.exit_status = st.exit_status;
    resp.exited_at = timestamp(&ts, &st.exited_at);
    resp.exec_id = req->exec_id;
    ttrpc_reply(call, &resp.base);
    shimpb__state_request__free_unpacked(req, NULL);
}

/* ---- Wait ---- */

static void wait_done(void *data, const struct shim_exit *e)
{
    struct ttrpc_call *call = data;
    Shimpb__Timestamp ts;
    Shimpb__WaitResponse resp = SHIMPB__WAIT_RESPONSE__INIT;
    resp.exit_status = e->status;
    resp.exited_at = timestamp(&ts, &e->exited_at);
    ttrpc_reply(call, &resp.base);
}

static void h_wait(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__WaitRequest, shimpb__wait_request__unpack, req);
    brig_error_t err = NULL;
    int rc = shim_task_wait(s->tasks, req->id, req->exec_id, wait_done, call, &err);
    if (rc < 0)
        reply_failure(call, rc, &err);
    shimpb__wait_request__free_unpacked(req, NULL);
}

/* ---- Kill, Pids, Pause, Resume ---- */

static void h_kill(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__KillRequest, shimpb__kill_request__unpack, req);
    brig_error_t err = NULL;
    int rc = req->signal > INT_MAX ? SHIM_E_INVALID : 0;
    if (rc < 0)
        brig_error_set(&err, 0, "kill `%s`: no such signal %u", req->id, req->signal);
    else
        rc = shim_task_kill(s->tasks, req->id, req->exec_id, (int) req->signal, req->all, &err);
    finish(call, rc, &err);
    shimpb__kill_request__free_unpacked(req, NULL);
}

static void h_pids(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__PidsRequest, shimpb__pids_request__unpack, req);
    brig_error_t err = NULL;
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    int rc = shim_task_pids(s->tasks, req->id, &pids, &n, &err);
    shimpb__pids_request__free_unpacked(req, NULL);
    if (rc < 0) {
        reply_failure(call, rc, &err);
        return;
    }
    cleanup_free Shimpb__ProcessInfo *infos = calloc(n ? n : 1, sizeof(*infos));
    cleanup_free Shimpb__ProcessInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    if (!infos || !ptrs) {
        ttrpc_reply_error(call, TTRPC_RESOURCE_EXHAUSTED, "pids: out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        shimpb__process_info__init(&infos[i]);
        infos[i].pid = pids[i];
        ptrs[i] = &infos[i];
    }
    Shimpb__PidsResponse resp = SHIMPB__PIDS_RESPONSE__INIT;
    resp.n_processes = n;
    resp.processes = ptrs;
    ttrpc_reply(call, &resp.base);
}

static void h_pause(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__PauseRequest, shimpb__pause_request__unpack, req);
    brig_error_t err = NULL;
    int rc = shim_task_pause(s->tasks, req->id, &err);
    if (rc < 0) {
        reply_failure(call, rc, &err);
    } else {
        ttrpc_reply(call, NULL);
        Shimpb__TaskPaused ev = SHIMPB__TASK_PAUSED__INIT;
        ev.container_id = req->id;
        shim_publish(s->pub, "/tasks/paused", "containerd.events.TaskPaused", &ev.base);
    }
    shimpb__pause_request__free_unpacked(req, NULL);
}

static void h_resume(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__ResumeRequest, shimpb__resume_request__unpack, req);
    brig_error_t err = NULL;
    int rc = shim_task_resume(s->tasks, req->id, &err);
    if (rc < 0) {
        reply_failure(call, rc, &err);
    } else {
        ttrpc_reply(call, NULL);
        Shimpb__TaskResumed ev = SHIMPB__TASK_RESUMED__INIT;
        ev.container_id = req->id;
        shim_publish(s->pub, "/tasks/resumed", "containerd.events.TaskResumed", &ev.base);
    }
    shimpb__resume_request__free_unpacked(req, NULL);
}

#define CHECKPOINT_OPTIONS_TYPE "containerd.runc.v1.CheckpointOptions"

/* The request's options: runc's CheckpointOptions, or none (what ctr sends
 * for a runtime other than runc's). */
static int checkpoint_options(const Shimpb__CheckpointTaskRequest *req,
                              Shimpb__CheckpointOptions **out, brig_error_t *err)
{
    *out = NULL;
    const Shimpb__Any *any = req->options;
    if (any == NULL || (!*any->type_url && !any->value.len))
        return 0;
    const char *type = strrchr(any->type_url, '/');
    type = type ? type + 1 : any->type_url;
    if (strcmp(type, CHECKPOINT_OPTIONS_TYPE) != 0)
        return brig_error_set(err, 0, "checkpoint `%s`: options of type `%s`, want %s", req->id,
                              any->type_url, CHECKPOINT_OPTIONS_TYPE);
    *out = shimpb__checkpoint_options__unpack(NULL, any->value.len, any->value.data);
    if (*out == NULL)
        return brig_error_set(err, 0, "checkpoint `%s`: undecodable options", req->id);
    if ((*out)->n_empty_namespaces)
        return brig_error_set(err, 0, "checkpoint `%s`: empty_namespaces (`%s`): not supported",
                              req->id, (*out)->empty_namespaces[0]);
    return 0;
}

static void h_checkpoint(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__CheckpointTaskRequest, shimpb__checkpoint_task_request__unpack, req);
    brig_error_t err = NULL;
    Shimpb__CheckpointOptions *opts = NULL;
    int rc = checkpoint_options(req, &opts, &err) < 0 ? SHIM_E_INVALID : 0;
    if (rc == 0) {
        struct shim_checkpoint_opts o = { .image_path = nonempty(req->path) };
        if (opts) {
            if (!o.image_path)
                o.image_path = nonempty(opts->image_path);
            o.work_path = nonempty(opts->work_path);
            o.cgroups_mode = nonempty(opts->cgroups_mode);
            o.exit = opts->exit;
            o.open_tcp = opts->open_tcp;
            o.external_unix_sockets = opts->external_unix_sockets;
            o.file_locks = opts->file_locks;
        }
        rc = shim_task_checkpoint(s->tasks, req->id, &o, &err);
    }
    finish(call, rc, &err);
    if (opts)
        shimpb__checkpoint_options__free_unpacked(opts, NULL);
    shimpb__checkpoint_task_request__free_unpacked(req, NULL);
}

/* ---- Exec, ResizePty, CloseIO, Update ---- */

static void h_exec(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__ExecProcessRequest, shimpb__exec_process_request__unpack, req);
    brig_error_t err = NULL;
    int rc;
    if (!*req->exec_id) {
        rc = SHIM_E_INVALID;
        brig_error_set(&err, 0, "exec in `%s`: empty exec id", req->id);
    } else if (!req->spec || !req->spec->value.len) {
        rc = SHIM_E_INVALID;
        brig_error_set(&err, 0, "exec `%s` in `%s`: no process spec", req->exec_id, req->id);
    } else {
        struct shim_stdio io = { nonempty(req->stdin), nonempty(req->stdout), nonempty(req->stderr),
                                 req->terminal };
        rc = shim_task_exec(s->tasks, req->id, req->exec_id, (const char *) req->spec->value.data,
                            req->spec->value.len, &io, &err);
    }
    if (rc < 0) {
        reply_failure(call, rc, &err);
    } else {
        ttrpc_reply(call, NULL);
        Shimpb__TaskExecAdded ev = SHIMPB__TASK_EXEC_ADDED__INIT;
        ev.container_id = req->id;
        ev.exec_id = req->exec_id;
        shim_publish(s->pub, "/tasks/exec-added", "containerd.events.TaskExecAdded", &ev.base);
    }
    shimpb__exec_process_request__free_unpacked(req, NULL);
}

static void h_resize_pty(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__ResizePtyRequest, shimpb__resize_pty_request__unpack, req);
    brig_error_t err = NULL;
    int rc = shim_task_resize_pty(s->tasks, req->id, req->exec_id, req->width, req->height, &err);
    finish(call, rc, &err);
    shimpb__resize_pty_request__free_unpacked(req, NULL);
}

static void h_close_io(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__CloseIORequest, shimpb__close_iorequest__unpack, req);
    brig_error_t err = NULL;
    int rc = shim_task_close_io(s->tasks, req->id, req->exec_id, req->stdin, &err);
    finish(call, rc, &err);
    shimpb__close_iorequest__free_unpacked(req, NULL);
}

static void h_update(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__UpdateTaskRequest, shimpb__update_task_request__unpack, req);
    brig_error_t err = NULL;
    int rc;
    if (!req->resources || !req->resources->value.len) {
        rc = SHIM_E_INVALID;
        brig_error_set(&err, 0, "update `%s`: no resources", req->id);
    } else {
        rc = shim_task_update(s->tasks, req->id, (const char *) req->resources->value.data,
                              req->resources->value.len, &err);
    }
    finish(call, rc, &err);
    shimpb__update_task_request__free_unpacked(req, NULL);
}

/* ---- Stats ---- */

static void h_stats(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__StatsRequest, shimpb__stats_request__unpack, req);
    brig_error_t err = NULL;
    struct shim_stats st = { 0 };
    int rc = shim_task_stats(s->tasks, req->id, &st, &err);
    shimpb__stats_request__free_unpacked(req, NULL);
    if (rc < 0) {
        reply_failure(call, rc, &err);
        return;
    }
    Shimpb__Any any = SHIMPB__ANY__INIT;
    bool v1 = brig_cgroup_layout() != BRIG_CGROUP_LAYOUT_UNIFIED;
    if (shim_metrics_pack(&st.cg, v1, &any, &err) < 0) {
        brig_error_release(&err);
        ttrpc_reply_error(call, TTRPC_RESOURCE_EXHAUSTED, "stats: out of memory");
        return;
    }
    cleanup_free uint8_t *buf = any.value.data;
    Shimpb__StatsResponse resp = SHIMPB__STATS_RESPONSE__INIT;
    resp.stats = &any;
    ttrpc_reply(call, &resp.base);
}

/* ---- Connect, Shutdown ---- */

static void h_connect(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__ConnectRequest, shimpb__connect_request__unpack, req);
    brig_error_t err = NULL;
    struct shim_state st = { 0 };
    Shimpb__ConnectResponse resp = SHIMPB__CONNECT_RESPONSE__INIT;
    resp.shim_pid = getpid();
    if (shim_task_state(s->tasks, req->id, "", &st, &err) == 0)
        resp.task_pid = st.pid;
    brig_error_release(&err);
    resp.version = PACKAGE_VERSION;
    ttrpc_reply(call, &resp.base);
    shimpb__connect_request__free_unpacked(req, NULL);
}

static void stop_loop(struct shim_loop *loop, void *data)
{
    shim_loop_stop(loop);
}

static void h_shutdown(struct ttrpc_call *call, const uint8_t *payload, size_t len, void *data)
{
    struct shim_service *s = data;
    DECODE(Shimpb__ShutdownRequest, shimpb__shutdown_request__unpack, req);
    shimpb__shutdown_request__free_unpacked(req, NULL);
    ttrpc_reply(call, NULL);
    /* A shim still holding containers (a pod's other tasks) keeps serving. */
    if (shim_tasks_count(s->tasks) > 0)
        return;
    brig_error_t err = NULL;
    if (shim_loop_defer(s->loop, stop_loop, NULL, &err) < 0) {
        brig_error_release(&err);
        shim_loop_stop(s->loop);
    }
}

static const struct ttrpc_method methods[] = {
    { "State", h_state },
    { "Create", h_create },
    { "Start", h_start },
    { "Delete", h_delete },
    { "Pids", h_pids },
    { "Pause", h_pause },
    { "Resume", h_resume },
    { "Checkpoint", h_checkpoint },
    { "Kill", h_kill },
    { "Exec", h_exec },
    { "ResizePty", h_resize_pty },
    { "CloseIO", h_close_io },
    { "Update", h_update },
    { "Wait", h_wait },
    { "Stats", h_stats },
    { "Connect", h_connect },
    { "Shutdown", h_shutdown },
};

int shim_service_new(const struct shim_service_opts *o, struct shim_service **out,
                     brig_error_t *err)
{
    struct shim_service *s = calloc(1, sizeof(*s));
    if (!s)
        return brig_error_set(err, ENOMEM, "task service");
    s->loop = o->loop;
    s->pub = o->publisher;
    s->held_tail = &s->held;
    if (shim_tasks_new(o->loop, o->ns, o->runtime_root, task_exited, on_oom, s, &s->tasks, err)
        < 0) {
        free(s);
        return -1;
    }
    shim_tasks_set_cgroups(s->tasks, o->cgroups);
    size_t n = sizeof(methods) / sizeof(methods[0]);
    /* containerd 2.x may speak v3: the same methods and messages. */
    if (ttrpc_server_register(o->server, "containerd.task.v2.Task", methods, n, s, err) < 0
        || ttrpc_server_register(o->server, "containerd.task.v3.Task", methods, n, s, err) < 0) {
        shim_service_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void shim_service_free(struct shim_service *s)
{
    if (!s)
        return;
    release_held(s);
    shim_tasks_free(s->tasks);
    free(s);
}
