#define _GNU_SOURCE
/* The shim's operations on a container's cgroup: pids, pause, resume,
 * checkpoint, update, stats, each through the library. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "container/checkpoint.h"
#include "container/container.h"
#include "spec/spec.h"
#include "tasks.h"

int shim_task_pids(struct shim_tasks *t, const char *id, pid_t **pids, size_t *n, brig_error_t *err)
{
    struct ctr *c = shim_find_ctr(t, id);
    if (c == NULL)
        return shim_fail(err, SHIM_E_NOT_FOUND, "container `%s`: not found", id ? id : "");
    *pids = NULL;
    *n = 0;
    if (!t->no_cgroup && !c->procs->exited)
        return brig_container_pids(t->root, id, pids, n, err) < 0 ? SHIM_E_UNKNOWN : 0;
    /* No cgroup of ours: the processes the shim knows. */
    size_t cap = 0;
    for (struct proc *p = c->procs; p; p = p->next)
        cap++;
    *pids = calloc(cap ? cap : 1, sizeof **pids);
    if (*pids == NULL)
        return brig_error_set(err, ENOMEM, "pids");
    for (struct proc *p = c->procs; p; p = p->next)
        if (p->pid > 0 && !p->exited)
            (*pids)[(*n)++] = p->pid;
    return 0;
}

static int running_init(struct shim_tasks *t, const char *id, const char *what, struct ctr **out,
                        brig_error_t *err)
{
    struct ctr *c = shim_find_ctr(t, id);
    if (c == NULL)
        return shim_fail(err, SHIM_E_NOT_FOUND, "container `%s`: not found", id ? id : "");
    if (c->procs->exited)
        return shim_fail(err, SHIM_E_PRECONDITION, "%s `%s`: it has exited", what, id);
    *out = c;
    return 0;
}

int shim_task_pause(struct shim_tasks *t, const char *id, brig_error_t *err)
{
    struct ctr *c;
    int r = running_init(t, id, "pause", &c, err);
    if (r < 0)
        return r;
    if (c->paused)
        return shim_fail(err, SHIM_E_PRECONDITION, "pause `%s`: it is paused already", id);
    if (brig_container_pause(t->root, id, err) < 0)
        return SHIM_E_UNKNOWN;
    c->paused = true;
    return 0;
}

int shim_task_resume(struct shim_tasks *t, const char *id, brig_error_t *err)
{
    struct ctr *c;
    int r = running_init(t, id, "resume", &c, err);
    if (r < 0)
        return r;
    if (!c->paused)
        return shim_fail(err, SHIM_E_PRECONDITION, "resume `%s`: it is not paused", id);
    if (brig_container_resume(t->root, id, err) < 0)
        return SHIM_E_UNKNOWN;
    c->paused = false;
    return 0;
}

int shim_task_checkpoint(struct shim_tasks *t, const char *id, const struct shim_checkpoint_opts *o,
                         brig_error_t *err)
{
    struct ctr *c;
    int r = running_init(t, id, "checkpoint", &c, err);
    if (r < 0)
        return r;
    if (o->image_path == NULL || *o->image_path == '\0')
        return shim_fail(err, SHIM_E_INVALID, "checkpoint `%s`: no image path", id);
    struct brig_checkpoint_options co = {
        .root = t->root,
        .id = id,
        .criu = { .image_path = o->image_path,
                  .work_path = o->work_path && *o->work_path ? o->work_path : NULL,
                  .tcp_established = o->open_tcp,
                  .ext_unix_sk = o->external_unix_sockets,
                  .file_locks = o->file_locks },
        .leave_running = !o->exit,
    };
    if (o->cgroups_mode && *o->cgroups_mode
        && brig_cg_mode_parse(o->cgroups_mode, &co.criu.cg_mode, err) < 0)
        return SHIM_E_INVALID;
    r = brig_container_checkpoint(&co, err);
    /* criu killed the processes (exit): their exits are reported now. */
    shim_reaper_poll(t->reaper);
    if (o->exit && r == 0) {
        c->state_gone = true;
        c->paused = false;
    }
    return r < 0 ? SHIM_E_UNKNOWN : 0;
}

int shim_task_update(struct shim_tasks *t, const char *id, const char *resources_json, size_t len,
                     brig_error_t *err)
{
    struct ctr *c;
    int r = running_init(t, id, "update", &c, err);
    if (r < 0)
        return r;
    struct brig_resources *res = NULL;
    if (brig_resources_parse(resources_json, len, "resources", &res, err) < 0)
        return SHIM_E_INVALID;
    r = brig_container_update(t->root, id, res, err) < 0 ? SHIM_E_UNKNOWN : 0;
    brig_resources_free(res);
    return r;
}

int shim_task_stats(struct shim_tasks *t, const char *id, struct shim_stats *out, brig_error_t *err)
{
    struct ctr *c;
    int r = running_init(t, id, "stats", &c, err);
    if (r < 0)
        return r;
    memset(out, 0, sizeof *out);
    if (brig_container_stats(t->root, id, &out->cg, err) < 0)
        return SHIM_E_UNKNOWN;
    /* brig enables only the controllers the resources ask for: without a
     * pids limit there is no pids.current, so count the cgroup's processes. */
    if (out->cg.pids_current == 0) {
        pid_t *pids = NULL;
        size_t n = 0;
        brig_error_t ignored = NULL;
        if (brig_container_pids(t->root, id, &pids, &n, &ignored) == 0)
            out->cg.pids_current = n;
        brig_error_release(&ignored);
        free(pids);
    }
    return 0;
}
