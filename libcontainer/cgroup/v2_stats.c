#define _GNU_SOURCE
/* cgroup v2 statistics and OOM notification: the controllers' files read
 * from a container's cgroup (parsed in stats.c), and memory.events
 * watched with inotify. */
#include "cgroup/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "base/cleanup.h"

int brig_cgroup_v2_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                         brig_error_t *err)
{
    static const char *const files[] = {
        "memory.current",
        "memory.max",
        "memory.swap.current",
        "memory.swap.max",
        "memory.events",
        "memory.stat",
        "pids.current",
        "pids.max",
        "cpu.stat",
        "io.stat",
        NULL,
    };
    memset(out, 0, sizeof *out);
    /* A file is missing when its controller isn't enabled here: its
     * fields stay 0, as the header promises. */
    for (size_t i = 0; files[i]; i++)
        if (brig_cgroup_stats_read_at(cg->dir_fd, files[i], out, err) < 0)
            return brig_error_wrap(err, "cgroup `%s`: stats", cg->path);
    return 0;
}

/* The kernel notifies a change of memory.events as IN_MODIFY: at each
 * OOM, again when the killer has acted (oom_kill), and at the other
 * events it counts (max, high). */
int brig_cgroup_v2_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err)
{
    cleanup_close int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (ifd < 0)
        return brig_error_set(err, errno, "cgroup `%s`: OOM notification: inotify", cg->path);
    cleanup_free char *path = NULL;
    if (asprintf(&path, "%s/memory.events", cg->path) < 0)
        return brig_error_set(err, ENOMEM, "cgroup `%s`: OOM notification", cg->path);
    if (inotify_add_watch(ifd, path, IN_MODIFY) < 0)
        return brig_error_set(err, errno, "cgroup `%s`: OOM notification: watch memory.events",
                              cg->path);
    *fd = ifd;
    ifd = -1;
    return 0;
}

int brig_cgroup_v2_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err)
{
    struct brig_cgroup_stats s = { 0 };
    int r = brig_cgroup_stats_read_at(cg->dir_fd, "memory.events", &s, err);
    if (r > 0)
        brig_error_set(err, ENOENT, "no memory controller");
    if (r != 0)
        return brig_error_wrap(err, "cgroup `%s`: OOM count", cg->path);
    *out = s.memory_events_oom_kill;
    return 0;
}
