/* The Stats answer: a container's cgroup statistics as the metrics message
 * containerd decodes for the host: io.containerd.cgroups.v2.Metrics on a
 * unified host, io.containerd.cgroups.v1.Metrics where the v1 hierarchies
 * are (hybrid and legacy hosts), as containerd itself tells them apart. */
#ifndef SHIM_METRICS_H
#define SHIM_METRICS_H

#include <stdbool.h>

#include "base/error.h"
#include "cgroup/cgroup.h"
#include "types.pb-c.h"

/* Packs cg into *any (type_url static, value.data the caller frees). */
int shim_metrics_pack(const struct brig_cgroup_stats *cg, bool v1, Shimpb__Any *any,
                      brig_error_t *err);

#endif
