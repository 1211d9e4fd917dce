#define _GNU_SOURCE
/* What create and restore share: a new state dir, the handler's set-up,
 * the container's state, saved config and cgroup, and one undo for all of
 * it. Each step records what it made in struct provision, so the undo
 * knows exactly what to remove. */
#include "container/provision.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "process/process.h"

/* ---- the bundle's config ---- */

int brig_bundle_load(const char *dir, struct brig_bundle *b, brig_error_t *err)
{
    *b = (struct brig_bundle){ 0 };
    if (asprintf(&b->config_path, "%s/config.json", dir ? dir : ".") < 0) {
        b->config_path = NULL;
        return brig_error_set(err, ENOMEM, "config.json");
    }
    if (brig_spec_load_text(b->config_path, &b->spec, &b->text, &b->len, err) < 0) {
        brig_bundle_clear(b);
        return -1;
    }
    return 0;
}

void brig_bundle_clear(struct brig_bundle *b)
{
    free(b->config_path);
    brig_spec_free(b->spec);
    free(b->text);
    *b = (struct brig_bundle){ 0 };
}

/* ---- the new container's state ---- */

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

static int new_state(const struct brig_create_options *o, const struct brig_spec *spec,
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
    if (!st->id || !st->created || !st->owner || !st->cgroup_path
        || copy_annotations(&spec->annotations, &st->annotations) < 0)
        return brig_error_set(err, ENOMEM, "state");
    return resolve_paths(o, spec, &st->bundle, &st->rootfs, err);
}

/* The cgroup with the spec's limits and device rules, which p->res keeps
 * (the systemd driver writes them again once its unit is up). */
