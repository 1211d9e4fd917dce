#define _GNU_SOURCE
/* Unit properties for the systemd driver (systemd.h): the unit's own, the
 * resources systemd can express (read off the cgroup v2 file plan, which
 * has already turned the spec into cgroup terms), the device rules, and
 * the spec's org.systemd.property.* annotations. Pure. */
#include "cgroup/systemd.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

void brig_systemd_props_free(struct brig_systemd_props *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->items[i]);
    free(p->items);
    *p = (struct brig_systemd_props){ 0 };
}

int brig_systemd_props_add(struct brig_systemd_props *p, brig_error_t *err, const char *fmt, ...)
{
    char **items = realloc(p->items, (p->n + 1) * sizeof *items);
    if (items == NULL)
        return brig_error_set(err, ENOMEM, "unit properties");
    p->items = items;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&items[p->n], fmt, ap);
    va_end(ap);
    if (r < 0)
        return brig_error_set(err, ENOMEM, "unit properties");
    p->n++;
    return 0;
}

/* s as a GVariant string literal: '...' with ' and \ escaped. */
static char *quoted(const char *s)
{
    size_t n = strlen(s);
    char *q = malloc(2 * n + 3), *o = q;
    if (q == NULL)
        return NULL;
    *o++ = '\'';
    for (; *s; s++) {
        if (*s == '\'' || *s == '\\')
            *o++ = '\\';
        if (*s == '\n' || *s == '\t' || *s == '\r') {
            *o++ = '\\';
            *o++ = *s == '\n' ? 'n' : *s == '\t' ? 't' : 'r';
            continue;
        }
        *o++ = *s;
    }
    *o++ = '\'';
    *o = '\0';
    return q;
}

int brig_systemd_props_unit(const struct brig_systemd_scope *s, const char *id,
                            struct brig_systemd_props *p, brig_error_t *err)
{
    cleanup_free char *desc_text = NULL;
    cleanup_free char *slice = quoted(s->slice);
    if (asprintf(&desc_text, "brig container %s", id) < 0)
        desc_text = NULL;
    cleanup_free char *desc = desc_text ? quoted(desc_text) : NULL;
    if (slice == NULL || desc == NULL)
        return brig_error_set(err, ENOMEM, "unit properties");
    bool scope = strstr(s->unit, ".scope") != NULL;
    if (brig_systemd_props_add(p, err, "Description=%s", desc) < 0
        || (scope && brig_systemd_props_add(p, err, "Slice=%s", slice) < 0)
        || brig_systemd_props_add(p, err, "Delegate=true") < 0
        || brig_systemd_props_add(p, err, "MemoryAccounting=true") < 0
        || brig_systemd_props_add(p, err, "CPUAccounting=true") < 0
        || brig_systemd_props_add(p, err, "IOAccounting=true") < 0
        || brig_systemd_props_add(p, err, "TasksAccounting=true") < 0
        || brig_systemd_props_add(p, err, "DefaultDependencies=false") < 0)
        return -1;
    return 0;
}

/* ---- resources ---- */

/* "max" (no limit) is systemd's infinity. */
static int limit_value(const char *v, uint64_t *out)
{
    if (strcmp(v, "max") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    *out = strtoull(v, &end, 10);
    return errno || end == v || *end ? -1 : 0;
}

/* "0-2,5" → the bytes of the CPU (or node) mask, lowest first, as
 * AllowedCPUs wants them: "[byte 0x07, 0x00]"... */
static int mask_text(const char *list, char **out)
{
    uint8_t bits[1024] = { 0 };
    int top = -1;
    for (const char *s = list; *s;) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0 || a >= 8192)
            return -1;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b >= 8192)
                return -1;
        }
        for (long i = a; i <= b; i++)
            bits[i / 8] |= (uint8_t) (1u << (i % 8));
        top = b > top ? (int) b : top;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    if (top < 0)
        return 1;
    size_t len = 0;
    cleanup_file FILE *f = open_memstream(out, &len);
    if (f == NULL)
        return -1;
    for (int i = 0; i <= top / 8; i++)
        fprintf(f, "%s0x%02x", i ? ", " : "[byte ", bits[i]);
    fputc(']', f);
    return fclose(brig_steal_ptr(f)) == 0 ? 0 : -1;
}

