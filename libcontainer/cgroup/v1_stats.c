#define _GNU_SOURCE
/* cgroup v1 statistics and OOM notification: each controller's files read
 * from the container's directory in the hierarchy that binds it (parsed in
 * stats.c), and memory.oom_control's eventfd. */
#include "cgroup/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

/* A statistics file and the controller it belongs to; where there are two
 * names, the first the kernel has (blkio's *_recursive files count the
 * child cgroups too, as v2 does, and are missing on old kernels). */
struct v1_file {
    const char *controller;
    const char *names[2];
};

static const struct v1_file v1_files[] = {
    /* memory.* before memory.memsw.*: the swap is told as the difference,
     * the failcnts as a sum. */
    { "memory", { "memory.usage_in_bytes", NULL } },
    { "memory", { "memory.limit_in_bytes", NULL } },
    { "memory", { "memory.memsw.usage_in_bytes", NULL } },
    { "memory", { "memory.memsw.limit_in_bytes", NULL } },
    { "memory", { "memory.oom_control", NULL } },
    { "memory", { "memory.failcnt", NULL } },
    { "memory", { "memory.stat", NULL } },
    { "memory", { "memory.memsw.failcnt", NULL } },
    { "pids", { "pids.current", NULL } },
    { "pids", { "pids.max", NULL } },
    { "cpuacct", { "cpuacct.usage", NULL } },
    { "cpuacct", { "cpuacct.stat", NULL } },
    { "cpu", { "cpu.stat", NULL } },
    { "blkio", { "blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes" } },
    { "blkio", { "blkio.throttle.io_serviced_recursive", "blkio.throttle.io_serviced" } },
};

int brig_cgroup_v1_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                         brig_error_t *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof v1_files / sizeof v1_files[0]; i++) {
        const struct v1_file *f = &v1_files[i];
        /* No hierarchy binds the controller, or the kernel lacks the file
         * (memsw without swap accounting): its fields stay 0. */
        int dfd = brig_cgroup_v1_fd(cg, f->controller);
        int r = 1;
        for (size_t j = 0; dfd >= 0 && r > 0 && j < 2 && f->names[j]; j++)
            r = brig_cgroup_stats_read_at(dfd, f->names[j], out, err);
        if (r < 0)
            return brig_error_wrap(err, "cgroup `%s`: stats",
                                   brig_cgroup_v1_dir_path(cg, f->controller));
    }
    return 0;
}

static int memory_fd(const struct brig_cgroup *cg, const char *what, brig_error_t *err)
{
    int dfd = brig_cgroup_v1_fd(cg, "memory");
    if (dfd < 0)
        return brig_error_set(err, ENOENT, "cgroup: %s: no memory hierarchy", what);
    return dfd;
}

/* The kernel signals the eventfd when the cgroup comes under OOM: before
 * the killer acts, so oom_kill may not count that kill yet (cgroup.h);
 * and once more when the cgroup is removed. Registering takes the two fds
 * as they are at the write; the eventfd alone keeps it alive after. */
int brig_cgroup_v1_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err)
{
    int dfd = memory_fd(cg, "OOM notification", err);
    if (dfd < 0)
        return -1;
    const char *dir = brig_cgroup_v1_dir_path(cg, "memory");
    cleanup_close int control = openat(dfd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
    if (control < 0)
        return brig_error_set(err, errno, "cgroup `%s`: open memory.oom_control", dir);
    cleanup_close int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0)
        return brig_error_set(err, errno, "cgroup `%s`: OOM notification: eventfd", dir);
    char line[32];
    int len = snprintf(line, sizeof line, "%d %d", efd, control);
    cleanup_close int events = openat(dfd, "cgroup.event_control", O_WRONLY | O_CLOEXEC);
    if (events < 0 || brig_write_all(events, line, (size_t) len) < 0)
        return brig_error_set(err, errno, "cgroup `%s`: register with cgroup.event_control", dir);
    *fd = efd;
    efd = -1;
    return 0;
}

int brig_cgroup_v1_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err)
{
    int dfd = memory_fd(cg, "OOM count", err);
    if (dfd < 0)
        return -1;
    struct brig_cgroup_stats s = { 0 };
    int r = brig_cgroup_stats_read_at(dfd, "memory.oom_control", &s, err);
    if (r > 0)
        brig_error_set(err, ENOENT, "no memory.oom_control");
    if (r != 0)
        return brig_error_wrap(err, "cgroup `%s`: OOM count",
                               brig_cgroup_v1_dir_path(cg, "memory"));
    *out = s.memory_events_oom_kill;
    return 0;
}
