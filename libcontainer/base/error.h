/* The error every fallible libcontainer function reports.
 *
 * Convention: a function returns a negative value on failure and fills
 * *err; callers add their own context with brig_error_wrap() on the way up,
 * so the final message reads "create `c1`: mount `/proc`: Permission denied".
 * The library never prints and never exits. */
#ifndef BRIG_ERROR_H
#define BRIG_ERROR_H

#include <stdarg.h>

struct brig_error {
    int errnum; /* errno of the root cause, 0 when it is not a system error */
    char *msg;  /* full message, context first */
};
typedef struct brig_error *brig_error_t;

/* errnum of an error about the state a container is in (running, paused)
 * rather than a failed system call: a caller may offer what allows it. */
#define BRIG_E_STATE (-1000)
/* errnum of an error in what the caller asked (a bad flag, field or
 * path), as opposed to the system failing it. */
#define BRIG_E_INPUT (-1001)

/* Sets *err to a new error; appends ": strerror(errnum)" when errnum != 0.
 * Always returns -1 so callers can `return brig_error_set(...)`. Any error
 * already in *err is released first. */
int brig_error_set(brig_error_t *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int brig_error_setv(brig_error_t *err, int errnum, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Like brig_error_set, but errnum (an errno, or BRIG_E_*) only classifies
 * the error (a front end maps it to an exit or a status) and is not named
 * in the message. */
int brig_error_kind(brig_error_t *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes "<context>: " to the message already in *err. Returns -1. */
int brig_error_wrap(brig_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Takes ownership of an already-formatted message (used to carry a child's
 * error across the sync socket). Returns -1. */
int brig_error_from_message(brig_error_t *err, int errnum, const char *msg);

void brig_error_release(brig_error_t *err);

#endif
