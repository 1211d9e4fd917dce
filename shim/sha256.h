/* SHA-256 of a short string, as hex: containerd names a shim's socket by
 * the hash of its address, namespace and id, so the shim must compute the
 * same name. */
#ifndef SHIM_SHA256_H
#define SHIM_SHA256_H

#include <stddef.h>

/* out: 64 hex digits and a NUL. */
void shim_sha256_hex(const void *data, size_t len, char out[65]);

#endif
