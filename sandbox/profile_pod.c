#define _GNU_SOURCE
/* The sandbox profile for a container of a Kubernetes pod (profile.h,
 * brig_profile_is_pod_container). A pod is one sandbox: containerd's CRI
 * plugin has already given each container the pod's image, the pod's
 * mounts (hosts, hostname, resolv.conf, shm, volumes, tokens, ConfigMaps,
 * Secrets) and the pod's namespaces (the pause container's network, IPC
 * and UTS, which its network plugin left with loopback only); all of that
 * stays. What the profile changes is what makes it a sandbox: the user
 * (the image's when it is not root, else the sandbox's), no capability,
 * no_new_privs, the strict seccomp profile, a read-only root with a tmpfs
 * /tmp, a cgroup namespace, the runtime's masked and read-only paths, the
 * profile's limits where the pod sets none, and the pod's user namespace
 * (pod_userns.h) once its range is known. Pure. */
#include "sandbox/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/profile_int.h"

#define CRI_CONTAINER_TYPE "io.kubernetes.cri.container-type"

bool brig_profile_is_pod_container(const struct brig_spec *spec)
{
    return brig_spec_annotation(spec, CRI_CONTAINER_TYPE) != NULL;
}

bool brig_profile_is_pod_app(const struct brig_spec *spec)
{
    const char *type = brig_spec_annotation(spec, CRI_CONTAINER_TYPE);
    return type && strcmp(type, "sandbox") != 0;
}

/* The image's user unless it is root; no supplementary root group. */
static int pod_identity(struct brig_process *p)
{
    uint32_t uid = p->user.uid ? p->user.uid : BRIG_SANDBOX_UID;
    uint32_t gid = p->user.uid ? p->user.gid : BRIG_SANDBOX_GID;
    uint32_t *groups = p->user.additional_gids;
    size_t n = p->user.n_additional_gids;
    p->user.additional_gids = NULL;
    p->user.n_additional_gids = 0;
    int r = brig_profile_drop_privileges(p, uid, gid);
    /* fsGroup and supplementalGroups stay: volumes are shared through them */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (groups[i] != 0)
            groups[kept++] = groups[i];
    p->user.additional_gids = groups;
    p->user.n_additional_gids = kept;
    return r;
}

static bool has_mount_at(const struct brig_spec *spec, const char *dest)
{
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (strcmp(spec->mounts[i].destination, dest) == 0)
            return true;
    return false;
}

/* A writable /tmp over the read-only root, unless the pod mounts one. */
static int add_tmp(struct brig_spec *spec)
{
    static const char *const opts[] = { "nosuid", "nodev", "mode=1777", "size=512m", NULL };
    if (has_mount_at(spec, "/tmp"))
        return 0;
    return brig_profile_add_mount(spec, "/tmp", "tmpfs", "tmpfs", opts);
}

/* brig-init in front of the command of a container with a pid namespace
 * of its own (not the pause container, which is an init itself, nor one
 * sharing the pod's processes): PID 1 reaps what the program leaves and
 * passes signals on. Static, it runs in any image; it is bound where the
 * pod's /dev is (a tmpfs), and reads no services file. */
static int add_init(struct brig_spec *spec, const struct brig_profile_settings *s)
{
    static const char *const ro[] = { "bind", "ro", "nosuid", "nodev", NULL };
    static const char *const front[] = { BRIG_POD_INIT, "--config", "/dev/null", "--", NULL };
    const struct brig_namespace *pid = brig_spec_namespace(spec, BRIG_NS_PID);
    if (s->init_path == NULL || !brig_profile_is_pod_app(spec) || pid == NULL || pid->path
        || spec->process->args.n == 0 || strcmp(spec->process->args.v[0], BRIG_POD_INIT) == 0)
        return 0;
    if (brig_profile_add_mount(spec, BRIG_POD_INIT, "bind", s->init_path, ro) < 0)
        return -1;
    return brig_profile_prepend_args(spec->process, front);
}

/* The pod's namespaces as CRI gave them (joined by path or new), and a
 * cgroup namespace of the container's own. */
static int add_cgroup_ns(struct brig_linux *l)
{
    for (size_t i = 0; i < l->n_namespaces; i++)
        if (l->namespaces[i].type == BRIG_NS_CGROUP)
            return 0;
    struct brig_namespace *bigger = realloc(l->namespaces, (l->n_namespaces + 1) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    l->namespaces = bigger;
    bigger[l->n_namespaces++] = (struct brig_namespace){ .type = BRIG_NS_CGROUP };
    return 0;
}

/* The profile's limits where the pod sets none. */
static int default_limits(struct brig_linux *l, const struct brig_profile_settings *s)
{
    if (l->resources == NULL && (l->resources = calloc(1, sizeof *l->resources)) == NULL)
        return -1;
    struct brig_resources *r = l->resources;
    if (r->memory == NULL && (r->memory = calloc(1, sizeof *r->memory)) == NULL)
        return -1;
    if (!r->memory->has_limit || r->memory->limit <= 0) {
        r->memory->has_limit = true;
        r->memory->limit = s->memory;
        r->memory->has_swap = true;
        r->memory->swap = s->memory;
    }
    if (!r->has_pids_limit || r->pids_limit <= 0) {
        r->has_pids_limit = true;
        r->pids_limit = s->pids;
    }
    return 0;
}

/* In the pod's user namespace only ids 0-65535 exist. */
static bool ids_outside(const struct brig_user *u, brig_error_t *err)
{
    uint32_t bad = u->uid >= BRIG_SANDBOX_IDS ? u->uid : u->gid >= BRIG_SANDBOX_IDS ? u->gid : 0;
    for (size_t i = 0; bad == 0 && i < u->n_additional_gids; i++)
        if (u->additional_gids[i] >= BRIG_SANDBOX_IDS)
            bad = u->additional_gids[i];
    if (bad == 0)
        return false;
    brig_error_set(err, 0,
                   "sandbox profile: id %u of the pod's user is outside its user namespace "
                   "(0-%u)",
                   bad, BRIG_SANDBOX_IDS - 1);
    return true;
}

int brig_profile_apply_pod(struct brig_spec *spec, const struct brig_profile_settings *s,
                           brig_error_t *err)
{
    if (spec->root == NULL)
        return brig_error_set(err, 0, "sandbox profile: the pod's container has no root");
    spec->root->readonly = true;
    if (pod_identity(spec->process) < 0 || add_tmp(spec) < 0 || add_init(spec, s) < 0
        || add_cgroup_ns(spec->linux_) < 0 || default_limits(spec->linux_, s) < 0
        || brig_profile_add_default_paths(spec->linux_) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (brig_profile_userns_auto(s) && ids_outside(&spec->process->user, err))
        return -1;
    return brig_profile_apply_userns(spec, s, err);
}