static int setup_cgroup(struct provision *p, const struct brig_create_options *o,
                        const struct brig_spec *spec, struct brig_devices_program *deferred,
                        brig_error_t *err)
{
    const struct brig_linux *l = spec->linux_;
    const char *cgroups_path = l ? l->cgroups_path : NULL;
    /* The devices the spec creates are allowed to the container, on top of
     * the rules in linux.resources.devices (what users of runc expect). */
    struct brig_resources *res = &p->res;
    if (l && l->resources)
        *res = *l->resources;
    size_t n_extra = l ? l->n_devices : 0;
    struct brig_device_rule *rules = calloc(res->n_devices + n_extra + 1, sizeof *rules);
    if (rules == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    p->rules = rules;
    if (res->n_devices)
        memcpy(rules, res->devices, res->n_devices * sizeof *rules);
    size_t n = res->n_devices;
    for (size_t i = 0; i < n_extra; i++) {
        const struct brig_device *d = &l->devices[i];
        if (d->type[0] == 'p')
            continue; /* a fifo is no device the cgroup guards */
        /* "u" (unbuffered) is a character device to the kernel. */
        rules[n++] = (struct brig_device_rule){
            .allow = true,
            .type = (char *) (d->type[0] == 'b' ? "b" : "c"),
            .has_major = true,
            .major = d->major,
            .has_minor = true,
            .minor = d->minor,
            .access = (char *) "rwm",
        };
    }
    res->devices = rules;
    res->n_devices = n;
    if (deferred && brig_cgroup_devices_compile(res, deferred, err) < 0)
        return -1; /* compiled (so checked) now, attached by the caller later */
    if (o->systemd_cgroup)
        return brig_cgroup_create_systemd(cgroups_path, o->id, res, &spec->annotations,
                                          deferred == NULL, &p->cgroup, err);
    if (deferred == NULL)
        return brig_cgroup_create(cgroups_path, o->id, res, &p->cgroup, err);
    return brig_cgroup_create_without_devices(cgroups_path, o->id, res, &p->cgroup, err);
}

/* ---- the steps, and their undo ---- */

int provision_begin(struct provision *p, const char *root, const char *id, brig_error_t *err)
{
    *p = (struct provision){ .root_fd = -1, .dir_fd = -1, .id = id, .cgroup = BRIG_CGROUP_INIT };
    if ((p->root_fd = brig_state_root_open(root, true, err)) < 0)
        return -1;
    if ((p->dir_fd = brig_state_dir_create(p->root_fd, id, err)) < 0)
        return -1;
    return 0;
}

int provision_handler(struct provision *p, const struct brig_handler *h, const void *data,
                      struct brig_spec *spec, brig_error_t *err)
{
    if (h == NULL)
        return 0;
    /* Recorded first: if we die during setup, delete finds whose it was. */
    if (brig_handler_record(p->dir_fd, BRIG_HANDLER_FILE, h, err) < 0)
        return -1;
    p->handler = h;
    if (h->setup && h->setup(data, p->dir_fd, spec, err) < 0)
        return brig_error_wrap(err, "%s", h->name);
    return 0;
}

int provision_state(struct provision *p, const struct brig_create_options *o,
                    const struct brig_spec *spec, brig_error_t *err)
{
    return p->state ? 0 : new_state(o, spec, &p->state, err);
}

/* The directories the cgroup's create is about to make, recorded first:
 * a runtime killed while making them leaves delete a list of them. */
static int record_planned(struct provision *p, const struct brig_spec *spec, brig_error_t *err)
{
    cleanup_free char *planned = NULL;
    const char *cgroups_path = spec->linux_ ? spec->linux_->cgroups_path : NULL;
    if (brig_cgroup_planned_path(cgroups_path, p->id, &planned, err) < 0)
        return -1;
    if (planned == NULL)
        return 0;
    return brig_write_file_new_at(p->dir_fd, BRIG_CGROUP_PLANNED, planned, strlen(planned), 0600,
                                  err);
}

int provision_container(struct provision *p, const struct brig_create_options *o,
                        const struct brig_bundle *b, struct brig_devices_program *deferred,
                        brig_error_t *err)
{
    const struct brig_spec *spec = b->spec;
    if (provision_state(p, o, spec, err) < 0)
        return -1;
    /* post* hooks and exec need the spec: keep it as it was created (the
     * very bytes parsed), rather than trusting the bundle to stay unchanged. */
    if (brig_write_file_new_at(p->dir_fd, BRIG_SAVED_CONFIG, b->text, b->len, 0600, err) < 0)
        return -1;
    if (!o->no_cgroup && !o->systemd_cgroup && record_planned(p, spec, err) < 0)
        return -1;
    if (!o->no_cgroup && setup_cgroup(p, o, spec, deferred, err) < 0)
        return -1;
    if (p->cgroup.path) {
        free(p->state->cgroup_path);
        if ((p->state->cgroup_path = strdup(p->cgroup.path)) == NULL)
            return brig_error_set(err, ENOMEM, "cgroup");
    }
    /* Recorded before the init exists: if this runtime dies half-way,
     * `delete` still finds the cgroup (and with it any process) to remove. */
    return brig_state_write(p->dir_fd, p->state, err);
}

int provision_started(struct provision *p, pid_t pid, const char *pid_file, brig_error_t *err)
{
    p->state->pid = pid;
    int r = brig_process_start_time(pid, &p->state->pid_start_time, err);
    if (r == 0)
        r = brig_state_write(p->dir_fd, p->state, err);
    if (r == 0 && p->handler && p->handler->spawned && p->handler->spawned(p->dir_fd, pid, err) < 0)
        r = brig_error_wrap(err, "%s", p->handler->name);
    if (r == 0 && pid_file)
        r = brig_write_pid_file(pid_file, pid, err);
    if (r < 0)
        kill(pid, SIGKILL);
    return r;
}

void provision_undo(struct provision *p)
{
    brig_error_t ignored = NULL;
    if (p->cgroup.path) {
        brig_cgroup_kill_all(&p->cgroup, &ignored);
        brig_error_release(&ignored);
        brig_cgroup_destroy(p->cgroup.path, &ignored);
        brig_error_release(&ignored);
        brig_cgroup_remove_parents_made(&p->cgroup);
    }
    if (p->handler && p->handler->teardown)
        p->handler->teardown(p->dir_fd, &ignored);
    brig_error_release(&ignored);
    if (p->dir_fd >= 0)
        brig_state_dir_remove(p->root_fd, p->dir_fd, p->id, &ignored);
    brig_error_release(&ignored);
}

void provision_end(struct provision *p)
{
    brig_state_free(p->state);
    p->state = NULL;
    brig_cgroup_close(&p->cgroup);
    free(p->rules);
    p->rules = NULL;
    brig_closep(&p->dir_fd);
    brig_closep(&p->root_fd);
}
