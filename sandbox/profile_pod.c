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
    for (size_t i = 0; i < spec->annotations.n; i++)
        if (strcmp(spec->annotations.items[i].key, CRI_CONTAINER_TYPE) == 0)
            return true;
    return false;
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
    if (has_mount_at(spec, "/tmp"))
        return 0;
    struct brig_mount *bigger = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    spec->mounts = bigger;
    struct brig_mount *m = &bigger[spec->n_mounts++];
    *m = (struct brig_mount){ 0 };
    static const char *const opts[] = { "nosuid", "nodev", "mode=1777", "size=512m" };
    m->destination = strdup("/tmp");
    m->type = strdup("tmpfs");
    m->source = strdup("tmpfs");
    if (!m->destination || !m->type || !m->source)
        return -1;
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (brig_profile_strv_add_unique(&m->options, opts[i]) < 0)
            return -1;
    return 0;
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
    if (pod_identity(spec->process) < 0 || add_tmp(spec) < 0 || add_cgroup_ns(spec->linux_) < 0
        || default_limits(spec->linux_, s) < 0 || brig_profile_add_default_paths(spec->linux_) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (brig_profile_userns_auto(s) && ids_outside(&spec->process->user, err))
        return -1;
    return brig_profile_apply_userns(spec, s, err);
}
