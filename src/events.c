#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "brig.h"
#include "cgroup/cgroup.h"
#include "cli.h"
#include "base/utils.h"
#include "container/container.h"

static const char usage[] =
    "Usage: brig events [options] ID\n\n"
    "Print the container's resource statistics every interval, and an event\n"
    "as soon as the kernel reports an OOM kill in it, one JSON object a line,\n"
    "until the container stops.\n\n"
    "Options:\n"
    "      --interval DURATION  time between statistics (default 5s; 500ms, 2s, 1m)\n"
    "      --stats              print the statistics once and exit\n"
    "  -h, --help               print this help\n";

static void print_u64(const char *key, uint64_t v, bool comma)
{
    printf("\"%s\":%llu%s", key, (unsigned long long) v, comma ? "," : "");
}

static void print_stats(const char *id, const struct brig_cgroup_stats *s)
{
    printf("{\"type\":\"stats\",\"id\":\"%s\",\"data\":{", id);
    printf("\"cpu\":{\"usage\":{");
    print_u64("total", s->cpu_usage_usec * 1000, true);
    print_u64("kernel", s->cpu_system_usec * 1000, true);
    print_u64("user", s->cpu_user_usec * 1000, false);
    printf("},\"throttling\":{");
    print_u64("periods", s->cpu_nr_periods, true);
    print_u64("throttledPeriods", s->cpu_nr_throttled, true);
    print_u64("throttledTime", s->cpu_throttled_usec * 1000, false);
    printf("}},\"memory\":{\"usage\":{");
    print_u64("usage", s->memory_current, true);
    print_u64("limit", s->memory_max, false);
    printf("},\"swap\":{");
    print_u64("usage", s->memory_swap_current, true);
    print_u64("limit", s->memory_swap_max, false);
    printf("},\"raw\":{");
    print_u64("oom", s->memory_events_oom, true);
    print_u64("oom_kill", s->memory_events_oom_kill, true);
    print_u64("max", s->memory_events_max, false);
    printf("}},\"pids\":{");
    print_u64("current", s->pids_current, true);
    print_u64("limit", s->pids_max, false);
    printf("},\"blkio\":{\"ioServiceBytesRecursive\":[{\"op\":\"Read\",");
    print_u64("value", s->io_rbytes, false);
    printf("},{\"op\":\"Write\",");
    print_u64("value", s->io_wbytes, false);
    printf("}],\"ioServicedRecursive\":[{\"op\":\"Read\",");
    print_u64("value", s->io_rios, false);
    printf("},{\"op\":\"Write\",");
    print_u64("value", s->io_wios, false);
    printf("}]}}}\n");
    fflush(stdout);
}

/* The container's OOM notification (cgroup.h): an OOM is reported as it
 * happens, not at the next interval. On v1 the notification comes before
 * the kill is counted, so a notification without a new kill is looked at
 * again: 10 ms later, then at doubling intervals, LOOKS looks in all (the
 * last some 0.6 s after). */
enum { LOOKS = 7, FIRST_RECHECK_MS = 10 };

struct oom_watch {
    struct brig_cgroup cg;
    int fd;         /* -1: no notification (no cgroup, no memory controller) */
    uint64_t kills; /* the count last seen */
    int looks;      /* looks left for a kill not counted yet */
};

static void oom_watch_open(const char *id, struct oom_watch *w)
{
    *w = (struct oom_watch){ .cg = BRIG_CGROUP_INIT, .fd = -1 };
    struct brig_state *st = NULL;
    enum brig_status status;
    brig_error_t err = NULL;
    if (brig_container_state(brig_globals.root, id, &st, &status, &err) < 0
        || *st->cgroup_path == '\0' || brig_cgroup_open(st->cgroup_path, &w->cg, &err) < 0
        || brig_cgroup_oom_kills(&w->cg, &w->kills, &err) < 0
        || brig_cgroup_oom_watch(&w->cg, &w->fd, &err) < 0)
        brig_error_release(&err); /* the statistics still go out */
    brig_state_free(st);
}

static void oom_watch_close(struct oom_watch *w)
{
    if (w->fd >= 0)
        close(w->fd);
    brig_cgroup_close(&w->cg);
}

/* Prints an event for new kills; -1 when the count can't be read any more
 * (the container has gone with its cgroup). */
static int oom_look(const char *id, struct oom_watch *w)
{
    uint64_t kills;
    brig_error_t err = NULL;
    if (brig_cgroup_oom_kills(&w->cg, &kills, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    w->looks--;
    if (kills > w->kills) {
        printf("{\"type\":\"oom\",\"id\":\"%s\"}\n", id);
        fflush(stdout);
        w->kills = kills;
        w->looks = 0;
    }
    return 0;
}

/* Waits until `next`, reporting OOM kills as they come; -1 when the
 * container has gone. */
static int wait_reporting_ooms(const char *id, struct oom_watch *w, const struct timespec *next)
{
    for (int left; (left = brig_ms_until(next)) > 0;) {
        int recheck = w->looks > 0 ? FIRST_RECHECK_MS << (LOOKS - 1 - w->looks) : left;
        struct pollfd p = { .fd = w->fd, .events = POLLIN };
        if (poll(&p, 1, recheck < left ? recheck : left) > 0) {
            char buf[4096];
            while (read(w->fd, buf, sizeof buf) > 0)
                ;
            w->looks = LOOKS;
        }
        if (w->looks > 0 && oom_look(id, w) < 0)
            return -1;
    }
    return 0;
}

static void advance(struct timespec *t, int ms)
{
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long) (ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

int brig_cmd_events(int argc, char **argv)
{
    static const struct option opts[] = {
        { "interval", required_argument, NULL, 'i' },
        { "stats", no_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int interval_ms = 5000, c;
    bool once = false;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'i' && brig_parse_duration_ms(optarg, &interval_ms) < 0)
            return brig_fail_msg("events: invalid --interval `%s`", optarg);
        else if (c == 's')
            once = true;
        else if (c == 'h')
            return brig_usage(usage);
        else if (c != 'i')
            return brig_bad_option(argv);
    }
    int done = brig_parse_args(argc, argv, 1, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    const char *id = argv[optind];
    brig_error_t err = NULL;
    struct brig_cgroup_stats s;
    if (brig_container_stats(brig_globals.root, id, &s, &err) < 0)
        return brig_fail(&err);
    if (once) {
        print_stats(id, &s);
        return 0;
    }
    struct oom_watch w;
    oom_watch_open(id, &w);
    print_stats(id, &s);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        advance(&next, interval_ms);
        /* Gone or stopped: the stream ends there. */
        if (wait_reporting_ooms(id, &w, &next) < 0
            || brig_container_stats(brig_globals.root, id, &s, &err) < 0)
            break;
        print_stats(id, &s);
    }
    brig_error_release(&err);
    oom_watch_close(&w);
    return 0;
}
