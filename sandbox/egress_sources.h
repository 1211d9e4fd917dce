/* The allow-list and the networks as this host has them, for whatever
 * applies egress.h's rules on it (brig-egress, brig-fetch): egress.conf
 * read, or the list made from the host's own package sources, and the
 * host's own networks. Reads files and runs npm; egress.h's parsing and
 * matching stay pure. */
#ifndef BRIG_SANDBOX_EGRESS_SOURCES_H
#define BRIG_SANDBOX_EGRESS_SOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "sandbox/egress.h"

/* egress.conf: $BRIG_EGRESS_CONFIG, else BRIG_EGRESS_CONF. */
const char *brig_egress_conf_path(void);

/* The file at `path` parsed; when it does not exist, the host's package
 * sources (apt's and pip's; npm's comes from brig_egress_npm_start) and
 * *from_sources set. */
int brig_egress_load_conf(const char *path, struct brig_egress_conf *c, bool *from_sources,
                          brig_error_t *err);

/* `npm config get registry`, as the host's npm is configured, started:
 * its output comes on *out_fd (non-blocking, close-on-exec), its first
 * line the registry's URL (brig_egress_conf_add_url). -1 where npm can't
 * be run. npm takes seconds to start on a slow machine. */
pid_t brig_egress_npm_start(int *out_fd);

/* npm's registry added to `c` as brig_egress_npm_start's child says it,
 * waited for up to timeout_ms: 1 when a rule was added, 0 when none
 * (no npm, no answer in time), -1 on ENOMEM. */
int brig_egress_npm_add(struct brig_egress_conf *c, int timeout_ms);

/* The networks the host's interfaces are on (egress.h: never a
 * sandbox's to reach). -1 with errno when they can't be read. */
int brig_egress_local_nets(struct brig_egress_net **out, size_t *n);

#endif
