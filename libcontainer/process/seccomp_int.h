/* Internal to libcontainer/process/: a compiled filter (seccomp.h), shared
 * by the compiler (seccomp.c) and the cache of programs (seccomp_cache.c). */
#ifndef BRIG_SECCOMP_INT_H
#define BRIG_SECCOMP_INT_H

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>

#include "process/seccomp_enosys.h"

struct sock_filter;
struct brig_seccomp_filter {
    scmp_filter_ctx ctx; /* NULL for a program read from the cache */
    bool notify;
    unsigned int kernel_flags; /* SECCOMP_FILTER_FLAG_* of the profile's flags */
    /* Where syscalls newer than the profile get ENOSYS (seccomp_enosys.h);
     * none: libseccomp loads its program as it is. */
    struct brig_enosys_arch enosys[BRIG_ENOSYS_MAX_ARCHES];
    size_t n_enosys;
    /* The program to load, stub included, once built (or read back). */
    struct sock_filter *prog;
    size_t len;
};

#endif
