/* The sandbox profile: turns any spec into a sandbox spec.
 *
 * Applying it is a pure transformation of the parsed spec (no kernel, no
 * files): a read-only shared root, tmpfs /tmp /run and home, the per-bundle
 * /mnt/data bind-mounted from the host, the non-root user with no
 * capabilities, no_new_privs and the strict seccomp profile, loopback-only
 * networking, resource defaults, brig-init as PID 1, and the jemalloc
 * environment. The settings travel with the container (its state dir) so
 * that `exec` applies the very same process defaults later. */
#ifndef BRIG_PROFILE_H
#define BRIG_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

#define BRIG_PROFILE_ANNOTATION "run.brig.profile"
#define BRIG_PROFILE_SANDBOX "sandbox"

#define BRIG_SANDBOX_ROOTFS "/var/lib/brig/rootfs"
#define BRIG_SANDBOX_UID 1000
#define BRIG_SANDBOX_GID 1000
#define BRIG_SANDBOX_HOME "/home/sandbox"
#define BRIG_SANDBOX_DATA "/mnt/data"
#define BRIG_SANDBOX_INIT "/usr/sbin/brig-init" /* mount point the rootfs provides */
#define BRIG_SANDBOX_INIT_CONF "/etc/brig/init.conf"
#define BRIG_POD_INIT "/dev/.brig-init" /* where a pod's container has brig-init */
#define BRIG_SANDBOX_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
/* No background_thread: the thread it starts in every process cost each
 * one 0.7 ms of CPU (an exec of python3 0.7 ms, of `true` 0.25 ms, in
 * time) and an idle process one more thread; pages still decay, on the
 * allocator's own calls. */
#define BRIG_SANDBOX_MALLOC_CONF \
    "narenas:1,lg_tcache_max:10,dirty_decay_ms:5000,muzzy_decay_ms:5000"
#define BRIG_SANDBOX_DATA_SIZE (INT64_C(8) << 30)
#define BRIG_SANDBOX_MEMORY (INT64_C(4) << 30)
#define BRIG_SANDBOX_PIDS 1024
#define BRIG_SANDBOX_CPU_PERIOD 100000
#define BRIG_SANDBOX_CPUS_MILLI 2000 /* two CPUs' worth of time */
/* The sandbox's user namespace: `auto` (a range of its own, userns.h) or
 * `host` (no user namespace: the host's ids). Ids 0 to BRIG_SANDBOX_IDS-1
 * inside are mapped. */
#define BRIG_NETWORK_PACKAGES "packages"
#define BRIG_NETWORK_NONE "none"
/* Where Debian keeps the bundle of trusted CAs: the host's is bound there
 * for the packages-only network, so that TLS to a package source is
 * trusted as the host trusts it (a network that inspects TLS included). */
#define BRIG_SANDBOX_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define BRIG_USERNS_AUTO "auto"
#define BRIG_USERNS_HOST "host"
#define BRIG_SANDBOX_IDS 65536u
#define BRIG_SANDBOX_TREE "tree" /* in the data dir: the tree, id-mapped */

/* Every knob of the profile. Strings are owned (free with
 * brig_profile_settings_clear). */
struct brig_profile_settings {
    char *rootfs;      /* the shared tree on the host */
    char *data_dir;    /* host dir of this bundle's data image and its mount (dataimage.h) */
    char *init_path;   /* brig-init on the host */
    char *init_config; /* host file bound at /etc/brig/init.conf; NULL: the tree's */
    char *netns;       /* NULL: a new namespace with loopback only */
    char *network;     /* "packages": the proxy at 127.0.0.1:3128 (egress.h); NULL: none */
    char *ca_bundle;   /* the host's CA bundle, bound at the same path; NULL: the tree's */
    char *malloc_conf;
    char *seccomp_path; /* the sandbox seccomp profile (JSON) */
    int64_t data_size;  /* bytes */
    int64_t memory;     /* bytes */
    int64_t pids;
    int64_t cpus_milli; /* 1500 = one and a half CPUs */
    int detached_init;  /* 1: init runs without a command (brig sandbox) */
    char *userns;       /* BRIG_USERNS_AUTO or _HOST; NULL (an older brig's): host */
    int64_t userns_uid; /* the host uid and gid that 0 inside maps to; 0: none yet */
    int64_t userns_gid;
    int64_t data_private; /* 1: data_dir is the container's own, removed with it */
    int64_t pod;          /* 1: a container of a Kubernetes pod (profile_pod.c) */
    char *pod_userns;     /* a pod's container: the pause container's user namespace,
                             joined; NULL: a new one (pod_userns.h) */
    char *lxcfs;          /* the lxcfs whose files it sees (limits_view.h); NULL: the host's */
    char *cpuset;         /* the CPUs it runs on; NULL: all */
    char *notice;         /* not kept: what create should tell its caller (no view of
                             the limits); NULL: nothing */
    /* A sandbox made from a template (template.h): its name, and the
     * image's defaults. None of them set: the sandbox's own. */
    char *template_name;
    char *jemalloc;   /* in the tree; BRIG_JEMALLOC_NONE: no preload; NULL: the default */
    int64_t user_uid; /* the user every process runs as; 0: BRIG_SANDBOX_UID/GID */
    int64_t user_gid;
    char *user_name;      /* its $USER; NULL: sandbox */
    char *workdir;        /* init's and exec's cwd; NULL: /mnt/data */
    struct brig_strv env; /* NAME=VALUE under every process's own (the image's Env) */
};

