/* The reaper's lock, and the reaper started or woken (reaper.h). */
#define _GNU_SOURCE
#include "sandbox/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/daemon.h"
#include "sandbox/layout.h"
#include "sandbox/locate.h"

#define LOCK_TRIES 100      /* 10 ms apart: a second */
#define START_WAIT_MS 10000 /* until a started reaper holds its lock */

static void nap_10ms(void)
{
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    nanosleep(&ts, NULL);
}

static int open_lock(brig_error_t *err)
{
    cleanup_free char *path = NULL;
    if (asprintf(&path, "%s/%s", brig_sandbox_home(), BRIG_REAPER_LOCK) < 0) {
        path = NULL;
        return brig_error_set(err, ENOMEM, "reaper");
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    return fd < 0 ? brig_error_set(err, errno, "reaper: `%s`", path) : fd;
}

/* 1 when someone holds the lock, 0 when it is free (and left free). */
static int lock_held(int fd, brig_error_t *err)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
        return 0;
    }
    if (errno == EWOULDBLOCK)
        return 1;
    return brig_error_set(err, errno, "reaper: lock");
}

int brig_sandbox_reaper_lock(int *out, brig_error_t *err)
{
    cleanup_close int fd = open_lock(err);
    if (fd < 0)
        return -1;
    for (int tries = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; tries++) {
        if (errno != EWOULDBLOCK)
            return brig_error_set(err, errno, "reaper: lock");
        if (tries >= LOCK_TRIES)
            return 0;
        nap_10ms();
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t) n, 0) != n)
        return brig_error_set(err, errno, "reaper: write its pid");
    *out = brig_steal_fd(fd);
    return 1;
}

/* The reaper holding the lock told to read the records again (not
 * ourselves: the reaper removes too). Its pid is checked to be a
 * reaper's: the file may still hold a pid of the past for the moment a
 * new reaper takes it over. */
static void wake(int fd)
{
    char text[32], comm[32];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return; /* just started: it reads them anyway */
    text[n] = '\0';
    pid_t pid = (pid_t) atoi(text);
    snprintf(comm, sizeof comm, "/proc/%d/comm", pid);
    cleanup_free char *name = NULL;
    size_t len;
    brig_error_t ignored = NULL;
    if (pid <= 0 || brig_read_file(comm, &name, &len, &ignored) < 0) {
        brig_error_release(&ignored);
        return;
    }
    if (strcmp(name, BRIG_REAPER_NAME "\n") == 0 && pid != getpid())
        kill(pid, SIGHUP);
}

void brig_sandbox_reaper_wake(void)
{
    brig_error_t ignored = NULL;
    cleanup_close int fd = open_lock(&ignored);
    if (fd >= 0 && lock_held(fd, &ignored) > 0)
        wake(fd);
    brig_error_release(&ignored);
}

/* What of our environment the reaper gets: brig's own settings (the
 * home, its log, the egress proxy's dir, which a removal tells), where
 * programs are, the sanitizers' (a test build). */
static bool passed_on(const char *var)
{
    static const char *const prefixes[] = {
        "PATH=", "LANG=", "BRIG_", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=", NULL
    };
    for (size_t i = 0; prefixes[i]; i++)
        if (strncmp(var, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

static int spawn_reaper(brig_error_t *err)
{
    cleanup_free char *path = NULL, *home = realpath(brig_sandbox_home(), NULL);
    if (home == NULL)
        return brig_error_set(err, errno, "reaper: `%s`", brig_sandbox_home());
    if (brig_sandbox_locate_helper(BRIG_REAPER_NAME, &path, err) < 0)
        return brig_error_wrap(err, "reaper");
    /* The home on its command line: `pgrep -f` tells one home's reaper
     * from another's. */
    char *const argv[] = { BRIG_REAPER_NAME, "--home", home, NULL };
    return brig_sandbox_daemon_spawn("reaper", path, argv, passed_on, err);
}

static const char *log_path(void)
{
    const char *env = getenv(BRIG_REAPER_LOG_ENV);
    return env && *env ? env : BRIG_REAPER_LOG_DEFAULT;
}

int brig_sandbox_reaper_ensure(brig_error_t *err)
{
    cleanup_close int fd = open_lock(err);
    if (fd < 0)
        return -1;
    int held = lock_held(fd, err);
    if (held != 0) {
        if (held > 0)
            wake(fd);
        return held < 0 ? -1 : 0;
    }
    if (spawn_reaper(err) < 0)
        return -1;
    for (int waited = 0; waited < START_WAIT_MS; waited += 10) {
        if ((held = lock_held(fd, err)) != 0)
            return held < 0 ? -1 : 0;
        nap_10ms();
    }
    return brig_error_set(err, 0, "reaper: started, but it does not run (its log: %s)", log_path());
}
