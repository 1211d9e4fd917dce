/* SHA-256 as hex, for names derived from content: the shim's socket
 * (containerd names it by the hash of its address, namespace and id) and
 * the cached device programs (devices_bpf_cache.c); and, a piece at a
 * time, of streams too large to hold (an image's layers). */
#ifndef BRIG_SHA256_H
#define BRIG_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* out: 64 hex digits and a NUL. */
void brig_sha256_hex(const void *data, size_t len, char out[65]);

/* The same over data given in pieces: init, update as often as needed,
 * final once. */
struct brig_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
};
void brig_sha256_init(struct brig_sha256 *c);
void brig_sha256_update(struct brig_sha256 *c, const void *data, size_t len);
void brig_sha256_final_hex(struct brig_sha256 *c, char out[65]);

#endif
