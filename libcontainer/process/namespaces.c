#define _GNU_SOURCE
#include "process/namespaces.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const int clone_flags[BRIG_NS_COUNT] = {
    [BRIG_NS_PID] = CLONE_NEWPID,       [BRIG_NS_NETWORK] = CLONE_NEWNET,
    [BRIG_NS_MOUNT] = CLONE_NEWNS,      [BRIG_NS_IPC] = CLONE_NEWIPC,
    [BRIG_NS_UTS] = CLONE_NEWUTS,       [BRIG_NS_USER] = CLONE_NEWUSER,
    [BRIG_NS_CGROUP] = CLONE_NEWCGROUP, [BRIG_NS_TIME] = CLONE_NEWTIME,
};

int brig_ns_clone_flag(enum brig_ns_type type)
{
    return clone_flags[type];
}

int brig_ns_new_flags(const struct brig_spec *spec)
{
    int flags = 0;
    if (spec->linux_ == NULL)
        return 0;
    for (size_t i = 0; i < spec->linux_->n_namespaces; i++) {
        const struct brig_namespace *ns = &spec->linux_->namespaces[i];
        if (ns->path == NULL)
            flags |= clone_flags[ns->type];
    }
    return flags;
}

int brig_ns_open_paths(const struct brig_spec *spec, struct brig_ns_join *join, brig_error_t *err)
{
    for (int i = 0; i < BRIG_NS_COUNT; i++)
        join->fd[i] = -1;
    join->any = false;
    if (spec->linux_ == NULL)
        return 0;
    for (size_t i = 0; i < spec->linux_->n_namespaces; i++) {
        const struct brig_namespace *ns = &spec->linux_->namespaces[i];
        if (ns->path == NULL)
            continue;
        int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            int saved = errno;
            brig_ns_join_close(join);
            return brig_error_set(err, saved, "open %s namespace `%s`", brig_ns_type_name(ns->type),
                                  ns->path);
        }
        join->fd[ns->type] = fd;
        join->any = true;
    }
    return 0;
}

void brig_ns_join_close(struct brig_ns_join *join)
{
    for (int i = 0; i < BRIG_NS_COUNT; i++) {
        if (join->fd[i] >= 0)
            close(join->fd[i]);
        join->fd[i] = -1;
    }
}

/* Joined, a process keeps the host's ids, which the namespace may not map:
 * what it makes before its identity is set (a terminal's pty) would
 * belong to nobody inside, and its capabilities there could not change
 * that. The namespace's root is who it acts as, where the map has one. */
static int become_ns_root(brig_error_t *err)
{
    if (setresgid(0, 0, 0) < 0 && errno != EINVAL)
        return brig_error_set(err, errno, "setresgid(0) in the user namespace");
    if (setresuid(0, 0, 0) < 0 && errno != EINVAL)
        return brig_error_set(err, errno, "setresuid(0) in the user namespace");
    return 0;
}

static const enum brig_ns_type join_order[] = {
    BRIG_NS_IPC,   BRIG_NS_UTS, BRIG_NS_NETWORK, BRIG_NS_CGROUP,
    BRIG_NS_MOUNT, BRIG_NS_PID, BRIG_NS_TIME,
};

/* Joins the namespaces other than the user namespace: all of them, or
 * (`retry`) those in *later. With `defer`, one refused with EPERM is left
 * in *later instead of failing. */
static int join_others(const struct brig_ns_join *join, bool retry, bool defer, bool *later,
                       brig_error_t *err)
{
    for (size_t i = 0; i < sizeof join_order / sizeof join_order[0]; i++) {
        enum brig_ns_type t = join_order[i];
        if (join->fd[t] < 0 || (retry && !later[t]))
            continue;
        if (setns(join->fd[t], clone_flags[t]) == 0) {
            later[t] = false;
            continue;
        }
        if (!defer || errno != EPERM)
            return brig_error_set(err, errno, "join %s namespace", brig_ns_type_name(t));
        later[t] = true;
    }
    return 0;
}

/* A namespace owned by an ancestor of the user namespace joined (a pod's
 * network namespace, made by the host, beside the pod's own user
 * namespace) can only be joined before it: the capabilities over it are
 * the host's. One owned by that user namespace itself can only be joined
 * after it when the caller is not the host's root (rootless). So: every
 * other namespace first where the caller may, then the user namespace,
 * then the rest. */
int brig_ns_join_all(const struct brig_ns_join *join, brig_ns_step_fn before_user, void *arg,
                     brig_error_t *err)
{
    bool later[BRIG_NS_COUNT] = { false };
    bool has_user = join->fd[BRIG_NS_USER] >= 0;
    if (join_others(join, false, has_user, later, err) < 0)
        return -1;
    if (before_user && before_user(arg, err) < 0)
        return -1;
    if (!has_user)
        return 0;
    if (setns(join->fd[BRIG_NS_USER], CLONE_NEWUSER) < 0)
        return brig_error_set(err, errno, "join user namespace");
    if (become_ns_root(err) < 0)
        return -1;
    return join_others(join, true, false, later, err);
}

static int write_map(pid_t pid, const char *file, const struct brig_id_mapping *maps, size_t n,
                     brig_error_t *err)
{
    if (n == 0)
        return 0;
    /* One write: the kernel accepts a map only once and in a single call. */
    size_t cap = n * 40 + 1, used = 0;
    cleanup_free char *buf = malloc(cap);
    if (buf == NULL)
        return brig_error_set(err, ENOMEM, "write %s", file);
    for (size_t i = 0; i < n; i++)
        used += (size_t) snprintf(buf + used, cap - used, "%u %u %u\n", maps[i].container_id,
                                  maps[i].host_id, maps[i].size);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
    if (brig_write_file(path, buf, used, err) < 0)
        return -1;
    return 0;
}

int brig_ns_write_id_maps(pid_t pid, const struct brig_linux *l, brig_error_t *err)
{
    if (l == NULL)
        return 0;
    if (write_map(pid, "uid_map", l->uid_mappings, l->n_uid_mappings, err) < 0)
        return brig_error_wrap(err, "user namespace");
    if (write_map(pid, "gid_map", l->gid_mappings, l->n_gid_mappings, err) < 0)
        return brig_error_wrap(err, "user namespace");
    return 0;
}

int brig_ns_write_time_offsets(const struct brig_linux *l, brig_error_t *err)
{
    char buf[128];
    size_t used = 0;
    if (l->time_monotonic.set)
        used += (size_t) snprintf(buf + used, sizeof buf - used, "monotonic %lld %u\n",
                                  (long long) l->time_monotonic.secs, l->time_monotonic.nanosecs);
    if (l->time_boottime.set)
        used += (size_t) snprintf(buf + used, sizeof buf - used, "boottime %lld %u\n",
                                  (long long) l->time_boottime.secs, l->time_boottime.nanosecs);
    if (used == 0)
        return 0;
    /* Each line is its own write: the kernel parses one offset per call on
     * some versions and all lines on others; single lines work on both. */
    for (char *line = buf; *line;) {
        char *nl = strchr(line, '\n');
        if (brig_write_file("/proc/self/timens_offsets", line, (size_t) (nl - line + 1), err) < 0)
            return brig_error_wrap(err, "time namespace offsets");
        line = nl + 1;
    }
    return 0;
}
