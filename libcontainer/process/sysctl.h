/* linux.sysctl: written through the container's /proc/sys after pivot_root,
 * so network sysctls land in the container's network namespace. */
#ifndef BRIG_SYSCTL_H
#define BRIG_SYSCTL_H

#include "base/error.h"
#include "spec/spec.h"

/* "net.ipv4.ip_forward" → "net/ipv4/ip_forward"; rejects keys that could
 * leave /proc/sys ("..", "/"). Pure; caller frees. */
int brig_sysctl_key_to_path(const char *key, char **out, brig_error_t *err);

/* Fails unless the key belongs to a namespace the container owns (IPC,
 * UTS, network): "sysctl `vm.swappiness` is not namespaced, ...". Pure. */
int brig_sysctl_check_namespaced(const char *key, brig_error_t *err);

/* Checks and writes every entry, in order, through /proc/sys of the
 * calling process's mount namespace; the error names the key. */
/* Every key namespaced, and its namespace (network, uts, ipc) one the spec
 * gives the container: checked by the runtime before anything is created. */
int brig_sysctl_validate(const struct brig_spec *spec, brig_error_t *err);
int brig_sysctl_apply(const struct brig_kv_list *sysctl, brig_error_t *err);

/* The entries of one part: the network namespace's (net.*), or the rest. */
enum brig_sysctl_part { BRIG_SYSCTL_ALL, BRIG_SYSCTL_NET, BRIG_SYSCTL_NOT_NET };
int brig_sysctl_apply_part(const struct brig_kv_list *sysctl, enum brig_sysctl_part part,
                           brig_error_t *err);

/* Whether the spec's network sysctls go to a network namespace it joins by
 * path from a user namespace of its own (a pod's, made by the host for the
 * pod): from inside that user namespace they can't be written, so the init
 * writes them after joining the network namespace and before the user
 * namespace, through the host's /proc, and skips them after pivot_root. */
bool brig_sysctl_net_early(const struct brig_spec *spec);

#endif