/* The per-device lists (a(st)), gathered over the writes. */
enum { IO_WEIGHTS, IO_RBPS, IO_WBPS, IO_RIOPS, IO_WIOPS, IO_LISTS };
static const char *const io_props[IO_LISTS] = { "IODeviceWeight", "IOReadBandwidthMax",
                                                "IOWriteBandwidthMax", "IOReadIOPSMax",
                                                "IOWriteIOPSMax" };
static const char *const io_keys[IO_LISTS] = { NULL, "rbps", "wbps", "riops", "wiops" };

struct io_lists {
    char *text[IO_LISTS];
    size_t len[IO_LISTS];
    FILE *f[IO_LISTS];
};

static int io_entry(struct io_lists *l, int which, const char *dev, uint64_t v)
{
    if (l->f[which] == NULL
        && (l->f[which] = open_memstream(&l->text[which], &l->len[which])) == NULL)
        return -1;
    fprintf(l->f[which], "%s('/dev/block/%s', uint64 %" PRIu64 ")", ftell(l->f[which]) ? ", " : "[",
            dev, v);
    return 0;
}

/* "8:0 rbps=1048576" (io.max) or "8:0 500" (io.weight) into its list. */
static int io_line(struct io_lists *l, const char *file, const char *value)
{
    char dev[64], rest[64];
    if (sscanf(value, "%63s %63s", dev, rest) != 2 || strspn(dev, "0123456789:") != strlen(dev))
        return -1;
    uint64_t v;
    if (strcmp(file, "io.weight") == 0)
        return limit_value(rest, &v) < 0 ? -1 : io_entry(l, IO_WEIGHTS, dev, v);
    char *eq = strchr(rest, '=');
    if (eq == NULL)
        return -1;
    *eq = '\0';
    for (int i = IO_RBPS; i < IO_LISTS; i++)
        if (strcmp(rest, io_keys[i]) == 0)
            return limit_value(eq + 1, &v) < 0 ? -1 : io_entry(l, i, dev, v);
    return -1;
}

static int cpu_max(const char *value, struct brig_systemd_props *p, brig_error_t *err)
{
    char quota[32];
    uint64_t period = 0, q;
    if (sscanf(value, "%31s %" SCNu64, quota, &period) != 2 || period == 0
        || limit_value(quota, &q) < 0)
        return brig_error_set(err, 0, "cpu.max `%s`: unexpected", value);
    uint64_t per_sec = UINT64_MAX;
    if (q != UINT64_MAX) {
        /* systemd keeps whole percents: round up, so cpu.max below can
         * still be set to what was asked */
        per_sec = q * 1000000 / period;
        if (per_sec % 10000)
            per_sec = (per_sec / 10000 + 1) * 10000;
    }
    if (brig_systemd_props_add(p, err, "CPUQuotaPerSecUSec=uint64 %" PRIu64, per_sec) < 0)
        return -1;
    return brig_systemd_props_add(p, err, "CPUQuotaPeriodUSec=uint64 %" PRIu64, period);
}

static const struct {
    const char *file, *prop;
} limit_props[] = {
    { "memory.max", "MemoryMax" },          { "memory.low", "MemoryLow" },
    { "memory.high", "MemoryHigh" },        { "memory.min", "MemoryMin" },
    { "memory.swap.max", "MemorySwapMax" }, { "pids.max", "TasksMax" },
    { "cpu.weight", "CPUWeight" },
};

