/* cgroups: the container's cgroup, its limits, freezing, killing,
 * statistics. This is the one interface the lifecycle uses; behind it sit
 * the backends (cgroup/backend.h), each a table of the same operations,
 * chosen by the host's layout (brig_cgroup_layout): cgroup v2 (v2.c,
 * v2_stats.c) on a unified host; the v1 hierarchies (v1*.c) on hybrid and
 * legacy hosts, where a hybrid host's v2 tree holds the container too. A
 * limit that needs a controller the host doesn't have fails by name. The
 * pure parts (where a cgroup goes, which files a resources section
 * becomes, what a stats file says) are cgroup_plan.c, v1_plan.c,
 * v1_devices_plan.c, v1_devices_update.c, sub.c and stats.c; the device
 * program is devices_bpf* on v2, devices.allow/deny lists on v1. */
#ifndef BRIG_CGROUP_H
#define BRIG_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

/* The host's layout, found once per process (statfs of /sys/fs/cgroup and
 * /sys/fs/cgroup/unified): UNIFIED is cgroup2 on /sys/fs/cgroup; HYBRID is
 * v1 hierarchies there and cgroup2 at /sys/fs/cgroup/unified; LEGACY is v1
 * hierarchies only; NONE is no cgroup file system at all. */
enum brig_cgroup_layout {
    BRIG_CGROUP_LAYOUT_NONE,
    BRIG_CGROUP_LAYOUT_UNIFIED,
    BRIG_CGROUP_LAYOUT_HYBRID,
    BRIG_CGROUP_LAYOUT_LEGACY,
};
enum brig_cgroup_layout brig_cgroup_layout(void);
const char *brig_cgroup_layout_name(enum brig_cgroup_layout l);

/* Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup when that is
 * cgroup2, else /sys/fs/cgroup/unified; NULL (and *err) when there's none. */
const char *brig_cgroup_root(brig_error_t *err);

/* linux.cgroupsPath → a path relative to the cgroup root ("a/b/c", no
 * leading slash, cleaned, no ".." that would leave the root). Absolute
 * paths are taken from the root; relative ones from the parent of the
 * caller's own cgroup; absent means "brig/<id>" beside it, i.e. also under
 * the parent of the caller's cgroup (so for a caller in /a/b: "/x" → "x",
 * "x" → "a/x", absent → "a/brig/<id>"). The parent rather than the
 * caller's cgroup itself, because a cgroup holding the caller can't give
 * controllers to children. ".." is resolved lexically and stops at the
 * root; a path that ends at the root itself is an error. Pure when
 * own_cgroup is given (the caller's cgroup from /proc/self/cgroup, e.g. "/"
 * or "/user.slice"). */
int brig_cgroup_path_resolve(const char *cgroups_path, const char *id, const char *own_cgroup,
                             char **out, brig_error_t *err);
/* The same with relative and absent paths under `base` itself ("/a/b"):
 * v1 hierarchies nest a container under the caller's own cgroup, as v1
 * lets a cgroup with processes have children. */
int brig_cgroup_path_resolve_under(const char *cgroups_path, const char *id, const char *base,
                                   char **out, brig_error_t *err);

/* The caller's own cgroup in the v2 hierarchy ("0::" of /proc/self/cgroup,
 * e.g. "/user.slice"); "/" when there is none. Caller frees. */
char *brig_cgroup_own(void);
/* The caller's own cgroup, opened (on v1: its cgroup in every hierarchy),
 * for a process that steps into a container's cgroup and back. */
struct brig_cgroup;
int brig_cgroup_open_own(struct brig_cgroup *out, brig_error_t *err);
/* For each hierarchy the cgroup is in: its controllers ("cpu,cpuacct",
 * "name=systemd"; NULL for the v2 tree) and the cgroup's path from the
 * hierarchy's root ("/brig/c1"), as criu's cgroup roots want them. */
int brig_cgroup_each_root(const struct brig_cgroup *cg,
                          int (*fn)(void *data, const char *controllers, const char *root),
                          void *data, brig_error_t *err);
/* The directory whose freezing stops the container: criu's freeze cgroup. */
const char *brig_cgroup_freezer_dir(const struct brig_cgroup *cg);

/* The controllers a resources section needs ("memory", "pids", "cpu",
 * "cpuset", "io", "hugetlb", "rdma"), as a NULL-terminated static list in
 * *out (at most 8). Pure. */
