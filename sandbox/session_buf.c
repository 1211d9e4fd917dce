#define _GNU_SOURCE
/* A session's unread output (session_int.h): a ring of fixed size that
 * drops its oldest bytes, counting them, rather than grow or stop the
 * process writing. Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/session_int.h"

int brig_session_buf_init(struct brig_session_buf *b, size_t cap, brig_error_t *err)
{
    *b = (struct brig_session_buf){ .cap = cap };
    /* One byte more: the linear view ends in a NUL (regexec's readers). */
    b->data = malloc(cap + 1);
    return b->data ? 0 : brig_error_set(err, ENOMEM, "session buffer");
}

void brig_session_buf_free(struct brig_session_buf *b)
{
    free(b->data);
    *b = (struct brig_session_buf){ 0 };
}

/* Forgets the n oldest unread bytes. */
static void drop(struct brig_session_buf *b, size_t n)
{
    b->head = (b->head + n) % b->cap;
    b->len -= n;
    b->dropped += n;
}

void brig_session_buf_append(struct brig_session_buf *b, const char *p, size_t n)
{
    if (b->cap == 0) {
        b->dropped += n;
        return;
    }
    if (n > b->cap) {
        /* Only its last cap bytes could stay: the rest is dropped unseen. */
        b->dropped += n - b->cap;
        p += n - b->cap;
        n = b->cap;
    }
    if (b->len + n > b->cap)
        drop(b, b->len + n - b->cap);
    size_t tail = (b->head + b->len) % b->cap;
    size_t first = n < b->cap - tail ? n : b->cap - tail;
    memcpy(b->data + tail, p, first);
    memcpy(b->data, p + first, n - first);
    b->len += n;
}

static void reverse(char *p, size_t n)
{
    for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
        char c = p[i];
        p[i] = p[j - 1];
        p[j - 1] = c;
    }
}

const char *brig_session_buf_linear(struct brig_session_buf *b)
{
    if (b->head + b->len > b->cap) {
        /* Wrapped: rotate the whole ring left by head (three reversals),
         * which needs no second buffer. */
        reverse(b->data, b->head);
        reverse(b->data + b->head, b->cap - b->head);
        reverse(b->data, b->cap);
        b->head = 0;
    }
    b->data[b->head + b->len] = '\0';
    return b->data + b->head;
}

int brig_session_buf_take(struct brig_session_buf *b, char **out, size_t *len, uint64_t *dropped,
                          brig_error_t *err)
{
    *out = malloc(b->len + 1);
    if (*out == NULL)
        return brig_error_set(err, ENOMEM, "session output");
    memcpy(*out, brig_session_buf_linear(b), b->len);
    (*out)[b->len] = '\0';
    *len = b->len;
    *dropped = b->dropped;
    b->head = b->len = 0;
    b->dropped = 0;
    return 0;
}
