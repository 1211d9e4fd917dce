/* Checkpoint and restore of a whole container through libcriu, which drives
 * the criu binary over its RPC (criu swrk). checkpoint.c dumps; restore.c
 * rebuilds the state dir, the cgroup with its limits, and has criu bring the
 * process tree back in new namespaces with the container's mounts. */
#ifndef BRIG_CHECKPOINT_H
#define BRIG_CHECKPOINT_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

/* Written into the image directory next to criu's images: where the init's
 * stdin, stdout and stderr pointed at dump time, so restore can hand pipes
 * to the restored init (the same file and shape runc uses). */
#define BRIG_CRIU_DESCRIPTORS "descriptors.json"
#define BRIG_CRIU_DUMP_LOG "dump.log"
#define BRIG_CRIU_RESTORE_LOG "restore.log"

/* --manage-cgroups-mode; DEFAULT means criu's "soft", as runc does. */
enum brig_cg_mode {
    BRIG_CG_MODE_DEFAULT = 0,
    BRIG_CG_MODE_SOFT,
    BRIG_CG_MODE_FULL,
    BRIG_CG_MODE_STRICT,
    BRIG_CG_MODE_IGNORE,
};

/* "soft", "full", "strict", "ignore" → mode. Pure. */
int brig_cg_mode_parse(const char *name, enum brig_cg_mode *out, brig_error_t *err);

/* What checkpoint and restore share. */
struct brig_criu_options {
    const char *image_path; /* required */
    const char *work_path;  /* logs and criu's scratch; NULL: image_path */
    bool tcp_established;
    bool ext_unix_sk;
    bool shell_job;
    bool file_locks;
    bool auto_dedup;
    enum brig_cg_mode cg_mode;
};

struct brig_checkpoint_options {
    const char *root;
    const char *id;
    struct brig_criu_options criu;
    const char *parent_path; /* a previous pre-dump, relative to image_path */
    bool leave_running;
    bool pre_dump; /* dump memory only, the container keeps running */
};

/* Dumps the container into image_path. Unless leave_running or pre_dump,
 * the container is gone afterwards (as after `delete`), as with runc. */
int brig_container_checkpoint(const struct brig_checkpoint_options *o, brig_error_t *err);

struct brig_restore_options {
    const char *root;
    const char *id;     /* may differ from the checkpointed one */
    const char *bundle; /* NULL: the current directory */
    const char *pid_file;
    bool no_cgroup;      /* --cgroup-manager=disabled */
    bool systemd_cgroup; /* --systemd-cgroup */
    /* The fds that replace the init's stdio where it had the dumping
     * caller's: three different ones (criu closes each it takes), not
     * close-on-exec (criu inherits them); NULL: ours, 0-2. */
    const int *stdio;
    struct brig_criu_options criu;
};

/* Restores a container from image_path under a new state dir. The restored
 * init is a child of the caller (criu restores it as our sibling's child
 * with CLONE_PARENT), so the caller can wait for it. Bad input leaves nothing
 * behind. */
int brig_container_restore(const struct brig_restore_options *o, pid_t *init_pid,
                           brig_error_t *err);

/* ---- shared by checkpoint.c and restore.c ---- */

struct criu_opts;

/* A libcriu option set with the images and work dirs open, the criu
 * binary found, logs in the work dir, and the shared flags applied. */
struct brig_criu {
    struct criu_opts *opts;
    int image_fd;
    int work_fd;
    const char *work_path; /* for messages */
    const char *log_name;
};
int brig_criu_begin(struct brig_criu *c, const struct brig_criu_options *o, bool create_images,
                    const char *log_name, brig_error_t *err);
void brig_criu_end(struct brig_criu *c);

/* Registers every bind mount of the spec as an external mount, keyed by
 * its destination; `sources_from` NULL maps a key to itself (dump), else to
 * the source, relative sources taken from that bundle (restore). */
/* A container with a user namespace of its own: its device nodes (the
 * host's, bound: mknod is refused there) and its masked files (binds of
 * that /dev/null) have their roots on the host's /dev, outside anything
 * criu dumps, so they are external mounts too, keyed by their path
 * inside. At dump `pid` is the init's (masked dirs, tmpfs, are criu's own
 * and left out); at restore it is 0, and they come back from the host's
 * nodes. */
int brig_criu_add_userns_mounts(struct brig_criu *c, const struct brig_spec *spec,
                                const char *rootfs, pid_t pid, brig_error_t *err);

int brig_criu_add_bind_mounts(struct brig_criu *c, const struct brig_spec *spec,
                              const char *sources_from, brig_error_t *err);

/* A failed criu call: the last error line of criu's log, and where the log is. */
int brig_criu_failed(struct brig_criu *c, const char *what, int ret, brig_error_t *err);

#endif