void brig_cgroup_needed_controllers(const struct brig_resources *r, const char *out[8]);

/* One file write the resources turn into: "memory.max" ← "1048576". Pure
 * translation, unit-testable: shares → cpu.weight, quota/period → cpu.max,
 * blockIO → io.weight / io.max lines, unified keys validated (a plain file
 * name of this cgroup: no "/", no "..", and not cgroup.procs-like core
 * files that would move processes). */
struct brig_cgroup_write {
    char *file;
    char *value;
};
int brig_cgroup_plan(const struct brig_resources *r, struct brig_cgroup_write **out, size_t *n,
                     brig_error_t *err);
void brig_cgroup_plan_free(struct brig_cgroup_write *w, size_t n);

/* The controllers a plan writes files of (static names, NULL-terminated,
 * in the order they are enabled), and the spec field that asked for one,
 * for error messages ("linux.resources.memory"). Pure. */
#define BRIG_CGROUP_MAX_CONTROLLERS 12
void brig_cgroup_plan_controllers(const struct brig_cgroup_write *w, size_t n,
                                  const char *out[BRIG_CGROUP_MAX_CONTROLLERS + 1]);
void brig_cgroup_needed_by(const struct brig_resources *r, const char *controller, char *buf,
                           size_t size);

/* The container's cgroup, opened. `path` is what the state file records
 * and brig_cgroup_open() takes back: on v2 the absolute directory; on v1
 * the container's directory in each hierarchy, one per line, every line
 * ending in "\n" (so a v1 path always ends in one, and a v2 path never
 * does). */
struct brig_cgroup_backend;
struct brig_cgroup_v1;
struct brig_cgroup_systemd;
struct brig_cgroup {
    char *path;                                /* e.g. /sys/fs/cgroup/brig/c1 */
    int dir_fd;                                /* v2: O_DIRECTORY fd of it; v1: the
                                                  hybrid host's v2 directory, or -1 */
    const struct brig_cgroup_backend *backend; /* the one that made or opened it */
    struct brig_cgroup_v1 *v1;                 /* v1: every hierarchy's directory */
    struct brig_cgroup_systemd *systemd;       /* systemd: the unit, and its cgroup
                                                  as the cgroupfs backend has it */
};

/* Creates the container's cgroup for linux.cgroupsPath (NULL or "" for
 * none) and the container id, placed as brig_cgroup_path_resolve() says
 * on v2 and brig_cgroup_path_resolve_under() the caller's own cgroup in
 * each v1 hierarchy; makes the parents (mkdir -p), enables the needed
 * controllers (v2: in every ancestor's cgroup.subtree_control), checks
 * they are available (the error names the missing controller), applies
 * the resources and the device rules. On failure nothing new is left
 * behind. */
int brig_cgroup_create(const char *cgroups_path, const char *id, const struct brig_resources *r,
                       struct brig_cgroup *out, brig_error_t *err);
/* The same without the device program: the caller attaches one
 * (brig_cgroup_devices_attach) before anything of the container runs. On
 * v1 the device lists are written here all the same. */
int brig_cgroup_create_without_devices(const char *cgroups_path, const char *id,
                                       const struct brig_resources *r, struct brig_cgroup *out,
                                       brig_error_t *err);
/* The same through systemd (--systemd-cgroup; cgroup/systemd.c):
 * cgroupsPath is "slice:prefix:name", the cgroup is a transient unit's,
 * started when the first process is placed in it (brig_cgroup_add_pid;
 * brig_cgroup_clone_fd is -1 until then), and `annotations` may add unit
 * properties (org.systemd.property.*). `r` must stay valid until then:
 * the limits are written again once systemd has set up the unit. The
 * path recorded is "systemd:UNIT PATH". */
int brig_cgroup_create_systemd(const char *cgroups_path, const char *id,
                               const struct brig_resources *r,
                               const struct brig_kv_list *annotations, bool devices,
                               struct brig_cgroup *out, brig_error_t *err);
/* Opens an existing one by the path the state file recorded. */
int brig_cgroup_open(const char *path, struct brig_cgroup *out, brig_error_t *err);
void brig_cgroup_close(struct brig_cgroup *cg);
/* A cgroup closed when it goes out of scope (base/cleanup.h); start it as
 * BRIG_CGROUP_INIT so an early return finds nothing to close. */
