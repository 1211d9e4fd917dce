#define _GNU_SOURCE
/* The systemd cgroup driver (--systemd-cgroup): the container's cgroup is
 * a transient unit of systemd's, as runc and crun make it.
 *
 * create makes the unit's cgroup directory with the host's cgroupfs
 * backend (v2, or the v1 hierarchies) where systemd will put the unit,
 * and writes the limits there, so nothing is left to chance before the
 * init exists. The first process placed (the init; restore's criu) starts
 * the unit: StartTransientUnit with that pid, Delegate=yes and the
 * properties systemd can express, waiting for the job. systemd then
 * rewrites the files it owns; the resources are written again, as runc
 * does, for what it cannot express. From there every operation is the
 * cgroupfs backend's on the same directory, but update (SetUnitProperties
 * too) and destroy (StopUnit, and ResetFailedUnit for a unit that failed).
 *
 * The bus calls are brig-systemd's (src/systemd/), linked with
 * libsystemd's sd-bus, which the static brig can't carry; brig runs it
 * with the unit and the properties as arguments.
 *
 * The state file records "systemd:UNIT PATH" (or "systemd-user:"), PATH
 * the cgroupfs backend's own record; a unit name has no blank. */
#include "cgroup/backend.h"
#include "cgroup/systemd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "selfexe/selfexe.h"

#ifndef BRIG_SYSTEMD_PATH
#define BRIG_SYSTEMD_PATH NULL
#endif

#define RECORD_SYSTEM "systemd:"
#define RECORD_USER "systemd-user:"

int brig_systemd_helper(char **out, brig_error_t *err)
{
    return brig_locate_program("brig-systemd", "BRIG_SYSTEMD", BRIG_SYSTEMD_PATH, out, err);
}

/* Runs brig-systemd with args; its last line on stderr is the error. */
static int run_helper(const char *const *args, size_t n_args, brig_error_t *err)
{
    cleanup_free char *helper = NULL;
    if (brig_systemd_helper(&helper, err) < 0)
        return -1;
    cleanup_free const char **argv = calloc(n_args + 2, sizeof *argv);
    int pipefd[2];
    if (argv == NULL)
        return brig_error_set(err, ENOMEM, "brig-systemd");
    argv[0] = helper;
    memcpy(argv + 1, args, n_args * sizeof *args);
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, "brig-systemd: pipe");
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(pipefd[1], 1) < 0 || dup2(pipefd[1], 2) < 0)
            _exit(127);
        brig_close_fds_except(3, NULL, 0);
        execv(helper, (char *const *) argv);
        dprintf(2, "exec `%s`: %s\n", helper, strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    char out[4096];
    ssize_t len = pid < 0 ? 0 : brig_read_all(pipefd[0], out, sizeof out - 1);
    close(pipefd[0]);
    if (pid < 0)
        return brig_error_set(err, errno, "brig-systemd: fork");
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    out[len > 0 ? len : 0] = '\0';
    while (len > 0 && out[len - 1] == '\n')
        out[--len] = '\0';
    char *last = strrchr(out, '\n');
    return brig_error_set(err, 0, "%s", len > 0 ? (last ? last + 1 : out) : "brig-systemd failed");
}

/* brig-systemd VERB [--user] UNIT [extra] PROPS... */
static int helper_call(const char *verb, const struct brig_cgroup_systemd *sd, const char *extra,
                       const struct brig_systemd_props *p, brig_error_t *err)
{
    size_t n = 0, cap = 4 + (p ? p->n : 0);
    cleanup_free const char **args = calloc(cap, sizeof *args);
    if (args == NULL)
        return brig_error_set(err, ENOMEM, "brig-systemd");
    args[n++] = verb;
    if (sd->user)
        args[n++] = "--user";
    args[n++] = sd->unit;
    if (extra)
        args[n++] = extra;
    for (size_t i = 0; p && i < p->n; i++)
        args[n++] = p->items[i];
    return run_helper(args, n, err);
}

/* ---- the record ---- */

