/* Scope-bound ownership: a variable declared with one of these is released
 * on every return path, so early returns can't leak. */
#ifndef BRIG_CLEANUP_H
#define BRIG_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void brig_freep(void *p)
{
    free(*(void **) p);
}

static inline void brig_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}

static inline void brig_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

static inline void brig_closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

#define cleanup_free __attribute__((cleanup(brig_freep)))
#define cleanup_close __attribute__((cleanup(brig_closep)))
#define cleanup_file __attribute__((cleanup(brig_fclosep)))
#define cleanup_dir __attribute__((cleanup(brig_closedirp)))

/* Hands ownership out of a cleanup variable. */
/* clang-format off */
#define brig_steal_fd(fd) ({ int _fd = (fd); (fd) = -1; _fd; })
#define brig_steal_ptr(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
/* clang-format on */

#endif