#define BRIG_CGROUP_INIT           \
    {                              \
        NULL, -1, NULL, NULL, NULL \
    }
#define cleanup_cgroup __attribute__((cleanup(brig_cgroup_close)))

/* linux.resources.devices as a compiled device program (devices_bpf.c), kept
 * apart from the cgroup so create can attach it after the clone, while the
 * init is still setting up (the verifier then runs beside it). */
struct bpf_insn;
struct brig_devices_program {
    struct bpf_insn *insns;
    size_t len;
};
int brig_cgroup_devices_compile(const struct brig_resources *r, struct brig_devices_program *out,
                                brig_error_t *err);
int brig_cgroup_devices_attach(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                               brig_error_t *err);

/* Applies (again) a resources section: used by create and by `update`. */
int brig_cgroup_apply(const struct brig_cgroup *cg, const struct brig_resources *r,
                      brig_error_t *err);

int brig_cgroup_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
/* The directory fd a clone3(CLONE_INTO_CGROUP) can start a process in,
 * when that alone places it wholly (v2); -1 when the runtime must place
 * it with brig_cgroup_add_pid() instead (v1 hierarchies). */
int brig_cgroup_clone_fd(const struct brig_cgroup *cg);
/* What a new process needs to enter a v1 container by itself, so that
 * nobody has to move it by pid. Moving a pid (cgroup.procs) takes the
 * kernel's global threadgroup lock, whose first taker waits for an RCU
 * grace period: ~20 ms of every exec on a 2-CPU host. A single thread
 * writing "0" to a hierarchy's `tasks` moves only itself and takes no
 * such lock. `fds` are those `tasks` files, open for writing (the
 * opener's credentials are what the kernel checks, so the process may
 * write them from a user namespace); `clone_fd` is the hybrid host's v2
 * directory, for clone3(CLONE_INTO_CGROUP), or -1. With `unfrozen` the
 * hierarchy that freezes is left out: the caller adds the process there
 * once it is set up. Other backends leave it empty (n 0, clone_fd -1):
 * brig_cgroup_clone_fd places their processes. */
struct brig_cgroup_self_join {
    int *fds;
    size_t n;
    int clone_fd; /* borrowed from the cgroup */
};
#define BRIG_CGROUP_SELF_JOIN_INIT \
    {                              \
        NULL, 0, -1                \
    }
int brig_cgroup_self_join_open(const struct brig_cgroup *cg, bool unfrozen,
                               struct brig_cgroup_self_join *out, brig_error_t *err);
/* In the new process, before anything else: "0" to each; -1 with errno. */
int brig_cgroup_self_join(const struct brig_cgroup_self_join *j);
void brig_cgroup_self_join_close(struct brig_cgroup_self_join *j);
#define cleanup_self_join __attribute__((cleanup(brig_cgroup_self_join_close)))
/* The sub-cgroups of `exec --cgroup`, as runc takes them (sub.c): each
 * argument "<path>", for every hierarchy (then it is the only one; the
 * one form cgroup v2 has), or "<controller>[,<controller>...]:<path>",
 * for the hierarchies that bind those controllers (v1); an entry per
 * controller. A second ":", an empty controller name or one named twice
 * is refused. Pure. */
struct brig_cgroup_sub {
    const char *arg;  /* the argument it came from, for messages */
    char *controller; /* "memory", "name=systemd"; NULL: every hierarchy */
    char *path;       /* below the container's cgroup, cleaned as if absolute so
                         ".." stops there: "a/b", "" for the cgroup itself */
};
int brig_cgroup_sub_parse(const char *const *args, size_t n_args, struct brig_cgroup_sub **out,
                          size_t *n, brig_error_t *err);
void brig_cgroup_sub_free(struct brig_cgroup_sub *s, size_t n);
/* The container's cgroup with the processes' hierarchies moved to those
 * sub-cgroups (brig_cgroup_sub_parse's arguments), each made where
 * missing (its parent must exist), opened as a cgroup of its own. On v1
 * a hierarchy no argument names stays the container's own; on v2 a
 * controller prefix is refused. */
int brig_cgroup_open_sub(const struct brig_cgroup *cg, const char *const *args, size_t n_args,
                         struct brig_cgroup *out, brig_error_t *err);