#define BRIG_JEMALLOC_NONE "none"

/* The uid and gid a sandbox's processes run as inside. */
void brig_profile_user(const struct brig_profile_settings *s, uint32_t *uid, uint32_t *gid);

/* The defaults; strings duplicated. -1 on out-of-memory. */
int brig_profile_settings_default(struct brig_profile_settings *s, brig_error_t *err);
void brig_profile_settings_clear(struct brig_profile_settings *s);

/* Settings as "key=value\n" lines and back (the `profile` file in the
 * state dir). Unknown keys are errors: they mean a different brig. */
int brig_profile_settings_format(const struct brig_profile_settings *s, char **out,
                                 brig_error_t *err);
int brig_profile_settings_parse(const char *text, struct brig_profile_settings *s,
                                brig_error_t *err);

/* Whether the spec asks for the sandbox profile by annotation; -1 with *err
 * for an unknown profile name. */
int brig_profile_requested(const struct brig_spec *spec, brig_error_t *err);

/* Whether the settings ask for a user namespace of the sandbox's own
 * (`auto`; `host`, and no value, the settings of a brig from before user
 * namespaces, do not), and for the packages-only network. */
bool brig_profile_userns_auto(const struct brig_profile_settings *s);
bool brig_profile_on_packages(const struct brig_profile_settings *s);

/* The user namespace of settings whose range is known (userns_uid > 0):
 * a new user namespace mapping 0-65535 to the range (or, for a pod's
 * container, the pause container's, joined by path: pod_userns), and the
 * root at the tree's id-mapped bind in the data dir. Idempotent; without a range, a
 * no-op. brig_profile_apply calls it; the handler too, once it has picked
 * the range of a new sandbox. */
int brig_profile_apply_userns(struct brig_spec *spec, const struct brig_profile_settings *s,
                              brig_error_t *err);

/* Rewrites spec into the sandbox. `seccomp` (the parsed sandbox profile) is
 * taken over by the spec, whatever the outcome. */
int brig_profile_apply(struct brig_spec *spec, const struct brig_profile_settings *s,
                       struct brig_seccomp *seccomp, brig_error_t *err);

/* The part of an exec's environment its caller can't change (the
 * allocator's and the proxy's variables), set in env as
 * brig_profile_impose_exec sets it. -1: out of memory. */
int brig_profile_exec_forced_env(const struct brig_profile_settings *s, struct brig_strv *env);

/* A process that enters a running sandbox (exec, whoever asks): the
 * sandbox's user, no capabilities, no_new_privs, the init's rlimits and
 * LSM labels, the allocator's environment; its args, cwd, terminal and
 * the rest of its environment stay the caller's. `init` is the sandbox
 * spec's process (after brig_profile_apply). */
int brig_profile_impose_exec(struct brig_process *p, const struct brig_process *init,
                             const struct brig_profile_settings *s, brig_error_t *err);

/* Whether the spec is a container of a Kubernetes pod, as containerd's
 * CRI plugin marks one (io.kubernetes.cri.container-type): its pause
 * container ("sandbox") or one of the pod's own ("container"). For those
 * the profile is the pod's (settings' `pod`): the pod's image, mounts and
 * namespaces stay as CRI made them, and what the profile hardens is the
 * process, the root and the limits (sandbox/profile_pod.c). */
bool brig_profile_is_pod_container(const struct brig_spec *spec);
/* One of the pod's own containers, not its pause container. */
bool brig_profile_is_pod_app(const struct brig_spec *spec);

/* Whether a mount is a bind (type `bind`, or a `bind`/`rbind` option). */
bool brig_profile_mount_is_bind(const struct brig_mount *m);

/* Size with an optional K/M/G/T suffix (powers of 1024): "64M". */
int brig_profile_parse_size(const char *text, int64_t *out);
/* "1.5" CPUs → 1500. */
int brig_profile_parse_cpus(const char *text, int64_t *milli);

#endif
