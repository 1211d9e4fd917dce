/* The runtime's own executable, kept out of the containers' reach. */
#ifndef BRIG_SELFEXE_H
#define BRIG_SELFEXE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* True when this process runs from a sealed in-memory copy of brig. */
bool brig_selfexe_is_sealed(void);

/* Re-executes brig (argv, environ) through a detached read-only bind mount
 * of its executable, or where that can't be had from a sealed in-memory
 * copy, unless it already runs from a read-only mount or such a copy.
 * Returns only on failure. */
int brig_selfexe_reexec_sealed(char **argv, brig_error_t *err);

/* The path of the brig file this process was started from, also after the
 * re-exec; -1 when unknown. */
int brig_selfexe_path(char *buf, size_t size);

#endif
