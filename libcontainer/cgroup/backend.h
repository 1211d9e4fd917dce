/* Internal to cgroup/: a cgroup backend, the table of operations the
 * interface in cgroup.h dispatches to. A new backend (v1 hierarchies, a
 * systemd driver) is one more table and a case in the choice in
 * cgroup.c; nothing above cgroup/ changes. Every operation has the
 * meaning of the cgroup.h function of the same name. */
#ifndef BRIG_CGROUP_BACKEND_H
#define BRIG_CGROUP_BACKEND_H

#include "cgroup/cgroup.h"
#include "cgroup/systemd.h"

struct brig_cgroup_backend {
    const char *name;
    int (*create)(const char *cgroups_path, const char *id, const struct brig_resources *r,
                  struct brig_cgroup *out, brig_error_t *err);
    int (*create_without_devices)(const char *cgroups_path, const char *id,
                                  const struct brig_resources *r, struct brig_cgroup *out,
                                  brig_error_t *err);
    int (*open)(const char *path, struct brig_cgroup *out, brig_error_t *err);
    int (*apply)(const struct brig_cgroup *cg, const struct brig_resources *r, brig_error_t *err);
    int (*devices_attach)(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                          brig_error_t *err);
    int (*add_pid)(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
    int (*freeze)(const struct brig_cgroup *cg, bool frozen, brig_error_t *err);
    bool (*is_frozen)(const struct brig_cgroup *cg);
    int (*pids)(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err);
    int (*signal_all)(const struct brig_cgroup *cg, int sig, brig_error_t *err);
    int (*kill_all)(const struct brig_cgroup *cg, brig_error_t *err);
    int (*destroy)(const char *path, brig_error_t *err);
    int (*planned_path)(const char *cgroups_path, const char *id, char **out,
                        brig_error_t *err); /* may be NULL */
    int (*stats)(const struct brig_cgroup *cg, struct brig_cgroup_stats *out, brig_error_t *err);
    int (*clone_fd)(const struct brig_cgroup *cg);
    int (*open_sub)(const struct brig_cgroup *cg, const struct brig_cgroup_sub *subs, size_t n,
                    struct brig_cgroup *out, brig_error_t *err);
    int (*oom_watch)(const struct brig_cgroup *cg, int *fd, brig_error_t *err);
    int (*oom_kills)(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err);
    void (*close)(struct brig_cgroup *cg); /* what the backend owns beyond path, dir_fd */
    void (*remove_parents_made)(const struct brig_cgroup *cg); /* may be NULL */
    int (*add_pid_unfrozen)(const struct brig_cgroup *cg, pid_t pid,
                            brig_error_t *err); /* NULL: 0 */
    int (*self_join_open)(const struct brig_cgroup *cg, bool unfrozen,
                          struct brig_cgroup_self_join *out,
                          brig_error_t *err); /* NULL: nothing to join */
};

/* The systemd driver (systemd.c): a transient unit whose cgroup the
 * host's cgroupfs backend drives (`inner`), and what it still has to
 * start it with. */
extern const struct brig_cgroup_backend brig_cgroup_systemd;
struct brig_cgroup_systemd {
    char *unit;
    bool user;    /* the caller's user instance, not the system's */
    bool started; /* the unit exists (always, for one opened from a record) */
    struct brig_cgroup inner;
    struct brig_systemd_props props; /* create: to start the unit with */
    const struct brig_resources *r;  /* create: written again once started */
};
bool brig_cgroup_is_systemd_record(const char *path);

/* cgroup v2 through cgroupfs (v2.c; its statistics in v2_stats.c). */
extern const struct brig_cgroup_backend brig_cgroup_v2;
int brig_cgroup_v2_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                         brig_error_t *err);
/* Adds what the stats file `file` in the directory dfd says to *out
 * (brig_cgroup_stats_parse; stats.c); 1 when there is no such file. */
int brig_cgroup_stats_read_at(int dfd, const char *file, struct brig_cgroup_stats *out,
                              brig_error_t *err);

/* tree.c: what both cgroupfs backends do to a tree of cgroups. */
long long brig_cgroup_now_ms(void);
void brig_cgroup_sleep_ms(long ms);
/* The first byte of a small file of dir_fd ("1" of cgroup.freeze), -1
 * when it can't be read. */
int brig_cgroup_first_byte(int dir_fd, const char *file);
/* cgroup.procs of dir_fd and of every cgroup below it; caller frees. */
int brig_cgroup_tree_pids(int dir_fd, pid_t **out, size_t *n, brig_error_t *err);
/* rmdir of name in parent_fd, retrying on EBUSY until deadline (ms of
 * brig_cgroup_now_ms); ENOENT is done. -1 with errno. */
int brig_cgroup_rmdir_patiently(int parent_fd, const char *name, long long deadline);
/* Removes every cgroup below dfd (made by the container in its cgroup
 * namespace, or by exec --cgroup), leaves first. Consumes dfd; `path`
 * names it in errors. */
int brig_cgroup_remove_children(int dfd, const char *path, long long deadline, brig_error_t *err);

/* cgroup v1 hierarchies on hybrid and legacy hosts (v1.c; the
 * hierarchies in v1_hierarchy.c, statistics and OOM in v1_stats.c). */
extern const struct brig_cgroup_backend brig_cgroup_v1;
/* v1's brig_cgroup_frozen_at, from a record's lines alone (v1_procs.c). */
bool brig_cgroup_v1_frozen_at(const char *lines);

/* One v1 hierarchy (or, on a hybrid host, the v2 tree): where it is
 * mounted and what it binds, from /proc/self/mountinfo. */
struct brig_cgroup_hierarchy {
    char *mountpoint;  /* "/sys/fs/cgroup/cpu,cpuacct" */
    char *controllers; /* "cpu,cpuacct", "memory", "name=systemd"; "" for v2 */
    bool v2;
    char *mount_root; /* the part of the hierarchy mounted there, usually "/" */
    char *own;        /* the caller's cgroup in it, e.g. "/a/b" (below mount_root) */
};
/* The host's hierarchies, found once per process; NULL-terminated. */
const struct brig_cgroup_hierarchy *const *brig_cgroup_v1_hierarchies(brig_error_t *err);
/* True when hierarchy h binds `controller` ("cpu", "name=systemd"). */
bool brig_cgroup_hierarchy_has(const struct brig_cgroup_hierarchy *h, const char *controller);

/* A v1 cgroup: the container's directory in each hierarchy. */
struct brig_cgroup_v1_dir {
    const struct brig_cgroup_hierarchy *h;
    char *path;      /* absolute */
    int fd;          /* O_DIRECTORY, -1 when closed */
    char *made_from; /* create: the first directory it made (path or a
                        parent), NULL when it made none */
};
struct brig_cgroup_v1 {
    struct brig_cgroup_v1_dir *dirs;
    size_t n;
};
/* The directory fd of the hierarchy that binds `controller` ("memory",
 * "freezer"; "" for a hybrid host's v2 tree), -1 when the host has none. */
int brig_cgroup_v1_fd(const struct brig_cgroup *cg, const char *controller);
const char *brig_cgroup_v1_dir_path(const struct brig_cgroup *cg, const char *controller);

int brig_cgroup_v1_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                         brig_error_t *err);
int brig_cgroup_v1_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err);
int brig_cgroup_v1_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err);
int brig_cgroup_v2_oom_watch(const struct brig_cgroup *cg, int *fd, brig_error_t *err);
int brig_cgroup_v2_oom_kills(const struct brig_cgroup *cg, uint64_t *out, brig_error_t *err);

#endif
