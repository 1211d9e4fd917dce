/* limits_view.h: lxcfs found or started, its files bound into a spec, a
 * sandbox's CPU set picked. */
#define _GNU_SOURCE
#include "sandbox/limits_view.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sha256.h"
#include "base/utils.h"
#include "sandbox/daemon.h"
#include "sandbox/profile_int.h"

#define LV "limits view"
#define FUSE_MAGIC 0x65735546
#define START_WAIT_MS 10000

/* The files lxcfs serves that a sandbox sees instead of the host's. */
static const char *const view_files[] = {
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/swaps",
    "/sys/devices/system/cpu/online",
    NULL,
};

const char *brig_lxcfs_dir(void)
{
    const char *env = getenv(BRIG_LXCFS_DIR_ENV);
    return env && *env ? env : BRIG_LXCFS_DIR_DEFAULT;
}

int brig_lxcfs_add_mounts(struct brig_spec *spec, const char *dir)
{
    static const char *const ro[] = { "bind", "ro", "nosuid", "nodev", "noexec", NULL };
    for (size_t i = 0; view_files[i]; i++) {
        cleanup_free char *source = NULL;
        if (asprintf(&source, "%s%s", dir, view_files[i]) < 0)
            return -1;
        if (brig_profile_add_mount(spec, view_files[i], "bind", source, ro) < 0)
            return -1;
    }
    return 0;
}

/* Whether the FUSE mount at dir answers: 1 yes, 0 dead (ENOTCONN). */
static int alive(const char *dir, brig_error_t *err)
{
    cleanup_free char *probe = NULL;
    if (asprintf(&probe, "%s/proc/meminfo", dir) < 0)
        return brig_error_set(err, ENOMEM, LV);
    return access(probe, R_OK) == 0 ? 1 : 0;
}

/* 1 when an lxcfs answers at dir, 0 when nothing is mounted there (a dead
 * one's mount detached first). */
static int answering(const char *dir, brig_error_t *err)
{
    struct statfs fs;
    int up = 0;
    if (statfs(dir, &fs) < 0) {
        if (errno != ENOTCONN)
            return errno == ENOENT ? 0 : brig_error_set(err, errno, LV ": `%s`", dir);
    } else if (fs.f_type != FUSE_MAGIC) {
        return 0;
    } else if ((up = alive(dir, err)) != 0) {
        return up;
    }
    if (umount2(dir, MNT_DETACH) < 0 && errno != EINVAL)
        return brig_error_set(err, errno, LV ": detach the dead lxcfs at `%s`", dir);
    return 0;
}

/* $BRIG_LXCFS, else lxcfs in a dir of PATH. */
static int find_lxcfs(char **out, brig_error_t *err)
{
    const char *env = getenv(BRIG_LXCFS_ENV);
    if (env && *env) {
        if (access(env, X_OK) < 0)
            return brig_error_set(err, errno, LV ": lxcfs `%s`", env);
        return (*out = strdup(env)) ? 0 : brig_error_set(err, ENOMEM, LV);
    }
    if ((*out = brig_find_program("lxcfs", NULL)) == NULL)
        return brig_error_set(err, ENOENT, LV ": lxcfs not found (apt-get install lxcfs)");
    return 0;
}

/* The daemon gets nothing of our environment but where programs are. */
static bool passed_on(const char *var)
{
    return strncmp(var, "PATH=", 5) == 0 || strncmp(var, "LANG=", 5) == 0;
}

static int start(const char *dir, brig_error_t *err)
{
    cleanup_free char *lxcfs = NULL, *pidfile = NULL;
    if (find_lxcfs(&lxcfs, err) < 0)
        return -1;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, LV ": mkdir `%s`", dir);
    if (asprintf(&pidfile, "%s.pid", dir) < 0)
        return brig_error_set(err, ENOMEM, LV);
    char *const argv[] = { "lxcfs",     "--foreground", "--enable-cfs", "--enable-loadavg",
                           "--pidfile", pidfile,        (char *) dir,   NULL };
    if (brig_sandbox_daemon_spawn(LV, lxcfs, argv, passed_on, err) < 0)
        return -1;
    for (int waited = 0; waited < START_WAIT_MS; waited += 10) {
        int up = answering(dir, err);
        if (up != 0)
            return up < 0 ? -1 : 0;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return brig_error_set(err, ETIMEDOUT, LV ": lxcfs started, but nothing answers at `%s`", dir);
}

int brig_lxcfs_ensure(char **out, brig_error_t *err)
{
    const char *dir = brig_lxcfs_dir();
    int up = answering(dir, err);
    if (up < 0)
        return -1;
    if (up == 0) {
        /* One starter at a time: a second lxcfs would mount over the first. */
        cleanup_free char *lock = NULL;
        if (asprintf(&lock, "%s.lock", dir) < 0)
            return brig_error_set(err, ENOMEM, LV);
        cleanup_close int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0)
            return brig_error_set(err, errno, LV ": lock `%s`", lock);
        if ((up = answering(dir, err)) < 0 || (up == 0 && start(dir, err) < 0))
            return -1;
    }
    return (*out = strdup(dir)) ? 0 : brig_error_set(err, ENOMEM, LV);
}

int brig_sandbox_cpuset(const char *id, int64_t cpus_milli, char **out, brig_error_t *err)
{
    *out = NULL;
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) < 0)
        return brig_error_set(err, errno, LV ": sched_getaffinity");
    int allowed[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine))
            allowed[n++] = c;
    int64_t want = (cpus_milli + 999) / 1000;
    if (want <= 0 || want >= n)
        return 0;
    char digest[65];
    unsigned start = 0;
    brig_sha256_hex(id, strlen(id), digest);
    sscanf(digest, "%8x", &start);
    start %= (unsigned) n;
    size_t size = (size_t) want * 12 + 1;
    char *list = calloc(1, size), *at = list;
    if (list == NULL)
        return brig_error_set(err, ENOMEM, LV);
    for (int64_t i = 0; i < want; i++)
        at += snprintf(at, size - (size_t) (at - list), "%s%d", i ? "," : "",
                       allowed[(start + (unsigned) i) % (unsigned) n]);
    *out = list;
    return 0;
}
