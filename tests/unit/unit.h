/* A minimal TAP producer for brig's C unit tests: each CHECK is one test
 * point, and the program exits non-zero when any failed. */
#ifndef BRIG_UNIT_H
#define BRIG_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_run, unit_failed;

#define CHECK(cond, name)                                                                      \
    do {                                                                                       \
        unit_run++;                                                                            \
        if (cond) {                                                                            \
            printf("ok %d - %s\n", unit_run, name);                                            \
        } else {                                                                               \
            unit_failed++;                                                                     \
            printf("not ok %d - %s (%s:%d: %s)\n", unit_run, name, __FILE__, __LINE__, #cond); \
        }                                                                                      \
    } while (0)

#define CHECK_STR(got, want, name)                                                           \
    do {                                                                                     \
        const char *_g = (got), *_w = (want);                                                \
        int _ok = (_g == NULL && _w == NULL) || (_g && _w && strcmp(_g, _w) == 0);           \
        CHECK(_ok, name);                                                                    \
        if (!_ok)                                                                            \
            printf("#   got \"%s\", want \"%s\"\n", _g ? _g : "(null)", _w ? _w : "(null)"); \
    } while (0)

/* An error text "ERROR: message" with `part` in it; frees `got`. */
static inline void unit_check_error(const char *name, char *got, const char *part)
{
    int ok = got && strncmp(got, "ERROR: ", 7) == 0 && strstr(got, part);
    CHECK(ok, name);
    if (!ok)
        printf("#   got \"%s\", want an error with \"%s\"\n", got, part);
    free(got);
}

static inline int unit_done(void)
{
    printf("1..%d\n", unit_run);
    printf("%d passed, %d failed\n", unit_run - unit_failed, unit_failed);
    return unit_failed ? 1 : 0;
}

#endif
