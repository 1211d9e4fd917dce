/* A sandbox's view of its own limits: /proc/meminfo, /proc/cpuinfo,
 * /proc/stat, /proc/uptime, /proc/loadavg, /proc/swaps and
 * /sys/devices/system/cpu/online as its cgroup makes them, served by one
 * lxcfs daemon for the host (Debian's lxcfs: a FUSE file system that reads
 * the cgroup of whoever reads a file), and a CPU set of as many CPUs as
 * its quota rounded up, which is what sched_getaffinity, and so `nproc`,
 * counts.
 *
 * The daemon is mounted at $BRIG_LXCFS_DIR (default BRIG_LXCFS_DIR_DEFAULT)
 * with CPU views from quotas (--enable-cfs) and per-cgroup load averages.
 * brig starts it there on demand, detached, unless one already answers
 * there (contrib/brig-lxcfs.service runs the same under systemd); a dead
 * one's mount is detached and a new one started. $BRIG_LXCFS names the
 * program (default: lxcfs on PATH). */
#ifndef BRIG_SANDBOX_LIMITS_VIEW_H
#define BRIG_SANDBOX_LIMITS_VIEW_H

#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

#define BRIG_LXCFS_DIR_ENV "BRIG_LXCFS_DIR"
#define BRIG_LXCFS_DIR_DEFAULT "/var/lib/brig/lxcfs"
#define BRIG_LXCFS_ENV "BRIG_LXCFS"

/* The mount point in use: $BRIG_LXCFS_DIR or the default. */
const char *brig_lxcfs_dir(void);

/* An lxcfs answering at brig_lxcfs_dir(), started when there is none:
 * *dir is that dir (owned). -1 when none answers and none could be
 * started; the error says why, for a warning. */
int brig_lxcfs_ensure(char **dir, brig_error_t *err);

/* The spec's bind mounts of the view's files from the lxcfs at `dir`
 * over the container's (after its /proc and /sys). Pure. -1 on
 * out-of-memory. */
int brig_lxcfs_add_mounts(struct brig_spec *spec, const char *dir);

/* A CPU list ("0", "2,3") of as many of the CPUs this process may run on
 * as `cpus_milli` rounded up, picked by a hash of `id` so sandboxes
 * spread over the host; NULL in *out when the quota covers them all. */
int brig_sandbox_cpuset(const char *id, int64_t cpus_milli, char **out, brig_error_t *err);

#endif
