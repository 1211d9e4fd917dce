/* brig-reaper [--home DIR] [--log FILE|-]
 *
 * The reaper of one sandbox home (man brig-reaper, sandbox/reaper.h):
 * started by brig when a sandbox gets a ttl or an idle timeout, it
 * removes every sandbox of the home whose deadline passed, logs one line
 * for each, sleeps until the next deadline (a minute at most; SIGHUP
 * wakes it early) and exits once no sandbox has a limit left. SIGTERM
 * and SIGINT stop it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "container/handler.h"
#include "sandbox/layout.h"
#include "sandbox/lifetime.h"
#include "sandbox/reaper.h"
#include "sandbox/sandbox.h"

#define USAGE "usage: brig-reaper [--home DIR] [--log FILE|-]\n"

static FILE *log_file;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line of the log, whole, with the time in front. */
static void say(const char *fmt, ...)
{
    char stamp[32];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    flockfile(log_file);
    fprintf(log_file, "%s.%03ldZ ", stamp, now.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(log_file, fmt, ap);
    va_end(ap);
    fputc('\n', log_file);
    fflush(log_file);
    funlockfile(log_file);
}

/* The log, appended to; its dirs made when missing. */
static FILE *open_log(const char *path)
{
    if (strcmp(path, "-") == 0)
        return stderr;
    cleanup_free char *dirs = strdup(path);
    for (char *p = dirs ? strchr(dirs + 1, '/') : NULL; p; p = strchr(p + 1, '/')) {
        *p = '\0';
        mkdir(dirs, 0755);
        *p = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    return fd < 0 ? NULL : fdopen(fd, "a");
}

static void report(const struct brig_sandbox_reaped *r, void *ctx)
{
    (void) ctx;
    char limit[16];
    if (r->why == NULL) {
        say("sandbox=%s error=\"%s\"", r->id, r->failure);
        return;
    }
    brig_sandbox_span(r->limit_ms, limit, sizeof limit);
    if (r->failure)
        say("sandbox=%s reason=%s limit=%s not removed: %s", r->id, r->why, limit, r->failure);
    else
        say("removed sandbox=%s reason=%s limit=%s late=%" PRId64 "ms", r->id, r->why, limit,
            r->late_ms);
}

/* A pass; -1 after logging why none could be made. */
static int pass(struct brig_sandbox_reap_result *res)
{
    brig_error_t err = NULL;
    if (brig_sandbox_reap(report, NULL, res, &err) == 0)
        return 0;
    say("stopped: %s", err->msg);
    brig_error_release(&err);
    return -1;
}

/* No limit left: the lock let go, then one more pass, for a record
 * written since the last one whose create found the lock still held and
 * counted on us. 1 when we go on (with the lock again), 0 when we stop,
 * -1 when the pass or the lock failed. */
static int still_needed(int *lock_fd)
{
    struct brig_sandbox_reap_result res;
    close(*lock_fd);
    *lock_fd = -1;
    if (pass(&res) < 0)
        return -1;
    if (res.left == 0) {
        say("stopped: no sandbox has a limit left");
        return 0;
    }
    brig_error_t err = NULL;
    int r = brig_sandbox_reaper_lock(lock_fd, &err);
    if (r < 0)
        say("stopped: %s", err->msg);
    else if (r == 0)
        say("stopped: another reaper took over");
    brig_error_release(&err);
    return r;
}

/* Until the deadline (a minute at most) or a signal: false for a stop. */
static bool sleep_until(int64_t deadline, const sigset_t *wanted)
{
    int64_t ms = deadline - brig_sandbox_now_ms();
    if (ms > BRIG_REAPER_MAX_SLEEP_MS)
        ms = BRIG_REAPER_MAX_SLEEP_MS;
    if (ms <= 0)
        return true;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    int sig = sigtimedwait(wanted, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
        say("stopped by signal %d", sig);
        return false;
    }
    return true; /* the time, or SIGHUP: records written */
}

/* Passes until nothing is left to wait for, or a stop: the exit status. */
static int run(int lock_fd, const sigset_t *wanted)
{
    int go_on;
    do {
        struct brig_sandbox_reap_result res;
        if (pass(&res) < 0)
            go_on = -1;
        else if (res.left == 0)
            go_on = still_needed(&lock_fd);
        else
            go_on = sleep_until(res.next_ms, wanted);
    } while (go_on > 0);
    if (lock_fd >= 0)
        close(lock_fd);
    return go_on < 0 ? 1 : 0;
}

static int parse_args(int argc, char **argv, const char **log)
{
    static const struct option opts[] = {
        { "home", required_argument, NULL, 'd' },
        { "log", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *env = getenv(BRIG_REAPER_LOG_ENV);
    *log = env && *env ? env : BRIG_REAPER_LOG_DEFAULT;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': {
            /* Where the library looks (layout.h), absolute: we leave the
             * dir we were started in. */
            cleanup_free char *home = realpath(optarg, NULL);
            if (home == NULL || setenv(BRIG_SANDBOX_HOME_ENV, home, 1) < 0) {
                fprintf(stderr, "brig-reaper: home `%s`: %s\n", optarg, strerror(errno));
                exit(1);
            }
            break;
        }
        case 'l':
            *log = optarg;
            break;
        case 'h':
            fputs(USAGE, stdout);
            exit(0);
        default:
            return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

/* Whoever started us may have blocked signals (brig does, around its
 * children): all are let through but those waited for, which are kept
 * pending for sigtimedwait, so a SIGHUP during a pass is not lost. */
static void take_signals(sigset_t *wanted)
{
    sigemptyset(wanted);
    sigaddset(wanted, SIGHUP);
    sigaddset(wanted, SIGTERM);
    sigaddset(wanted, SIGINT);
    sigprocmask(SIG_SETMASK, wanted, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    const char *log;
    if (parse_args(argc, argv, &log) < 0) {
        fputs("brig-reaper: " USAGE, stderr);
        return 2;
    }
    sigset_t wanted;
    take_signals(&wanted);
    /* Removal finds a sandbox's handler by its name. */
    brig_handlers_register(brig_sandbox_handlers);
    log_file = open_log(log);
    if (log_file == NULL) {
        fprintf(stderr, "brig-reaper: log `%s`: %s\n", log, strerror(errno));
        return 1;
    }
    /* Not holding whatever dir we were started in. */
    if (chdir("/") < 0)
        return 1;
    const char *home = brig_sandbox_home();
    int lock_fd = -1;
    brig_error_t err = NULL;
    int r = brig_sandbox_reaper_lock(&lock_fd, &err);
    if (r <= 0) {
        fprintf(stderr, "brig-reaper: %s\n", r < 0 ? err->msg : "another reaper runs");
        if (r < 0)
            say("not started: %s", err->msg);
        brig_error_release(&err);
        return r < 0 ? 1 : 0;
    }
    say("started pid=%d home=%s", getpid(), home);
    return run(lock_fd, &wanted);
}
