#define _GNU_SOURCE
/* The statistics files of both cgroup versions: parsing them (pure, one
 * function for every file either backend reads) and reading one from a
 * directory, for v2_stats.c and v1_stats.c. */
#include "cgroup/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

/* What a number in a file counts; the struct holds bytes, counts and
 * microseconds. */
enum unit {
    AS_IS,
    NSEC,     /* cpuacct.usage, cpu.stat throttled_time (v1) */
    TICKS,    /* cpuacct.stat: USER_HZ clock ticks */
    V1_LIMIT, /* a v1 byte limit, where "unlimited" is a huge number */
};

/* v1 byte limits have no "max": unlimited is the page counter's largest
 * value in bytes, LONG_MAX rounded down to a page (9223372036854771712
 * with 4 KiB pages, less with larger ones). Within a MiB of INT64_MAX is
 * that, for any page size Linux has. */
#define V1_UNLIMITED_FROM ((uint64_t) INT64_MAX - 0xfffff)

static uint64_t convert(uint64_t v, enum unit unit)
{
    if (v == UINT64_MAX)
        return v;
    switch (unit) {
    case NSEC:
        return v / 1000;
    case TICKS: {
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t tck = hz > 0 ? (uint64_t) hz : 100;
        /* In two parts, so a large count doesn't overflow on the way. */
        return v / tck * 1000000 + v % tck * 1000000 / tck;
    }
    case V1_LIMIT:
        return v >= V1_UNLIMITED_FROM ? UINT64_MAX : v;
    default:
        return v;
    }
}

/* "123" or "max"; false (and *out left alone) for anything else. */
static bool parse_value(const char *s, uint64_t *out)
{
    s += strspn(s, " \t");
    if (strncmp(s, "max", 3) == 0 && (s[3] == '\0' || s[3] == '\n' || s[3] == ' ')) {
        *out = UINT64_MAX;
        return true;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno != 0 || *s == '-')
        return false;
    *out = v;
    return true;
}

static void parse_as(const char *s, enum unit unit, uint64_t *out)
{
    uint64_t v;
    if (parse_value(s, &v))
        *out = convert(v, unit);
}

struct flat_key {
    const char *key;
    uint64_t *dst;
    enum unit unit;
};

/* "key value" lines (memory.events, cpu.stat, cpuacct.stat,
 * memory.oom_control). */
static void parse_flat(const char *text, const struct flat_key *keys)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t) (nl - line) : strlen(line);
        for (const struct flat_key *k = keys; k->key; k++) {
            size_t kl = strlen(k->key);
            if (kl < len && strncmp(line, k->key, kl) == 0 && line[kl] == ' ') {
                parse_as(line + kl + 1, k->unit, k->dst);
                break;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device; summed. */
static void parse_io_stat(const char *text, struct brig_cgroup_stats *s)
{
    const struct flat_key keys[] = {
        { "rbytes", &s->io_rbytes, AS_IS },
        { "wbytes", &s->io_wbytes, AS_IS },
        { "rios", &s->io_rios, AS_IS },
        { "wios", &s->io_wios, AS_IS },
    };
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, " \n");
        const char *eq = memchr(p, '=', len);
        for (size_t i = 0; eq && i < sizeof keys / sizeof keys[0]; i++) {
            size_t kl = strlen(keys[i].key);
            if ((size_t) (eq - p) == kl && strncmp(p, keys[i].key, kl) == 0) {
                uint64_t v = 0;
                parse_value(eq + 1, &v);
                *keys[i].dst += v;
            }
        }
        p += len;
        p += strspn(p, " \n");
    }
}

/* blkio.throttle.*: "8:0 Read 100" per device and operation (Read, Write,
 * Sync, Async, Discard, Total), then "Total 300" over all of them; the
 * devices' Read and Write lines summed into *rd and *wr. */