int brig_cgroup_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err);
/* True when cgroup.freeze is 1 (what `state` reports as paused). */
bool brig_cgroup_is_frozen(const struct brig_cgroup *cg);
/* What brig_cgroup_is_frozen says of the cgroup a path (as the state
 * records it) names, read from the directories it lists without opening
 * the cgroup: no mount table, no hierarchy checks, for a status. */
bool brig_cgroup_frozen_at(const char *path);
/* cgroup.kill where the kernel has it, else SIGKILL to every pid in it. */
int brig_cgroup_kill_all(const struct brig_cgroup *cg, brig_error_t *err);
/* Sends sig to every process in the cgroup (and below it). */
int brig_cgroup_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err);
/* The pids of cgroup.procs (recursively), caller frees. */
int brig_cgroup_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err);
/* Removes the cgroup once empty, waiting briefly for dying processes, and
 * its child cgroups; no parent (the "brig/" level stays for the next). */
int brig_cgroup_destroy(const char *path, brig_error_t *err);
/* The path brig_cgroup_create() would give the cgroup, made of nothing:
 * recorded before the create, so that a runtime killed half-way through
 * it leaves a record of the directories it may have made. *out is NULL
 * where the host's backend can't say. */
int brig_cgroup_planned_path(const char *cgroups_path, const char *id, char **out,
                             brig_error_t *err);
/* What a killed create may have left of such a path: each directory of it
 * removed if it is an empty cgroup with no children, and left alone
 * otherwise (it is not known to be ours). */
void brig_cgroup_remove_planned(const char *path);
/* After a failed create's brig_cgroup_destroy: the parent directories
 * that create made, where they are empty (v1; v2 keeps its parents). */
void brig_cgroup_remove_parents_made(const struct brig_cgroup *cg);
/* A process that something else placed in the cgroup (criu's restored
 * init), told to the backend: the systemd driver starts its unit with it
 * when no process has started it yet; a no-op otherwise. */
int brig_cgroup_adopt(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
/* Places pid where the freezer does not act (v1: every hierarchy but the
 * freezer's; v2: nowhere), so that a process joining a paused container
 * is held by its limits at once and by the freeze only once it is set up
 * (brig_cgroup_add_pid then). */
int brig_cgroup_add_pid_unfrozen(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);

struct brig_cgroup_stats {
    uint64_t memory_current, memory_max, memory_swap_current, memory_swap_max;
    uint64_t memory_events_oom, memory_events_oom_kill, memory_events_max;
    /* memory.stat: anonymous memory (v1: total_rss), page cache (total_cache),
     * the inactive part of it, page faults and major ones */
    uint64_t memory_anon, memory_file, memory_inactive_file, memory_pgfault, memory_pgmajfault;
    uint64_t pids_current, pids_max;
    uint64_t cpu_usage_usec, cpu_user_usec, cpu_system_usec;
    uint64_t cpu_nr_periods, cpu_nr_throttled, cpu_throttled_usec;
    /* io.stat summed over devices */
    uint64_t io_rbytes, io_wbytes, io_rios, io_wios;
};
/* Fields a controller doesn't provide stay 0; "max" (v2) and the v1
 * "unlimited" values read as UINT64_MAX. On v1 the numbers are brought to
 * v2's units and meanings: the swap fields are the swap alone (memsw less
 * memory), times in microseconds, memory_events_max the limit's hits
 * (memory.failcnt and memory.memsw.failcnt), and memory_events_oom the
 * kills plus one while the cgroup is under OOM. */
int brig_cgroup_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                      brig_error_t *err);
/* Adds what one stats file's text says to *out ("memory.current",
 * "memory.events", "cpu.stat", "io.stat", ...; on v1 "memory.usage_in_bytes",
 * "memory.oom_control", "cpuacct.stat", "blkio.throttle.io_serviced", ...).
 * v1's memory.memsw.* files are told less (failcnt: plus) the memory.*
 * value already in *out, so parse those first. Pure. Returns -1 for a file name it doesn't
 * know, 0 otherwise (unparsable lines are skipped). */
int brig_cgroup_stats_parse(const char *file, const char *text, struct brig_cgroup_stats *out);