static int one_write(const struct brig_cgroup_write *w, struct io_lists *io,
                     struct brig_systemd_props *p, brig_error_t *err)
{
    uint64_t v;
    for (size_t i = 0; i < sizeof limit_props / sizeof *limit_props; i++) {
        if (strcmp(w->file, limit_props[i].file) != 0)
            continue;
        if (limit_value(w->value, &v) < 0)
            return brig_error_set(err, 0, "%s `%s`: not a number", w->file, w->value);
        return brig_systemd_props_add(p, err, "%s=uint64 %" PRIu64, limit_props[i].prop, v);
    }
    if (strcmp(w->file, "cpu.max") == 0)
        return cpu_max(w->value, p, err);
    bool cpus = strcmp(w->file, "cpuset.cpus") == 0;
    if (cpus || strcmp(w->file, "cpuset.mems") == 0) {
        cleanup_free char *mask = NULL;
        int r = mask_text(w->value, &mask);
        if (r < 0)
            return brig_error_set(err, 0, "%s `%s`: not a list of numbers", w->file, w->value);
        return r ? 0
                 : brig_systemd_props_add(p, err, "%s=%s",
                                          cpus ? "AllowedCPUs" : "AllowedMemoryNodes", mask);
    }
    if (strcmp(w->file, "io.weight") == 0 && strncmp(w->value, "default ", 8) == 0) {
        if (limit_value(w->value + 8, &v) < 0)
            return brig_error_set(err, 0, "io.weight `%s`: not a number", w->value);
        return brig_systemd_props_add(p, err, "IOWeight=uint64 %" PRIu64, v);
    }
    if ((strcmp(w->file, "io.weight") == 0 || strcmp(w->file, "io.max") == 0)
        && io_line(io, w->file, w->value) < 0)
        return brig_error_set(err, 0, "%s `%s`: unexpected", w->file, w->value);
    return 0;
}

int brig_systemd_props_resources(const struct brig_cgroup_write *w, size_t n,
                                 struct brig_systemd_props *p, brig_error_t *err)
{
    struct io_lists io = { 0 };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = one_write(&w[i], &io, p, err);
    for (int i = 0; i < IO_LISTS; i++) {
        if (io.f[i] == NULL)
            continue;
        fputc(']', io.f[i]);
        if (fclose(io.f[i]) != 0 && rc == 0)
            rc = brig_error_set(err, ENOMEM, "unit properties");
        if (rc == 0)
            rc = brig_systemd_props_add(p, err, "%s=%s", io_props[i], io.text[i]);
        free(io.text[i]);
    }
    return rc;
}

/* ---- devices ---- */

/* The name /proc/devices gives major `major` of the type ('c' or 'b'). */
static bool major_name(const char *proc_devices, char type, long major, char *name, size_t size)
{
    const char *head = type == 'c' ? "Character devices:" : "Block devices:";
    const char *s = proc_devices ? strstr(proc_devices, head) : NULL;
    for (s = s ? strchr(s, '\n') : NULL; s && s[1] && s[1] != '\n'; s = strchr(s + 1, '\n')) {
        long m;
        char found[64];
        if (sscanf(s + 1, "%ld %63s", &m, found) == 2 && m == major && strlen(found) < size) {
            strcpy(name, found);
            return true;
        }
    }
    return false;
}

/* One exception of a deny-all state ("c 136:* rwm") as a DeviceAllow
 * entry; false when systemd's list can't hold it. */
static bool allow_entry(const char *line, const char *proc_devices, FILE *f)
{
    char type, maj[16], min[16], acc[8];
    if (sscanf(line, "%c %15[0-9*]:%15[0-9*] %7[rwm]", &type, maj, min, acc) != 4
        || (type != 'c' && type != 'b'))
        return false;
    const char *kind = type == 'c' ? "char" : "block";
    const char *sep = ftell(f) > 1 ? ", " : "";
    if (strcmp(maj, "*") == 0)
        return strcmp(min, "*") == 0 && fprintf(f, "%s('%s-*', '%s')", sep, kind, acc) > 0;
    if (strcmp(min, "*") != 0)
        return fprintf(f, "%s('/dev/%s/%s:%s', '%s')", sep, kind, maj, min, acc) > 0;
    char name[64];
    if (!major_name(proc_devices, type, strtol(maj, NULL, 10), name, sizeof name))
        return false;
    return fprintf(f, "%s('%s-%s', '%s')", sep, kind, name, acc) > 0;
}

static int devices_list(const struct brig_cgroup_write *w, size_t n, const char *proc_devices,
                        char **out)
{
    /* an allow-list is "deny a" and then its exceptions */
    if (n == 0 || strcmp(w[0].file, "devices.deny") != 0 || strcmp(w[0].value, "a") != 0)
        return 1;
    size_t len = 0;
    cleanup_file FILE *f = open_memstream(out, &len);
    if (f == NULL)
        return -1;
    fputc('[', f);
    fflush(f);
    for (size_t i = 1; i < n; i++)
        if (strcmp(w[i].file, "devices.allow") != 0 || !allow_entry(w[i].value, proc_devices, f))
            return 1;
    fputc(']', f);
    return fclose(brig_steal_ptr(f)) == 0 ? 0 : -1;
}

