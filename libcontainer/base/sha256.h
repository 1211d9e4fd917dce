/* SHA-256 as hex, for names derived from content: the shim's socket
 * (containerd names it by the hash of its address, namespace and id) and
 * the cached device programs (devices_bpf_cache.c). */
#ifndef BRIG_SHA256_H
#define BRIG_SHA256_H

#include <stddef.h>

/* out: 64 hex digits and a NUL. */
void brig_sha256_hex(const void *data, size_t len, char out[65]);

#endif
