#define _GNU_SOURCE
/* libFuzzer target: what `session input` reads, the input up to its first
 * NUL as its CHARS with their C escapes (brig_session_unescape) and as a
 * session's name (brig_session_name_validate). The decoded bytes then go
 * through a session's output ring as a process's writes would
 * (brig_session_buf_append, _linear, _take), in pieces the input's first
 * bytes size, into a ring of 1 to 64 bytes: what is taken must be the
 * last bytes written, and what was dropped the rest. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "sandbox/session_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void through_ring(const uint8_t *data, size_t size, const char *bytes, size_t n)
{
    struct brig_session_buf b;
    brig_error_t err = NULL;
    if (brig_session_buf_init(&b, size ? 1 + data[0] % 64 : 16, &err) < 0) {
        brig_error_release(&err);
        return;
    }
    size_t cap = b.cap;
    for (size_t at = 0, k = 1; at < n; k++) {
        size_t piece = k < size ? data[k] % 80 : n - at;
        if (piece > n - at)
            piece = n - at;
        brig_session_buf_append(&b, bytes + at, piece);
        at += piece;
        if (k < size && data[k] & 0x80)
            brig_session_buf_linear(&b);
    }
    char *out = NULL;
    size_t len = 0;
    uint64_t dropped = 0;
    if (brig_session_buf_take(&b, &out, &len, &dropped, &err) < 0) {
        brig_error_release(&err);
    } else {
        size_t kept = n < cap ? n : cap;
        if (len != kept || dropped != n - kept || memcmp(out, bytes + n - kept, kept) != 0
            || out[len] != '\0')
            __builtin_trap();
    }
    free(out);
    brig_session_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *) data, size);
    if (text == NULL)
        return 0;
    brig_error_t err = NULL;
    if (brig_session_name_validate(text, &err) < 0)
        brig_error_release(&err);
    char *bytes = NULL;
    size_t n = 0;
    if (brig_session_unescape(text, &bytes, &n, &err) < 0) {
        brig_error_release(&err);
    } else {
        if (n > strlen(text) || bytes[n] != '\0')
            __builtin_trap();
        through_ring(data, size, bytes, n);
        free(bytes);
    }
    free(text);
    return 0;
}
