/* The ENOSYS stub in front of libseccomp's program (process/
 * seccomp_enosys.h), run on a small classic-BPF interpreter of the
 * instructions it uses: numbers past the profile's highest get ENOSYS on
 * their architecture, the rest (x32 calls, other architectures) go on to
 * the program. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>

#include "process/seccomp_enosys.h"
#include "unit.h"

/* What the filter returns for (arch, nr); 0xdead on a bad program. */
static uint32_t run(const struct sock_filter *p, size_t len, uint32_t arch, uint32_t nr)
{
    uint32_t a = 0;
    for (size_t pc = 0; pc < len; pc++) {
        const struct sock_filter *i = &p[pc];
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            a = i->k == offsetof(struct seccomp_data, arch) ? arch
                : i->k == offsetof(struct seccomp_data, nr) ? nr
                                                            : 0xdead;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += a == i->k ? i->jt : i->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += a > i->k ? i->jt : i->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += (a & i->k) ? i->jt : i->jf;
            break;
        case BPF_JMP | BPF_JA:
            pc += i->k;
            break;
        case BPF_RET | BPF_K:
            return i->k;
        default:
            return 0xdead;
        }
    }
    return 0xdead;
}

int main(void)
{
    /* The "program": allow everything. */
    static const struct sock_filter program[] = { { BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW } };
    const struct brig_enosys_arch arches[] = { { AUDIT_ARCH_X86_64, 400 },
                                               { AUDIT_ARCH_I386, 300 } };
    struct sock_filter *p = NULL;
    size_t len = 0;
    CHECK(brig_seccomp_enosys_stub(arches, 2, program, 1, &p, &len) == 0 && len > 1,
          "the stub is built");
    if (p == NULL)
        return unit_done();
    const uint32_t enosys = SECCOMP_RET_ERRNO | ENOSYS;
    CHECK(run(p, len, AUDIT_ARCH_X86_64, 401) == enosys, "x86_64 past its highest: ENOSYS");
    CHECK(run(p, len, AUDIT_ARCH_X86_64, 1000) == enosys, "x86_64 1000: ENOSYS");
    CHECK(run(p, len, AUDIT_ARCH_X86_64, 400) == SECCOMP_RET_ALLOW,
          "x86_64 at its highest: the program");
    CHECK(run(p, len, AUDIT_ARCH_X86_64, 0) == SECCOMP_RET_ALLOW, "x86_64 0: the program");
    CHECK(run(p, len, AUDIT_ARCH_X86_64, 0x40000000u | 500) == SECCOMP_RET_ALLOW,
          "an x32 call: the program's to judge");
    CHECK(run(p, len, AUDIT_ARCH_I386, 301) == enosys, "i386 past its own highest: ENOSYS");
    CHECK(run(p, len, AUDIT_ARCH_I386, 300) == SECCOMP_RET_ALLOW,
          "i386 at its highest: the program");
    CHECK(run(p, len, AUDIT_ARCH_AARCH64, 5000) == SECCOMP_RET_ALLOW,
          "an architecture the stub doesn't know: the program");
    free(p);
    CHECK(brig_seccomp_enosys_stub(arches, 0, program, 1, &p, &len) == 0
              && run(p, len, AUDIT_ARCH_X86_64, 5000) == SECCOMP_RET_ALLOW,
          "no architecture: straight to the program");
    free(p);
    return unit_done();
}