static void parse_blkio(const char *text, uint64_t *rd, uint64_t *wr)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t) (nl - line) : strlen(line);
        char copy[128], dev[32], op[16];
        unsigned long long v;
        if (len < sizeof copy) {
            memcpy(copy, line, len);
            copy[len] = '\0';
            if (sscanf(copy, "%31s %15s %llu", dev, op, &v) == 3 && strchr(dev, ':')) {
                if (strcmp(op, "Read") == 0)
                    *rd += v;
                else if (strcmp(op, "Write") == 0)
                    *wr += v;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* v2 tells the swap alone; v1's memsw files tell memory and swap
 * together, so the swap is what they say less the memory.* value parsed
 * before them (an unlimited memsw is an unlimited swap). */
static void parse_memsw(const char *text, uint64_t memory, uint64_t *swap)
{
    uint64_t v;
    if (!parse_value(text, &v))
        return;
    v = convert(v, V1_LIMIT);
    *swap = v == UINT64_MAX ? v : v > memory ? v - memory : 0;
}

/* A charge fails at the memory limit or, where swap is accounted, at the
 * memsw one, never both: v2's count of hits on memory.max is the two
 * failcnts together (memory.failcnt set first). */
static void parse_failcnt(const char *text, uint64_t *max)
{
    uint64_t v;
    if (parse_value(text, &v) && v != UINT64_MAX)
        *max += v;
}

/* memory.oom_control: "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n". v1
 * counts no OOMs apart from the kills: the OOM count is the kills, and one
 * more while the cgroup is under OOM now (its killer disabled, or about
 * to act). */
static void parse_oom_control(const char *text, struct brig_cgroup_stats *s)
{
    uint64_t under = 0;
    const struct flat_key keys[] = {
        { "oom_kill", &s->memory_events_oom_kill, AS_IS },
        { "under_oom", &under, AS_IS },
        { NULL, NULL, AS_IS },
    };
    parse_flat(text, keys);
    s->memory_events_oom = s->memory_events_oom_kill + (under ? 1 : 0);
}

/* Files of one number. */
static bool parse_single(const char *file, const char *text, struct brig_cgroup_stats *s)
{
    const struct flat_key singles[] = {
        { "memory.current", &s->memory_current, AS_IS },
        { "memory.max", &s->memory_max, AS_IS },
        { "memory.swap.current", &s->memory_swap_current, AS_IS },
        { "memory.swap.max", &s->memory_swap_max, AS_IS },
        { "pids.current", &s->pids_current, AS_IS },
        { "pids.max", &s->pids_max, AS_IS },
        { "memory.usage_in_bytes", &s->memory_current, AS_IS },
        { "memory.limit_in_bytes", &s->memory_max, V1_LIMIT },
        { "memory.failcnt", &s->memory_events_max, AS_IS },
        { "cpuacct.usage", &s->cpu_usage_usec, NSEC },
        { NULL, NULL, AS_IS },
    };
    for (const struct flat_key *k = singles; k->key; k++) {
        if (strcmp(file, k->key) == 0) {
            parse_as(text, k->unit, k->dst);
            return true;
        }
    }
    return false;
}

/* Files of "key value" lines. */
static bool parse_keyed(const char *file, const char *text, struct brig_cgroup_stats *s)
{
    const struct flat_key events[] = {
        { "oom", &s->memory_events_oom, AS_IS },
        { "oom_kill", &s->memory_events_oom_kill, AS_IS },
        { "max", &s->memory_events_max, AS_IS },
        { NULL, NULL, AS_IS },
    };
    /* v2's keys and v1's (nr_periods and nr_throttled are in both). */
    const struct flat_key cpu[] = {
        { "usage_usec", &s->cpu_usage_usec, AS_IS },
        { "user_usec", &s->cpu_user_usec, AS_IS },
        { "system_usec", &s->cpu_system_usec, AS_IS },
        { "nr_periods", &s->cpu_nr_periods, AS_IS },
        { "nr_throttled", &s->cpu_nr_throttled, AS_IS },
        { "throttled_usec", &s->cpu_throttled_usec, AS_IS },
        { "throttled_time", &s->cpu_throttled_usec, NSEC },
        { NULL, NULL, AS_IS },
    };
    /* v2's keys, and v1's hierarchical totals */
    const struct flat_key memstat[] = {
        { "anon", &s->memory_anon, AS_IS },
        { "file", &s->memory_file, AS_IS },
        { "inactive_file", &s->memory_inactive_file, AS_IS },
        { "pgfault", &s->memory_pgfault, AS_IS },
        { "pgmajfault", &s->memory_pgmajfault, AS_IS },
        { "total_rss", &s->memory_anon, AS_IS },
        { "total_cache", &s->memory_file, AS_IS },
        { "total_inactive_file", &s->memory_inactive_file, AS_IS },
        { "total_pgfault", &s->memory_pgfault, AS_IS },
        { "total_pgmajfault", &s->memory_pgmajfault, AS_IS },
        { NULL, NULL, AS_IS },
    };
    const struct flat_key cpuacct[] = {
        { "user", &s->cpu_user_usec, TICKS },
        { "system", &s->cpu_system_usec, TICKS },
        { NULL, NULL, AS_IS },
    };
    const struct flat_key *keys = strcmp(file, "memory.events") == 0  ? events
                                  : strcmp(file, "cpu.stat") == 0     ? cpu
                                  : strcmp(file, "cpuacct.stat") == 0 ? cpuacct
                                  : strcmp(file, "memory.stat") == 0  ? memstat
                                                                      : NULL;
    if (keys == NULL)
        return false;
    parse_flat(text, keys);
    return true;
}

int brig_cgroup_stats_parse(const char *file, const char *text, struct brig_cgroup_stats *s)
{
    if (parse_single(file, text, s) || parse_keyed(file, text, s))
        return 0;
    if (strcmp(file, "io.stat") == 0)
        parse_io_stat(text, s);
    else if (strcmp(file, "memory.memsw.usage_in_bytes") == 0)
        parse_memsw(text, s->memory_current, &s->memory_swap_current);
    else if (strcmp(file, "memory.memsw.limit_in_bytes") == 0)
        parse_memsw(text, s->memory_max, &s->memory_swap_max);
    else if (strcmp(file, "memory.memsw.failcnt") == 0)
        parse_failcnt(text, &s->memory_events_max);
    else if (strcmp(file, "memory.oom_control") == 0)
        parse_oom_control(text, s);
    else if (strcmp(file, "blkio.throttle.io_service_bytes") == 0
             || strcmp(file, "blkio.throttle.io_service_bytes_recursive") == 0)
        parse_blkio(text, &s->io_rbytes, &s->io_wbytes);
    else if (strcmp(file, "blkio.throttle.io_serviced") == 0
             || strcmp(file, "blkio.throttle.io_serviced_recursive") == 0)
        parse_blkio(text, &s->io_rios, &s->io_wios);
    else
        return -1;
    return 0;
}

int brig_cgroup_stats_read_at(int dfd, const char *file, struct brig_cgroup_stats *out,
                              brig_error_t *err)
{
    cleanup_free char *text = NULL;
    if (brig_read_file_at(dfd, file, &text, NULL, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return -1;
        brig_error_release(err);
        return 1;
    }
    brig_cgroup_stats_parse(file, text, out);
    return 0;
}