/* OOM notification: *fd (non-blocking, close-on-exec) becomes readable
 * each time the cgroup's OOM killer acts (v2: inotify on memory.events;
 * v1: an eventfd registered through cgroup.event_control on
 * memory.oom_control). Read it (any buffer of 64 bytes or more) to rearm;
 * brig_cgroup_oom_kills() then tells the count. It may also fire when the
 * count hasn't moved (other events, the cgroup's removal), and on v1 it
 * fires as the killer sets out, before the kill is counted: a caller that
 * finds the count unchanged looks again a little later (tens of ms).
 * The caller closes *fd. */
int brig_cgroup_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err);
int brig_cgroup_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err);

/* ---- v1 (pure; v1_plan.c, v1_devices_plan.c, v1_devices_update.c) ---- */

/* The files a resources section becomes on v1 hierarchies, each named
 * "<controller>.<file>" ("memory.limit_in_bytes", "cpu.cfs_quota_us",
 * "blkio.throttle.read_bps_device", "net_cls.classid", ...), in the order
 * they should be written; the writer retries a write the kernel refused
 * with EINVAL once the rest are done (memsw against the limit, quota
 * against the period). Kernel-memory fields are accepted and left out, as
 * runc does; devices and `unified` are not part of it. As in the v2 plan,
 * 0 leaves a limit, shares or weight unset, and a pids limit of 0 or below
 * is "max". */
int brig_cgroup_v1_plan(const struct brig_resources *r, struct brig_cgroup_write **out, size_t *n,
                        brig_error_t *err);
/* linux.resources.devices as devices.deny/devices.allow writes
 * (v1_devices_plan.c): "a" denied first, then the spec's rules in order,
 * then the default devices (the eBPF program's, devices_bpf.h), with the
 * access the eBPF program would give. A rule v1 can't express that way (a
 * deny cutting into a wider allow, say) is refused with its index. */
int brig_cgroup_v1_devices_plan(const struct brig_device_rule *rules, size_t n_rules,
                                struct brig_cgroup_write **out, size_t *n, brig_error_t *err);
/* For unit tests: what a v1 devices cgroup, starting from "allow all",
 * answers after the writes (a model of the kernel's exception list) for
 * `access` ("r", "w", "rw", "m") to type ('c' or 'b') major:minor; 1
 * allow, 0 deny, -1 a write or an argument it can't read. */
int brig_cgroup_v1_devices_eval(const struct brig_cgroup_write *w, size_t n, char type,
                                int64_t major, int64_t minor, const char *access);
/* The state those writes leave a new cgroup in, in its shortest form: "a"
 * to the default's file (devices.deny for an allow-list, devices.allow
 * for allow-all), then each exception to the other file, once
 * ("c 1:3 rwm"). */
int brig_cgroup_v1_devices_state(const struct brig_device_rule *rules, size_t n_rules,
                                 struct brig_cgroup_write **out, size_t *n, brig_error_t *err);
/* The writes that take a devices cgroup whose devices.list reads `list`
 * to that state without a gap, for a container whose processes are
 * running (v1_devices_update.c): allows of the access that is new, then
 * denies of the access that goes, each to the one exception concerned,
 * so a device that keeps its access never loses it; nothing at all when
 * the list is the state already. "a" is written only where the default
 * must be set: "deny a" when an allow-all cgroup gets an allow-list (the
 * one moment where nothing is allowed, as the kernel has no other way),
 * "allow a" whenever the rules allow all, as an allow-all list ("a *:*
 * rwm") hides the denies it holds. */
int brig_cgroup_v1_devices_update(const char *list, const struct brig_device_rule *rules,
                                  size_t n_rules, struct brig_cgroup_write **out, size_t *n,
                                  brig_error_t *err);
/* 0 when devices.list text `list` shows the state the rules make (for
 * allow-all rules, as far as the list tells: that it allows all), else an
 * error that names the first difference. */
int brig_cgroup_v1_devices_check_list(const char *list, const struct brig_device_rule *rules,
                                      size_t n_rules, brig_error_t *err);

/* The cgroup and cgroup2 lines of /proc/self/mountinfo, found once per
 * process, from the copy saved at BRIG_CGROUP_MOUNTS_CACHE while it holds
 * (mount_lines.c). */
#define BRIG_CGROUP_MOUNTS_CACHE "/run/brig/.cgroup-mounts"
const char *brig_cgroup_mount_lines(brig_error_t *err);
/* The same if this process has found them already; NULL otherwise. */
const char *brig_cgroup_mount_lines_known(void);

#endif