static void systemd_free(struct brig_cgroup_systemd *sd)
{
    if (sd == NULL)
        return;
    brig_cgroup_close(&sd->inner);
    brig_systemd_props_free(&sd->props);
    free(sd->unit);
    free(sd);
}

/* "systemd:UNIT PATH" → a new sd with its unit; *inner_path points into
 * record. */
static int record_parse(const char *record, struct brig_cgroup_systemd **out,
                        const char **inner_path, brig_error_t *err)
{
    bool user = strncmp(record, RECORD_USER, strlen(RECORD_USER)) == 0;
    const char *unit = record + strlen(user ? RECORD_USER : RECORD_SYSTEM);
    const char *blank = strchr(unit, ' ');
    if (blank == NULL || blank == unit)
        return brig_error_set(err, 0, "cgroup record `%s`: not a systemd unit's", record);
    struct brig_cgroup_systemd *sd = calloc(1, sizeof *sd);
    if (sd == NULL || (sd->unit = strndup(unit, (size_t) (blank - unit))) == NULL) {
        free(sd);
        return brig_error_set(err, ENOMEM, "cgroup");
    }
    sd->user = user;
    sd->inner = (struct brig_cgroup) BRIG_CGROUP_INIT;
    *inner_path = blank + 1;
    *out = sd;
    return 0;
}

bool brig_cgroup_is_systemd_record(const char *path)
{
    return strncmp(path, RECORD_SYSTEM, strlen(RECORD_SYSTEM)) == 0
           || strncmp(path, RECORD_USER, strlen(RECORD_USER)) == 0;
}

/* ---- create ---- */

/* The resources systemd can express, read off the v2 file plan. On a v1
 * host that plan may refuse what v1 takes: then the files alone carry
 * the limits; on a v2 host its error is the cgroup's. */
static int resource_props(const struct brig_resources *r, struct brig_systemd_props *p,
                          brig_error_t *err)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t refused = NULL;
    if (brig_cgroup_plan(r, &w, &n, &refused) == 0) {
        int rc = brig_systemd_props_resources(w, n, p, err);
        brig_cgroup_plan_free(w, n);
        return rc;
    }
    if (brig_cgroup_layout() == BRIG_CGROUP_LAYOUT_UNIFIED) {
        *err = refused;
        return -1;
    }
    brig_error_release(&refused);
    return 0;
}

/* The properties a new unit starts with (systemd.h). */
static int start_props(const struct brig_systemd_scope *s, const char *id,
                       const struct brig_resources *r, const struct brig_kv_list *annotations,
                       struct brig_systemd_props *p, brig_error_t *err)
{
    if (brig_systemd_props_unit(s, id, p, err) < 0)
        return -1;
    if (resource_props(r, p, err) < 0)
        return -1;
    brig_error_t ignored = NULL;
    cleanup_free char *proc_devices = NULL;
    if (brig_read_file("/proc/devices", &proc_devices, NULL, &ignored) < 0)
        brig_error_release(&ignored);
    if (brig_systemd_props_devices(r->devices, r->n_devices, proc_devices, p, err) < 0)
        return -1;
    return annotations ? brig_systemd_props_annotations(annotations, p, err) : 0;
}

static int make_record(const struct brig_cgroup_systemd *sd, char **out, brig_error_t *err)
{
    if (asprintf(out, "%s%s %s", sd->user ? RECORD_USER : RECORD_SYSTEM, sd->unit, sd->inner.path)
        < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "cgroup");
    }
    return 0;
}

