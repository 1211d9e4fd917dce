#define _GNU_SOURCE
#include "process/seccomp_enosys.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

#define X32_BIT 0x40000000u

/* The architectures a filter may hold whose token is the kernel's
 * AUDIT_ARCH (x32 is not: its calls come as x86_64 ones with bit 30). */
static const uint32_t candidates[] = {
    SCMP_ARCH_X86_64,  SCMP_ARCH_X86,   SCMP_ARCH_AARCH64, SCMP_ARCH_ARM,
    SCMP_ARCH_PPC64LE, SCMP_ARCH_S390X, SCMP_ARCH_RISCV64,
};

size_t brig_seccomp_enosys_arches(scmp_filter_ctx ctx, const struct brig_seccomp *s,
                                  uint32_t default_action, struct brig_enosys_arch *out)
{
    if (default_action == SCMP_ACT_ALLOW || default_action == SCMP_ACT_LOG
        || default_action == SCMP_ACT_ERRNO(ENOSYS))
        return 0;
    size_t n = 0;
    for (size_t a = 0; a < sizeof candidates / sizeof *candidates; a++) {
        if (n == BRIG_ENOSYS_MAX_ARCHES || seccomp_arch_exist(ctx, candidates[a]) != 0)
            continue;
        int max = -1;
        for (size_t i = 0; i < s->n_syscalls; i++)
            for (size_t k = 0; k < s->syscalls[i].names.n; k++) {
                int nr = seccomp_syscall_resolve_name_arch(candidates[a],
                                                           s->syscalls[i].names.v[k]);
                if (nr > max)
                    max = nr;
            }
        if (max >= 0)
            out[n++] = (struct brig_enosys_arch){ candidates[a], (uint32_t) max };
    }
    return n;
}

static struct sock_filter stmt(uint16_t code, uint32_t k)
{
    return (struct sock_filter){ code, 0, 0, k };
}

static struct sock_filter jump(uint16_t code, uint32_t k, size_t pc, size_t yes, size_t no)
{
    return (struct sock_filter){ code, (uint8_t) (yes - pc - 1), (uint8_t) (no - pc - 1), k };
}

static size_t block_len(const struct brig_enosys_arch *a)
{
    return a->audit_arch == AUDIT_ARCH_X86_64 ? 5 : 4;
}

int brig_seccomp_enosys_stub(const struct brig_enosys_arch *arches, size_t n,
                             const struct sock_filter *program, size_t program_len,
                             struct sock_filter **prog, size_t *len)
{
    size_t stub = 2; /* the jump over ENOSYS, and ENOSYS */
    for (size_t i = 0; i < n; i++)
        stub += block_len(&arches[i]);
    struct sock_filter *p = calloc(stub + program_len, sizeof *p);
    if (p == NULL)
        return -1;
    const size_t skip = stub - 2, enosys = stub - 1, start = stub;
    size_t pc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t next = pc + block_len(&arches[i]);
        p[pc] = stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        p[pc + 1] = jump(BPF_JMP | BPF_JEQ | BPF_K, arches[i].audit_arch, pc + 1, pc + 2, next);
        p[pc + 2] = stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        pc += 3;
        if (arches[i].audit_arch == AUDIT_ARCH_X86_64) {
            p[pc] = jump(BPF_JMP | BPF_JSET | BPF_K, X32_BIT, pc, start, pc + 1);
            pc++;
        }
        p[pc] = jump(BPF_JMP | BPF_JGT | BPF_K, arches[i].max_nr, pc, enosys, start);
        pc++;
    }
    p[skip] = stmt(BPF_JMP | BPF_JA, (uint32_t) (start - skip - 1));
    p[enosys] = stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
    memcpy(p + start, program, program_len * sizeof *p);
    *prog = p;
    *len = stub + program_len;
    return 0;
}

/* libseccomp's program for ctx, read back from a memfd. */
static int export_program(scmp_filter_ctx ctx, struct sock_filter **out, size_t *len,
                          brig_error_t *err)
{
    cleanup_close int fd = (int) syscall(SYS_memfd_create, "brig-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "seccomp filter: memfd");
    int rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0)
        return brig_error_set(err, -rc, "seccomp filter: export");
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t) sizeof **out != 0)
        return brig_error_set(err, EINVAL, "seccomp filter: exported %lld bytes", (long long) size);
    *out = malloc((size_t) size);
    if (*out == NULL)
        return brig_error_set(err, ENOMEM, "seccomp filter");
    if (pread(fd, *out, (size_t) size, 0) != size) {
        free(*out);
        *out = NULL;
        return brig_error_set(err, errno ? errno : EIO, "seccomp filter: read back");
    }
    *len = (size_t) size / sizeof **out;
    return 0;
}

int brig_seccomp_program(scmp_filter_ctx ctx, const struct brig_enosys_arch *arches, size_t n,
                         struct sock_filter **prog, size_t *len, brig_error_t *err)
{
    cleanup_free struct sock_filter *program = NULL;
    size_t program_len = 0;
    if (export_program(ctx, &program, &program_len, err) < 0)
        return -1;
    if (n == 0) {
        *prog = brig_steal_ptr(program);
        *len = program_len;
    } else if (brig_seccomp_enosys_stub(arches, n, program, program_len, prog, len) < 0) {
        return brig_error_set(err, ENOMEM, "seccomp filter");
    }
    if (*len > BPF_MAXINSNS) {
        free(*prog);
        *prog = NULL;
        return brig_error_set(err, E2BIG, "seccomp filter: %zu instructions", *len);
    }
    return 0;
}

int brig_seccomp_load_program(const struct sock_filter *prog, size_t len, unsigned int flags,
                              int *listener, brig_error_t *err)
{
    *listener = -1;
    struct sock_fprog fprog = { .len = (unsigned short) len,
                                .filter = (struct sock_filter *) prog };
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
    if (r < 0 && errno == EACCES)
        return brig_error_set(err, EACCES,
                              "load seccomp filter (it needs no_new_privs or CAP_SYS_ADMIN)");
    if (r < 0)
        return brig_error_set(err, errno, "load seccomp filter");
    if (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)
        *listener = (int) r;
    return 0;
}
