/* The systemd cgroup driver's pure half: where `slice:prefix:name` puts a
 * container (systemd_unit.c), the unit properties a resources section and
 * the spec's org.systemd.property.* annotations become (systemd_props.c),
 * and the GVariant text those properties are written in
 * (systemd_variant.c), which brig-systemd (src/systemd/) reads back to
 * put them on the bus. The driver itself is systemd.c; it talks to
 * systemd through brig-systemd, as libsystemd can't be linked into the
 * static brig. */
#ifndef BRIG_CGROUP_SYSTEMD_H
#define BRIG_CGROUP_SYSTEMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cgroup/cgroup.h"

/* ---- the unit (systemd_unit.c) ---- */

struct brig_systemd_scope {
    char *unit;  /* "docker-abc.scope", or the name itself when it is a ".slice" */
    char *slice; /* "system.slice": the unit's Slice= */
    char *path;  /* its cgroup below the hierarchy's root: "/system.slice/docker-abc.scope" */
};
/* linux.cgroupsPath "slice:prefix:name" as runc takes it with
 * --systemd-cgroup: an empty slice is system.slice (user.slice for a user
 * instance), a name ending in ".slice" is a slice unit of its own, any
 * other is the scope "prefix-name.scope" ("name.scope" without a prefix);
 * an absent path is ":brig:<id>". Pure. */
int brig_systemd_scope_parse(const char *cgroups_path, const char *id, bool user,
                             struct brig_systemd_scope *out, brig_error_t *err);
void brig_systemd_scope_free(struct brig_systemd_scope *s);
/* "a-b-c.slice" → "/a.slice/a-b.slice/a-b-c.slice" (systemd's nesting of
 * slices by their dashes), "-.slice" → "" (the root). Pure. */
int brig_systemd_slice_path(const char *slice, char **out, brig_error_t *err);

/* ---- properties (systemd_props.c) ---- */

/* A list of unit properties, each "Name=<GVariant text>" ("MemoryMax=uint64
 * 1048576", "Delegate=true"), as brig-systemd takes them on its command
 * line. */
struct brig_systemd_props {
    char **items;
    size_t n;
};
void brig_systemd_props_free(struct brig_systemd_props *p);
#define cleanup_props __attribute__((cleanup(brig_systemd_props_free)))
int brig_systemd_props_add(struct brig_systemd_props *p, brig_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a new unit is given whatever the spec says: its description,
 * slice, delegation, accounting, no default dependencies. */
int brig_systemd_props_unit(const struct brig_systemd_scope *s, const char *id,
                            struct brig_systemd_props *p, brig_error_t *err);
/* The resources systemd can express, from the cgroup v2 file plan
 * (brig_cgroup_plan): memory.max → MemoryMax, memory.low → MemoryLow,
 * memory.high → MemoryHigh, memory.swap.max → MemorySwapMax, pids.max →
 * TasksMax, cpu.weight → CPUWeight, cpu.max → CPUQuotaPerSecUSec (rounded
 * up to whole percents, as systemd keeps it) and CPUQuotaPeriodUSec,
 * cpuset.cpus/mems → AllowedCPUs/AllowedMemoryNodes, io.weight → IOWeight
 * and IODeviceWeight, io.max → IO{Read,Write}{Bandwidth,IOPS}Max. The rest
 * of the plan has no property; the driver writes it to the files. */
int brig_systemd_props_resources(const struct brig_cgroup_write *w, size_t n,
                                 struct brig_systemd_props *p, brig_error_t *err);
/* The device rules (defaults included, as the cgroup gets them) as
 * DevicePolicy and DeviceAllow: "auto" and no list for rules that allow
 * everything, else "strict" and an entry per allowed device ("/dev/char/1:3",
 * "char-pts" for a whole major, named as `proc_devices` (the text of
 * /proc/devices) names it, "char-*" for every major). Rules systemd's list
 * can't hold (a whole minor across majors, a major /proc/devices doesn't
 * name) leave the policy to "auto": brig's own device program or lists
 * still enforce them. */
int brig_systemd_props_devices(const struct brig_device_rule *rules, size_t n_rules,
                               const char *proc_devices, struct brig_systemd_props *p,
                               brig_error_t *err);
/* The spec's annotations "org.systemd.property.NAME" = "VALUE", as CRI-O
 * and podman pass unit properties: NAME letters and digits, VALUE in
 * GVariant text ("uint64 15000000", "'inactive-or-failed'", "true"); a
 * NAME ending in "Sec" after a lower-case letter is given in seconds and
 * becomes NAMEUSec in microseconds, as runc does. Others are ignored. */
int brig_systemd_props_annotations(const struct brig_kv_list *annotations,
                                   struct brig_systemd_props *p, brig_error_t *err);

/* ---- GVariant text (systemd_variant.c) ---- */

/* One value of D-Bus's basic or container types, as read from GVariant's
 * text format: booleans, numbers with their type keyword ("uint64 5",
 * "byte 0x1f"; a bare integer is an int32, a bare decimal a double, an
 * element of a typed array or tuple takes its type), strings in single or
 * double quotes, b"..." byte strings, arrays "[...]" (an empty one typed:
 * "@as []"), tuples "(...)", and "@SIG value". */
struct brig_variant {
    char *sig;                  /* D-Bus signature of the value: "t", "as", "a(st)" */
    uint64_t u;                 /* b y q u t: the value; n i x: two's complement */
    double d;                   /* d */
    char *s;                    /* s o g */
    struct brig_variant *items; /* a: elements; (): fields */
    size_t n;
};
int brig_variant_parse(const char *text, struct brig_variant *out, brig_error_t *err);
void brig_variant_free(struct brig_variant *v);
/* "Name=<text>": Name (letters and digits, first a capital letter, as
 * systemd's property names are) and its value parsed. */
int brig_systemd_prop_parse(const char *item, char **name, struct brig_variant *value,
                            brig_error_t *err);

/* ---- the driver (systemd.c) ---- */

/* The program brig talks to systemd through: $BRIG_SYSTEMD, the one
 * beside brig (a build tree's), or the installed one. Caller frees. */
int brig_systemd_helper(char **out, brig_error_t *err);

#endif
