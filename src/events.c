#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "brig.h"
#include "cgroup/cgroup.h"
#include "cli.h"
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

/* memory.events changes raise inotify IN_MODIFY: an OOM is reported as
 * it happens, not at the next interval. */
static int watch_memory_events(const char *id)
{
    struct brig_state *st = NULL;
    enum brig_status status;
    brig_error_t err = NULL;
    if (brig_container_state(brig_globals.root, id, &st, &status, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/memory.events", st->cgroup_path);
    brig_state_free(st);
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd >= 0 && inotify_add_watch(fd, path, IN_MODIFY) < 0) {
        close(fd);
        return -1;
    }
    return fd;
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
    uint64_t ooms = s.memory_events_oom_kill;
    int watch = watch_memory_events(id);
    print_stats(id, &s);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        next.tv_sec += interval_ms / 1000;
        next.tv_nsec += (long) (interval_ms % 1000) * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        bool due = false;
        while (!due) {
            /* Wake on memory.events changes to report an OOM at once;
             * statistics go out only at each interval. */
            struct pollfd p = { .fd = watch, .events = POLLIN };
            int r = poll(&p, 1, brig_ms_until(&next));
            if (r > 0) {
                char buf[4096];
                while (read(watch, buf, sizeof buf) > 0)
                    ;
            }
            due = r == 0 || brig_ms_until(&next) == 0;
            if (brig_container_stats(brig_globals.root, id, &s, &err) < 0) {
                /* Gone or stopped: the stream ends there. */
                brig_error_release(&err);
                goto out;
            }
            if (s.memory_events_oom_kill > ooms) {
                printf("{\"type\":\"oom\",\"id\":\"%s\"}\n", id);
                fflush(stdout);
                ooms = s.memory_events_oom_kill;
            }
        }
        print_stats(id, &s);
    }
out:
    if (watch >= 0)
        close(watch);
    return 0;
}
