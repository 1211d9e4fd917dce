#define _GNU_SOURCE
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Used when even the error can't be allocated: the caller still sees a
 * failure with a message instead of a NULL dereference. */
static struct brig_error out_of_memory = { ENOMEM, (char *) "out of memory" };

static int set_message(brig_error_t *err, int errnum, char *msg)
{
    brig_error_release(err);
    if (msg == NULL) {
        *err = &out_of_memory;
        return -1;
    }
    struct brig_error *e = malloc(sizeof *e);
    if (e == NULL) {
        free(msg);
        *err = &out_of_memory;
        return -1;
    }
    e->errnum = errnum;
    e->msg = msg;
    *err = e;
    return -1;
}

int brig_error_setv(brig_error_t *err, int errnum, const char *fmt, va_list ap)
{
    char *base = NULL;
    if (vasprintf(&base, fmt, ap) < 0)
        return set_message(err, ENOMEM, NULL);
    if (errnum == 0)
        return set_message(err, 0, base);
    char *full = NULL;
    int r = asprintf(&full, "%s: %s", base, strerror(errnum));
    free(base);
    return set_message(err, errnum, r < 0 ? NULL : full);
}

int brig_error_set(brig_error_t *err, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    brig_error_setv(err, errnum, fmt, ap);
    va_end(ap);
    return -1;
}

int brig_error_wrap(brig_error_t *err, const char *fmt, ...)
{
    if (*err == NULL || *err == &out_of_memory)
        return -1;
    char *ctx = NULL, *full = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&ctx, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -1;
    if (asprintf(&full, "%s: %s", ctx, (*err)->msg) >= 0) {
        free((*err)->msg);
        (*err)->msg = full;
    }
    free(ctx);
    return -1;
}

int brig_error_from_message(brig_error_t *err, int errnum, const char *msg)
{
    return set_message(err, errnum, strdup(msg));
}

void brig_error_release(brig_error_t *err)
{
    if (*err == NULL)
        return;
    if (*err != &out_of_memory) {
        free((*err)->msg);
        free(*err);
    }
    *err = NULL;
}

int brig_error_kind(brig_error_t *err, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    brig_error_setv(err, 0, fmt, ap);
    va_end(ap);
    if (*err && *err != &out_of_memory)
        (*err)->errnum = errnum;
    return -1;
}
