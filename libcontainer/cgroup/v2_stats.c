#define _GNU_SOURCE
/* cgroup v2 statistics: parsing the controllers' files (pure) and reading
 * them from a container's cgroup. */
#include "cgroup/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

/* "123" or "max"; anything else leaves *out alone. */
static void parse_value(const char *s, uint64_t *out)
{
    s += strspn(s, " \t");
    if (strncmp(s, "max", 3) == 0 && (s[3] == '\0' || s[3] == '\n' || s[3] == ' ')) {
        *out = UINT64_MAX;
        return;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end != s && errno == 0 && *s != '-')
        *out = v;
}

struct flat_key {
    const char *key;
    uint64_t *dst;
};

/* "key value" lines (memory.events, cpu.stat). */
static void parse_flat(const char *text, const struct flat_key *keys)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t) (nl - line) : strlen(line);
        for (const struct flat_key *k = keys; k->key; k++) {
            size_t kl = strlen(k->key);
            if (kl < len && strncmp(line, k->key, kl) == 0 && line[kl] == ' ') {
                parse_value(line + kl + 1, k->dst);
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
        { "rbytes", &s->io_rbytes },
        { "wbytes", &s->io_wbytes },
        { "rios", &s->io_rios },
        { "wios", &s->io_wios },
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

int brig_cgroup_stats_parse(const char *file, const char *text, struct brig_cgroup_stats *s)
{
    const struct flat_key singles[] = {
        { "memory.current", &s->memory_current },
        { "memory.max", &s->memory_max },
        { "memory.swap.current", &s->memory_swap_current },
        { "memory.swap.max", &s->memory_swap_max },
        { "pids.current", &s->pids_current },
        { "pids.max", &s->pids_max },
        { NULL, NULL },
    };
    for (const struct flat_key *k = singles; k->key; k++) {
        if (strcmp(file, k->key) == 0) {
            parse_value(text, k->dst);
            return 0;
        }
    }
    if (strcmp(file, "memory.events") == 0) {
        const struct flat_key keys[] = {
            { "oom", &s->memory_events_oom },
            { "oom_kill", &s->memory_events_oom_kill },
            { "max", &s->memory_events_max },
            { NULL, NULL },
        };
        parse_flat(text, keys);
        return 0;
    }
    if (strcmp(file, "cpu.stat") == 0) {
        const struct flat_key keys[] = {
            { "usage_usec", &s->cpu_usage_usec },
            { "user_usec", &s->cpu_user_usec },
            { "system_usec", &s->cpu_system_usec },
            { "nr_periods", &s->cpu_nr_periods },
            { "nr_throttled", &s->cpu_nr_throttled },
            { "throttled_usec", &s->cpu_throttled_usec },
            { NULL, NULL },
        };
        parse_flat(text, keys);
        return 0;
    }
    if (strcmp(file, "io.stat") == 0) {
        parse_io_stat(text, s);
        return 0;
    }
    return -1;
}

int brig_cgroup_v2_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                         brig_error_t *err)
{
    static const char *const files[] = {
        "memory.current",
        "memory.max",
        "memory.swap.current",
        "memory.swap.max",
        "memory.events",
        "pids.current",
        "pids.max",
        "cpu.stat",
        "io.stat",
        NULL,
    };
    memset(out, 0, sizeof *out);
    for (size_t i = 0; files[i]; i++) {
        cleanup_free char *text = NULL;
        /* A file is missing when its controller isn't enabled here: its
         * fields stay 0, as the header promises. */
        if (brig_read_file_at(cg->dir_fd, files[i], &text, NULL, err) < 0) {
            if ((*err)->errnum == ENOENT) {
                brig_error_release(err);
                continue;
            }
            return brig_error_wrap(err, "cgroup `%s`: stats", cg->path);
        }
        brig_cgroup_stats_parse(files[i], text, out);
    }
    return 0;
}