int brig_systemd_props_devices(const struct brig_device_rule *rules, size_t n_rules,
                               const char *proc_devices, struct brig_systemd_props *p,
                               brig_error_t *err)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    cleanup_free char *list = NULL;
    int r = 1;
    brig_error_t ignored = NULL;
    /* rules a v1 list can't hold are no list systemd can hold either */
    if (brig_cgroup_v1_devices_state(rules, n_rules, &w, &n, &ignored) == 0) {
        r = devices_list(w, n, proc_devices, &list);
        brig_cgroup_plan_free(w, n);
    }
    brig_error_release(&ignored);
    if (r < 0)
        return brig_error_set(err, ENOMEM, "unit properties");
    if (r == 0 && strcmp(list, "[]") == 0)
        return brig_systemd_props_add(p, err, "DevicePolicy='strict'") < 0
                   ? -1
                   : brig_systemd_props_add(p, err, "DeviceAllow=@a(ss) []");
    if (r == 0)
        return brig_systemd_props_add(p, err, "DevicePolicy='strict'") < 0
                   ? -1
                   : brig_systemd_props_add(p, err, "DeviceAllow=%s", list);
    if (brig_systemd_props_add(p, err, "DevicePolicy='auto'") < 0)
        return -1;
    return brig_systemd_props_add(p, err, "DeviceAllow=@a(ss) []");
}

/* ---- annotations ---- */

#define ANNOTATION_PREFIX "org.systemd.property."

/* "TimeoutStopSec" = "15" → "TimeoutStopUSec=uint64 15000000". */
static int seconds_to_usec(const char *name, size_t base_len, const char *value,
                           struct brig_systemd_props *p, brig_error_t *err)
{
    struct brig_variant v;
    if (brig_variant_parse(value, &v, err) < 0)
        return brig_error_wrap(err, "annotation %s%s", ANNOTATION_PREFIX, name);
    uint64_t usec;
    char t = v.sig[0];
    bool ok = v.sig[1] == '\0' && strchr("ynqiuxtd", t);
    if (ok && t == 'd')
        ok = v.d >= 0 && v.d < 1.8e13, usec = (uint64_t) (v.d * 1e6 + 0.5);
    else if (ok && strchr("nix", t))
        ok = (int64_t) v.u >= 0 && v.u <= UINT64_MAX / 1000000, usec = v.u * 1000000;
    else if (ok)
        ok = v.u <= UINT64_MAX / 1000000, usec = v.u * 1000000;
    brig_variant_free(&v);
    if (!ok)
        return brig_error_kind(err, BRIG_E_INPUT, "annotation %s%s: `%s` is no number of seconds",
                               ANNOTATION_PREFIX, name, value);
    return brig_systemd_props_add(p, err, "%.*sUSec=uint64 %" PRIu64, (int) base_len, name, usec);
}

int brig_systemd_props_annotations(const struct brig_kv_list *annotations,
                                   struct brig_systemd_props *p, brig_error_t *err)
{
    for (size_t i = 0; i < annotations->n; i++) {
        const char *key = annotations->items[i].key, *value = annotations->items[i].value;
        if (strncmp(key, ANNOTATION_PREFIX, strlen(ANNOTATION_PREFIX)) != 0)
            continue;
        const char *name = key + strlen(ANNOTATION_PREFIX);
        size_t len = strlen(name);
        if (len > 4 && strcmp(name + len - 3, "Sec") == 0
            && islower((unsigned char) name[len - 4])) {
            if (seconds_to_usec(name, len - 3, value, p, err) < 0)
                return -1;
            continue;
        }
        cleanup_free char *item = NULL, *parsed_name = NULL;
        struct brig_variant v;
        if (asprintf(&item, "%s=%s", name, value) < 0) {
            item = NULL;
            return brig_error_set(err, ENOMEM, "unit properties");
        }
        if (brig_systemd_prop_parse(item, &parsed_name, &v, err) < 0)
            return brig_error_wrap(err, "annotation %s", key);
        brig_variant_free(&v);
        if (brig_systemd_props_add(p, err, "%s", item) < 0)
            return -1;
    }
    return 0;
}
