/* config.json (OCI runtime-spec 1.2, Linux part) as validated C structs.
 *
 * Parsing never touches the kernel, applying never re-reads JSON: everything
 * the runtime needs is here. Optional scalars carry a has_* flag; absent
 * strings are NULL; absent arrays have n == 0 and a NULL-terminated v. */
#ifndef BRIG_SPEC_H
#define BRIG_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The runtime-spec version brig implements and reports. */
#define BRIG_OCI_VERSION "1.2.0"

struct brig_strv {
    char **v; /* NULL-terminated (when n > 0), directly usable for execve */
    size_t n;
};

struct brig_kv {
    char *key;
    char *value;
};

struct brig_kv_list {
    struct brig_kv *items;
    size_t n;
};

struct brig_user {
    uint32_t uid;
    uint32_t gid;
    bool has_umask;
    uint32_t umask;
    uint32_t *additional_gids;
    size_t n_additional_gids;
    char *username;
};

struct brig_rlimit {
    char *type;   /* "RLIMIT_NOFILE" */
    int resource; /* RLIMIT_NOFILE, resolved by the parser */
    uint64_t hard;
    uint64_t soft;
};

struct brig_capabilities {
    struct brig_strv bounding;
    struct brig_strv effective;
    struct brig_strv inheritable;
    struct brig_strv permitted;
    struct brig_strv ambient;
};

struct brig_scheduler {
    char *policy; /* "SCHED_OTHER", ... */
    int32_t nice;
    int32_t priority;
    struct brig_strv flags;
    uint64_t runtime;
    uint64_t deadline;
    uint64_t period;
};

struct brig_io_priority {
    char *class; /* "IOPRIO_CLASS_RT" | "IOPRIO_CLASS_BE" | "IOPRIO_CLASS_IDLE" */
    int32_t priority;
};

struct brig_process {
    bool terminal;
    /* Not in the runtime spec: the terminal sends LF as it is (ONLCR off),
     * set on the pty before the process runs. */
    bool terminal_raw_newlines;
    bool has_console_size;
    uint32_t console_height;
    uint32_t console_width;
    struct brig_user user;
    struct brig_strv args;
    struct brig_strv env;
    char *cwd;
    struct brig_capabilities *capabilities; /* NULL when absent */
    struct brig_rlimit *rlimits;
    size_t n_rlimits;
    bool no_new_privileges;
    char *apparmor_profile;
    bool has_oom_score_adj;
    int oom_score_adj;
    char *selinux_label;
    struct brig_scheduler *scheduler;     /* NULL when absent */
    struct brig_io_priority *io_priority; /* NULL when absent */
    char *exec_cpu_affinity_initial;
    char *exec_cpu_affinity_final;
};

struct brig_root {
    char *path; /* as written; relative to the bundle unless absolute */
    bool readonly;
};

struct brig_id_mapping {
    uint32_t container_id;
    uint32_t host_id;
    uint32_t size;
};

struct brig_mount {
    char *destination;
    char *type; /* NULL when absent (bind mounts may omit it) */
    char *source;
    struct brig_strv options;
    struct brig_id_mapping *uid_mappings;
    size_t n_uid_mappings;
    struct brig_id_mapping *gid_mappings;
    size_t n_gid_mappings;
};

struct brig_hook {
    char *path;
    struct brig_strv args;
    struct brig_strv env;
    bool has_timeout;
    int timeout; /* seconds, > 0 */
};

struct brig_hook_list {
    struct brig_hook *items;
    size_t n;
};

struct brig_hooks {
    struct brig_hook_list prestart;
    struct brig_hook_list create_runtime;
    struct brig_hook_list create_container;
    struct brig_hook_list start_container;
    struct brig_hook_list poststart;
    struct brig_hook_list poststop;
};

enum brig_ns_type {
    BRIG_NS_PID,
    BRIG_NS_NETWORK,
    BRIG_NS_MOUNT,
    BRIG_NS_IPC,
    BRIG_NS_UTS,
    BRIG_NS_USER,
    BRIG_NS_CGROUP,
    BRIG_NS_TIME,
    BRIG_NS_COUNT
};

struct brig_namespace {
    enum brig_ns_type type;
    char *path; /* NULL: create a new one; else join this one */
};

struct brig_device {
    char *type; /* "c" | "b" | "u" | "p" */
    char *path;
    int64_t major;
    int64_t minor;
    bool has_file_mode;
    uint32_t file_mode;
    bool has_uid;
    uint32_t uid;
    bool has_gid;
    uint32_t gid;
};

