/* Syscalls newer than a seccomp profile get ENOSYS (seccomp.c's filters).
 *
 * A profile names the syscalls it knows; one the kernel added after it
 * (clone3, faccessat2, openat2 were such once) would meet its default
 * action, usually EPERM, and glibc falls back to the older call only on
 * ENOSYS. So, as runc does, a stub runs before libseccomp's program: on
 * each architecture of the filter, a syscall number above the highest the
 * profile names returns ENOSYS. x32 calls (x86_64 numbers with bit 30) are
 * left to libseccomp's program. Internal to libcontainer/process/. */
#ifndef BRIG_SECCOMP_ENOSYS_H
#define BRIG_SECCOMP_ENOSYS_H

#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

#define BRIG_ENOSYS_MAX_ARCHES 8

/* An architecture of the filter (its AUDIT_ARCH) and the highest syscall
 * number the profile names on it. */
struct brig_enosys_arch {
    uint32_t audit_arch;
    uint32_t max_nr;
};

/* The architectures of `ctx` with the highest number the profile's names
 * resolve to on each, into out[] (at most BRIG_ENOSYS_MAX_ARCHES); how
 * many. None when the default action allows (nothing to fall back from). */
size_t brig_seccomp_enosys_arches(scmp_filter_ctx ctx, const struct brig_seccomp *s,
                                  uint32_t default_action, struct brig_enosys_arch *out);

/* The stub for `arches` in front of the program, as classic BPF: *prog
 * (caller frees) of *len instructions, jumps of the program unchanged.
 * Pure. -1 on out-of-memory. */
struct sock_filter;
int brig_seccomp_enosys_stub(const struct brig_enosys_arch *arches, size_t n,
                             const struct sock_filter *program, size_t program_len,
                             struct sock_filter **prog, size_t *len);

/* libseccomp's program for `ctx`, with the stub for `arches` in front
 * (none: as it is): *prog (caller frees) of *len instructions. */
int brig_seccomp_program(scmp_filter_ctx ctx, const struct brig_enosys_arch *arches, size_t n,
                         struct sock_filter **prog, size_t *len, brig_error_t *err);

/* Installs a program with the kernel's `flags` (SECCOMP_FILTER_FLAG_*); a
 * listener's fd in *listener (else -1). */
int brig_seccomp_load_program(const struct sock_filter *prog, size_t len, unsigned int flags,
                              int *listener, brig_error_t *err);

#endif