int brig_cgroup_create_systemd(const char *cgroups_path, const char *id,
                               const struct brig_resources *r,
                               const struct brig_kv_list *annotations, bool devices,
                               struct brig_cgroup *out, brig_error_t *err)
{
    *out = (struct brig_cgroup) BRIG_CGROUP_INIT;
    if (access("/run/systemd/system", F_OK) != 0)
        return brig_error_set(err, 0,
                              "--systemd-cgroup: systemd is not this host's init "
                              "(no /run/systemd/system); drop the flag to use cgroupfs");
    cleanup_free char *helper = NULL;
    if (brig_systemd_helper(&helper, err) < 0)
        return -1;
    struct brig_systemd_scope s;
    if (brig_systemd_scope_parse(cgroups_path, id, geteuid() != 0, &s, err) < 0)
        return -1;
    struct brig_cgroup_systemd *sd = calloc(1, sizeof *sd);
    int rc = sd ? 0 : brig_error_set(err, ENOMEM, "cgroup");
    if (rc == 0) {
        sd->inner = (struct brig_cgroup) BRIG_CGROUP_INIT;
        sd->user = geteuid() != 0;
        sd->r = r;
        rc = start_props(&s, id, r, annotations, &sd->props, err);
        if (rc == 0 && (sd->unit = strdup(s.unit)) == NULL)
            rc = brig_error_set(err, ENOMEM, "cgroup");
    }
    if (rc == 0)
        rc = devices ? brig_cgroup_create(s.path, id, r, &sd->inner, err)
                     : brig_cgroup_create_without_devices(s.path, id, r, &sd->inner, err);
    if (rc == 0 && make_record(sd, &out->path, err) < 0) {
        brig_error_t ignored = NULL;
        brig_cgroup_destroy(sd->inner.path, &ignored);
        brig_error_release(&ignored);
        brig_cgroup_remove_parents_made(&sd->inner);
        rc = -1;
    }
    brig_systemd_scope_free(&s);
    if (rc < 0) {
        systemd_free(sd);
        return rc;
    }
    out->backend = &brig_cgroup_systemd;
    out->systemd = sd;
    return 0;
}

/* ---- the operations ---- */

static const struct brig_cgroup *inner_of(const struct brig_cgroup *cg)
{
    return &cg->systemd->inner;
}

/* The unit started with pid in it, and the limits written again over what
 * systemd wrote. */
static int start_unit(struct brig_cgroup_systemd *sd, pid_t pid, brig_error_t *err)
{
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "%d", (int) pid);
    if (helper_call("start", sd, pid_text, &sd->props, err) < 0)
        return brig_error_wrap(err, "systemd unit `%s`", sd->unit);
    sd->started = true;
    struct brig_resources again = *sd->r;
    /* v2: systemd's device program sits beside brig's, which stays; v1:
     * systemd rewrote the lists, which go back to the rules */
    if (brig_cgroup_layout() == BRIG_CGROUP_LAYOUT_UNIFIED)
        again.n_devices = 0;
    return brig_cgroup_apply(&sd->inner, &again, err);
}

static int sd_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    struct brig_cgroup_systemd *sd = cg->systemd;
    if (brig_cgroup_add_pid(&sd->inner, pid, err) < 0)
        return -1;
    return sd->started ? 0 : start_unit(sd, pid, err);
}

static int sd_apply(const struct brig_cgroup *cg, const struct brig_resources *r, brig_error_t *err)
{
    struct brig_cgroup_systemd *sd = cg->systemd;
    cleanup_props struct brig_systemd_props p = { 0 };
    if (resource_props(r, &p, err) < 0)
        return -1;
    if (p.n && helper_call("set", sd, NULL, &p, err) < 0)
        return brig_error_wrap(err, "systemd unit `%s`", sd->unit);
    return brig_cgroup_apply(&sd->inner, r, err);
}

static int sd_open(const char *path, struct brig_cgroup *out, brig_error_t *err)
{
    struct brig_cgroup_systemd *sd;
    const char *inner;
    if (record_parse(path, &sd, &inner, err) < 0)
        return -1;
    sd->started = true;
    int rc = brig_cgroup_open(inner, &sd->inner, err);
    if (rc == 0 && (out->path = strdup(path)) == NULL)
        rc = brig_error_set(err, ENOMEM, "cgroup");
    if (rc < 0) {
        systemd_free(sd);
        return -1;
    }
    out->backend = &brig_cgroup_systemd;
    out->systemd = sd;
    return 0;
}

/* The unit stopped (gone already is stopped) and its failure forgotten,
 * then whatever is left of the directories. */