struct brig_device_rule {
    bool allow;
    char *type; /* NULL means "a" */
    bool has_major;
    int64_t major;
    bool has_minor;
    int64_t minor;
    char *access; /* "rwm" subset, NULL means all */
};

struct brig_memory {
    bool has_limit;
    int64_t limit;
    bool has_reservation;
    int64_t reservation;
    bool has_swap;
    int64_t swap;
    bool has_kernel;
    int64_t kernel;
    bool has_kernel_tcp;
    int64_t kernel_tcp;
    bool has_swappiness;
    uint64_t swappiness;
    bool has_disable_oom_killer;
    bool disable_oom_killer;
    bool has_use_hierarchy;
    bool use_hierarchy;
    bool has_check_before_update;
    bool check_before_update;
};

struct brig_cpu {
    bool has_shares;
    uint64_t shares;
    bool has_quota;
    int64_t quota;
    bool has_burst;
    uint64_t burst;
    bool has_period;
    uint64_t period;
    bool has_realtime_runtime;
    int64_t realtime_runtime;
    bool has_realtime_period;
    uint64_t realtime_period;
    char *cpus;
    char *mems;
    bool has_idle;
    int64_t idle;
};

struct brig_weight_device {
    int64_t major;
    int64_t minor;
    bool has_weight;
    uint16_t weight;
    bool has_leaf_weight;
    uint16_t leaf_weight;
};

struct brig_throttle_device {
    int64_t major;
    int64_t minor;
    uint64_t rate;
};

struct brig_throttle_list {
    struct brig_throttle_device *items;
    size_t n;
};

struct brig_block_io {
    bool has_weight;
    uint16_t weight;
    bool has_leaf_weight;
    uint16_t leaf_weight;
    struct brig_weight_device *weight_devices;
    size_t n_weight_devices;
    struct brig_throttle_list throttle_read_bps;
    struct brig_throttle_list throttle_write_bps;
    struct brig_throttle_list throttle_read_iops;
    struct brig_throttle_list throttle_write_iops;
};

struct brig_hugepage_limit {
    char *page_size; /* "2MB" */
    uint64_t limit;
};

struct brig_net_priority {
    char *name;
    uint32_t priority;
};

struct brig_rdma_limit {
    char *device;
    bool has_hca_handles;
    uint32_t hca_handles;
    bool has_hca_objects;
    uint32_t hca_objects;
};

struct brig_resources {
    struct brig_device_rule *devices;
    size_t n_devices;
    struct brig_memory *memory; /* NULL when absent */
    struct brig_cpu *cpu;       /* NULL when absent */
    bool has_pids_limit;
    int64_t pids_limit;
    struct brig_block_io *block_io; /* NULL when absent */
    struct brig_hugepage_limit *hugepage_limits;
    size_t n_hugepage_limits;
    bool has_net_class_id;
    uint32_t net_class_id;
    struct brig_net_priority *net_priorities;
    size_t n_net_priorities;
    struct brig_rdma_limit *rdma;
    size_t n_rdma;
    struct brig_kv_list unified;
};

struct brig_seccomp_arg {
    uint32_t index;
    uint64_t value;
    uint64_t value_two;
    char *op; /* "SCMP_CMP_EQ", ... */
};

struct brig_seccomp_syscall {
    struct brig_strv names;
    char *action; /* "SCMP_ACT_ERRNO", ... */
    bool has_errno_ret;
    uint32_t errno_ret;
    struct brig_seccomp_arg *args;
    size_t n_args;
};

struct brig_seccomp {
    char *default_action;
    bool has_default_errno_ret;
    uint32_t default_errno_ret;
    struct brig_strv architectures;
    struct brig_strv flags;
    char *listener_path;
    char *listener_metadata;
    struct brig_seccomp_syscall *syscalls;
    size_t n_syscalls;
};

struct brig_time_offset {
    bool set;
    int64_t secs;
    uint32_t nanosecs;
};

struct brig_personality {
    char *domain; /* "LINUX" | "LINUX32" */
    struct brig_strv flags;
};

struct brig_intel_rdt {
    char *clos_id;
    char *l3_cache_schema;
    char *mem_bw_schema;
};

