/* A pod's user namespace. A pod under the sandbox profile is one sandbox,
 * so its containers share one range of host ids (idrange.h): the pause
 * container (CRI's "sandbox") takes a range of its own, as a `brig
 * sandbox` does, in a new user namespace; every other container of the pod
 * joins that namespace, as it joins the pause's network and IPC
 * namespaces. Each container's image root, and every bind the pod mounts
 * from the host (volumes, service-account tokens, ConfigMaps, Secrets,
 * hosts, resolv.conf, shm), is seen through an id-mapped bind in the
 * container's private dir (an overlay root through its id-mapped layers,
 * rootfs/idmap_tree.h): what is root's on the host is root's inside,
 * and a volume's fsGroup is the same group inside. A file system that
 * can't map ids is bound as it is (its files are nobody's inside). */
#ifndef BRIG_SANDBOX_POD_USERNS_H
#define BRIG_SANDBOX_POD_USERNS_H

#include "base/error.h"
#include "sandbox/profile.h"
#include "spec/spec.h"

#define BRIG_SANDBOX_BINDS "binds"   /* in the data dir: the pod's binds, id-mapped */
#define BRIG_SANDBOX_LAYERS "layers" /* in the data dir: an overlay's layers, while mounting */

/* At create, before anything is made: which user namespace the container
 * gets. The pause's (its range, and its init's namespace to join) for a
 * container of a pod whose pause container is a sandbox with one; none
 * (`host`) when it is not; a new one for the pause container itself.
 * With one, s->rootfs is the container's root, absolute (`bundle`, NULL
 * for the current directory, is where a relative one is). */
int brig_sandbox_pod_userns_prepare(const char *root, const char *bundle,
                                    const struct brig_spec *spec, struct brig_profile_settings *s,
                                    brig_error_t *err);

/* The root bound id-mapped at DATA_DIR/tree, each bind from the host at
 * DATA_DIR/binds/N with the spec's source pointed there, and the spec's
 * user namespace. The range is known (a pause's own, acquired first). */
int brig_sandbox_pod_userns_mount(const struct brig_profile_settings *s, struct brig_spec *spec,
                                  brig_error_t *err);

/* DATA_DIR/binds and DATA_DIR/layers unmounted and removed; none is not
 * an error. */
int brig_sandbox_pod_binds_remove(const char *data_dir, brig_error_t *err);

#endif