static int sd_destroy(const char *path, brig_error_t *err)
{
    struct brig_cgroup_systemd *sd;
    const char *inner;
    if (record_parse(path, &sd, &inner, err) < 0)
        return -1;
    int rc = helper_call("stop", sd, NULL, NULL, err);
    if (rc < 0)
        brig_error_wrap(err, "systemd unit `%s`", sd->unit);
    if (rc == 0)
        rc = brig_cgroup_destroy(inner, err);
    systemd_free(sd);
    return rc;
}

static void sd_close(struct brig_cgroup *cg)
{
    systemd_free(cg->systemd);
    cg->systemd = NULL;
}

static void sd_remove_parents_made(const struct brig_cgroup *cg)
{
    brig_cgroup_remove_parents_made(inner_of(cg));
}

/* Until the unit is started, the init is cloned beside brig and placed
 * by add_pid, which starts it. */
static int sd_clone_fd(const struct brig_cgroup *cg)
{
    return cg->systemd->started ? brig_cgroup_clone_fd(inner_of(cg)) : -1;
}

static int sd_devices_attach(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                             brig_error_t *err)
{
    return brig_cgroup_devices_attach(inner_of(cg), p, err);
}

static int sd_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err)
{
    return brig_cgroup_freeze(inner_of(cg), frozen, err);
}

static bool sd_is_frozen(const struct brig_cgroup *cg)
{
    return brig_cgroup_is_frozen(inner_of(cg));
}

static int sd_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err)
{
    return brig_cgroup_pids(inner_of(cg), out, n, err);
}

static int sd_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err)
{
    return brig_cgroup_signal_all(inner_of(cg), sig, err);
}

static int sd_kill_all(const struct brig_cgroup *cg, brig_error_t *err)
{
    return brig_cgroup_kill_all(inner_of(cg), err);
}

static int sd_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out, brig_error_t *err)
{
    return brig_cgroup_stats(inner_of(cg), out, err);
}

static int sd_open_sub(const struct brig_cgroup *cg, const struct brig_cgroup_sub *subs, size_t n,
                       struct brig_cgroup *out, brig_error_t *err)
{
    const struct brig_cgroup *in = inner_of(cg);
    return in->backend->open_sub(in, subs, n, out, err);
}

static int sd_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err)
{
    return brig_cgroup_oom_watch(inner_of(cg), fd, err);
}

static int sd_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err)
{
    return brig_cgroup_oom_kills(inner_of(cg), out, err);
}

static int sd_add_pid_unfrozen(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    return brig_cgroup_add_pid_unfrozen(inner_of(cg), pid, err);
}

/* Containers are made by brig_cgroup_create_systemd(), which takes what
 * these can't: the annotations. */
static int sd_create(const char *cgroups_path, const char *id, const struct brig_resources *r,
                     struct brig_cgroup *out, brig_error_t *err)
{
    return brig_cgroup_create_systemd(cgroups_path, id, r, NULL, true, out, err);
}

static int sd_create_without_devices(const char *cgroups_path, const char *id,
                                     const struct brig_resources *r, struct brig_cgroup *out,
                                     brig_error_t *err)
{
    return brig_cgroup_create_systemd(cgroups_path, id, r, NULL, false, out, err);
}

const struct brig_cgroup_backend brig_cgroup_systemd = {
    .name = "systemd",
    .create = sd_create,
    .create_without_devices = sd_create_without_devices,
    .open = sd_open,
    .apply = sd_apply,
    .devices_attach = sd_devices_attach,
    .add_pid = sd_add_pid,
    .freeze = sd_freeze,
    .is_frozen = sd_is_frozen,
    .pids = sd_pids,
    .signal_all = sd_signal_all,
    .kill_all = sd_kill_all,
    .destroy = sd_destroy,
    .stats = sd_stats,
    .clone_fd = sd_clone_fd,
    .open_sub = sd_open_sub,
    .oom_watch = sd_oom_watch,
    .oom_kills = sd_oom_kills,
    .close = sd_close,
    .remove_parents_made = sd_remove_parents_made,
    .add_pid_unfrozen = sd_add_pid_unfrozen,
};