struct brig_linux {
    struct brig_namespace *namespaces;
    size_t n_namespaces;
    struct brig_id_mapping *uid_mappings;
    size_t n_uid_mappings;
    struct brig_id_mapping *gid_mappings;
    size_t n_gid_mappings;
    struct brig_time_offset time_monotonic;
    struct brig_time_offset time_boottime;
    struct brig_device *devices;
    size_t n_devices;
    char *cgroups_path;
    struct brig_resources *resources; /* NULL when absent */
    struct brig_kv_list sysctl;
    struct brig_seccomp *seccomp; /* NULL when absent */
    char *rootfs_propagation;     /* "shared" | "slave" | "private" | "unbindable" | ... */
    struct brig_strv masked_paths;
    struct brig_strv readonly_paths;
    char *mount_label;
    struct brig_personality *personality; /* NULL when absent */
    struct brig_intel_rdt *intel_rdt;     /* NULL when absent */
};

struct brig_spec {
    char *oci_version;
    struct brig_process *process; /* required by create/run; NULL when absent */
    struct brig_root *root;       /* required on Linux */
    char *hostname;
    char *domainname;
    struct brig_mount *mounts;
    size_t n_mounts;
    struct brig_hooks hooks;
    struct brig_kv_list annotations;
    struct brig_linux *linux_; /* NULL when absent */
};

/* Parses and validates a whole config.json. `origin` names the file in
 * messages: "config.json: process.args: expected an array of strings". */
int brig_spec_parse(const char *json, size_t len, const char *origin, struct brig_spec **out,
                    brig_error_t *err);
int brig_spec_load(const char *path, struct brig_spec **out, brig_error_t *err);
/* The same, also handing back the file's bytes, for a
 * caller that keeps a copy of what it parsed without reading it again. */
int brig_spec_load_text(const char *path, struct brig_spec **out, char **text, size_t *len,
                        brig_error_t *err);
/* Frees what a mount owns, not the mount itself. */
void brig_mount_free_fields(struct brig_mount *m);
void brig_spec_free(struct brig_spec *spec);
/* A spec pointer freed when it goes out of scope (base/cleanup.h). */
static inline void brig_spec_freep(struct brig_spec **spec)
{
    brig_spec_free(*spec);
}
#define cleanup_spec __attribute__((cleanup(brig_spec_freep)))

/* A lone OCI process object (exec --process FILE). */
int brig_process_parse(const char *json, size_t len, const char *origin, struct brig_process **out,
                       brig_error_t *err);
void brig_process_free(struct brig_process *process);
/* Deep copies (spec/process_copy.c): every owned field duplicated, so the
 * copy can be changed and freed on its own. */
int brig_process_copy(const struct brig_process *from, struct brig_process **out,
                      brig_error_t *err);
int brig_strv_copy(struct brig_strv *to, const struct brig_strv *from);
int brig_rlimits_copy(struct brig_rlimit **to, size_t *n_to, const struct brig_rlimit *from,
                      size_t n);
void brig_strv_free(struct brig_strv *s);
/* `base` with each NAME=VALUE of `extra` replacing the entry of the same
 * NAME or added after: a new NULL-terminated array of the same strings
 * (shallow: free only the array), its length in *n_out; NULL when memory
 * ran out. */
char **brig_env_overlay(const struct brig_strv *base, char *const *extra, size_t n_extra,
                        size_t *n_out);

/* A lone linux.resources object (`update -r FILE`). */
int brig_resources_parse(const char *json, size_t len, const char *origin,
                         struct brig_resources **out, brig_error_t *err);
void brig_resources_free(struct brig_resources *r);

/* A bare seccomp profile: the JSON shape of linux.seccomp (`brig spec
 * --seccomp FILE`, seccomp-profiles/). Errors name `origin` and the field. */
int brig_seccomp_parse(const char *json, size_t len, const char *origin, struct brig_seccomp **out,
                       brig_error_t *err);
void brig_seccomp_free_spec(struct brig_seccomp *s);

/* The value of annotation `key`, or NULL (the parser keeps each key once:
 * a repeated one's last value). */
const char *brig_spec_annotation(const struct brig_spec *spec, const char *key);

/* The namespace of a type, or NULL when the spec doesn't ask for it. */
const struct brig_namespace *brig_spec_namespace(const struct brig_spec *spec,
                                                 enum brig_ns_type type);
const char *brig_ns_type_name(enum brig_ns_type type); /* "pid", "network", ... */

/* The default spec's linux.maskedPaths and linux.readonlyPaths,
 * NULL-terminated. */
extern const char *const brig_default_masked_paths[];
extern const char *const brig_default_readonly_paths[];

/* Default config.json for `brig spec`, runc-compatible. Caller frees. */
int brig_spec_default_json(bool rootless, char **out, brig_error_t *err);

#endif
