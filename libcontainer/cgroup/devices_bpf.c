#define _GNU_SOURCE
/* Device rules compiled into a BPF_PROG_TYPE_CGROUP_DEVICE program, and a
 * tiny interpreter of it for the unit tests. Pure: nothing here talks to
 * the kernel (devices_bpf_load.c does, and devices_bpf_attach.c puts the
 * program on a cgroup).
 *
 * The program reads struct bpf_cgroup_dev_ctx once into registers
 *   r2 = device type (BPF_DEVCG_DEV_CHAR/BLOCK), r3 = requested access bits,
 *   r4 = major, r5 = minor
 * then tests the rules from the last to the first: each rule is a block of
 * conditional jumps to the next block, ending in "r0 = allow; exit". The
 * first block that matches decides, so the last matching rule wins, as the
 * v1 devices cgroup did; past the last block, "r0 = 0; exit" denies.
 * Neighbouring rules that differ only in their minor (below 32) share one
 * block that tests the minor against a bitmask: the verifier's time grows
 * with the branches it walks (0.28 ms for the default rules one by one),
 * and every container's rules end with eight such neighbours.
 *
 * Access: an allow rule matches when it grants every access requested (an
 * open for read and write needs both r and w from one rule); a deny rule
 * matches when it takes away any of them. So "allow all, then deny w of
 * 1:3" still lets 1:3 be opened read-only, and never read-write. */
#include "cgroup/devices_bpf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

enum { R0, R1, R2, R3, R4, R5 };
#define ACC_ALL BRIG_DEVICES_ACC_ALL

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i = { .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
    return i;
}

#define LDX_W(dst, src, off) insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0)
#define ALU_IMM(op, dst, imm) insn(BPF_ALU64 | (op) | BPF_K, dst, 0, 0, imm)
#define ALU_REG(op, dst, src) insn(BPF_ALU64 | (op) | BPF_X, dst, src, 0, 0)
#define MOV_REG(dst, src) ALU_REG(BPF_MOV, dst, src)
#define JMP_IMM(op, dst, imm, off) insn(BPF_JMP | (op) | BPF_K, dst, 0, off, imm)
#define EXIT() insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* What every container gets: null, zero, full, random, urandom, tty, ptmx
 * and the pts devices. */
const struct brig_devices_rule brig_devices_default_rules[] = {
    { true, BPF_DEVCG_DEV_CHAR, 1, 3, ACC_ALL }, { true, BPF_DEVCG_DEV_CHAR, 1, 5, ACC_ALL },
    { true, BPF_DEVCG_DEV_CHAR, 1, 7, ACC_ALL }, { true, BPF_DEVCG_DEV_CHAR, 1, 8, ACC_ALL },
    { true, BPF_DEVCG_DEV_CHAR, 1, 9, ACC_ALL }, { true, BPF_DEVCG_DEV_CHAR, 5, 0, ACC_ALL },
    { true, BPF_DEVCG_DEV_CHAR, 5, 2, ACC_ALL }, { true, BPF_DEVCG_DEV_CHAR, 136, -1, ACC_ALL },
};
const size_t brig_devices_n_default_rules = sizeof brig_devices_default_rules
                                            / sizeof brig_devices_default_rules[0];

static int access_bits(const char *access, int *out)
{
    int bits = 0;
    for (const char *p = access ? access : ""; *p; p++) {
        if (*p == 'r')
            bits |= BPF_DEVCG_ACC_READ;
        else if (*p == 'w')
            bits |= BPF_DEVCG_ACC_WRITE;
        else if (*p == 'm')
            bits |= BPF_DEVCG_ACC_MKNOD;
        else
            return -1;
    }
    /* Absent (or empty) access means all of it, per the runtime spec. */
    *out = bits ? bits : ACC_ALL;
    return 0;
}

int brig_devices_rule_read(const struct brig_device_rule *in, size_t i,
                           struct brig_devices_rule *out, brig_error_t *err)
{
    const char *t = in->type ? in->type : "a";
    if (strcmp(t, "a") == 0)
        out->type = 0;
    else if (strcmp(t, "c") == 0)
        out->type = BPF_DEVCG_DEV_CHAR;
    else if (strcmp(t, "b") == 0)
        out->type = BPF_DEVCG_DEV_BLOCK;
    else
        return brig_error_set(err, 0, "linux.resources.devices[%zu]: type `%s` is not a, c or b", i,
                              t);
    out->major = in->has_major ? in->major : -1;
    out->minor = in->has_minor ? in->minor : -1;
    /* Compared as 32-bit immediates; real majors and minors are far below. */
    if (out->major < -1 || out->major > INT32_MAX || out->minor < -1 || out->minor > INT32_MAX)
        return brig_error_set(err, 0,
                              "linux.resources.devices[%zu]: bad device number %" PRId64
                              ":%" PRId64,
                              i, out->major, out->minor);
    if (access_bits(in->access, &out->access) < 0)
        return brig_error_set(err, 0,
                              "linux.resources.devices[%zu]: access `%s` is not a "
                              "combination of r, w and m",
                              i, in->access);
    out->allow = in->allow;
    return 0;
}

bool brig_devices_rule_matches(const struct brig_devices_rule *r, int type, int64_t major,
                               int64_t minor, int access)
{
    if ((r->type != 0 && r->type != type) || (r->major >= 0 && r->major != major)
        || (r->minor >= 0 && r->minor != minor))
        return false;
    return r->allow ? (access & ~r->access) == 0 : (access & r->access) != 0;
}

struct prog {
    struct bpf_insn *v;
    size_t n, cap;
};

static int prog_reserve(struct prog *p, size_t more)
{
    if (p->n + more <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap : 64;
    while (cap < p->n + more)
        cap *= 2;
    struct bpf_insn *bigger = realloc(p->v, cap * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    p->v = bigger;
    p->cap = cap;
    return 0;
}

/* A block under construction: its jumps skip to the next block, and get
 * their offsets once the block's length is known. */
struct block {
    struct bpf_insn v[12];
    size_t k;
    size_t jumps[5], nj;
};

static void block_skip_unless(struct block *b, struct bpf_insn jump)
{
    b->jumps[b->nj++] = b->k;
    b->v[b->k++] = jump;
}

/* The tests a rule or a group makes before its minor: type, access, major. */
static void block_prefix(struct block *b, const struct brig_devices_rule *r)
{
    if (r->type != 0)
        block_skip_unless(b, JMP_IMM(BPF_JNE, R2, r->type, 0));
    if (r->access != ACC_ALL) {
        b->v[b->k++] = MOV_REG(R1, R3);
        b->v[b->k++] = ALU_IMM(BPF_AND, R1, r->allow ? ACC_ALL & ~r->access : r->access);
        block_skip_unless(b, JMP_IMM(r->allow ? BPF_JNE : BPF_JEQ, R1, 0, 0));
    }
    if (r->major >= 0)
        block_skip_unless(b, JMP_IMM(BPF_JNE, R4, (int32_t) r->major, 0));
}

static int block_finish(struct prog *p, struct block *b, bool allow)
{
    b->v[b->k++] = ALU_IMM(BPF_MOV, R0, allow ? 1 : 0);
    b->v[b->k++] = EXIT();
    for (size_t j = 0; j < b->nj; j++)
        b->v[b->jumps[j]].off = (int16_t) (b->k - 1 - b->jumps[j]);
    if (prog_reserve(p, b->k) < 0)
        return -1;
    memcpy(p->v + p->n, b->v, b->k * sizeof b->v[0]);
    p->n += b->k;
    return 0;
}

/* Appends one rule's block; *unconditional tells that it matches every
 * access, so nothing after it could ever run (and the verifier refuses
 * unreachable instructions). */
static int emit_rule(struct prog *p, const struct brig_devices_rule *r, bool *unconditional)
{
    struct block b = { .k = 0 };
    block_prefix(&b, r);
    if (r->minor >= 0)
        block_skip_unless(&b, JMP_IMM(BPF_JNE, R5, (int32_t) r->minor, 0));
    *unconditional = b.nj == 0;
    return block_finish(p, &b, r->allow);
}

/* Minors a group can hold: bit `minor` of a 32-bit mask. */
#define GROUP_MINORS 32

static bool same_but_minor(const struct brig_devices_rule *a, const struct brig_devices_rule *b)
{
    return a->allow == b->allow && a->type == b->type && a->major == b->major
           && a->access == b->access && a->major >= 0 && a->minor >= 0 && a->minor < GROUP_MINORS
           && b->minor >= 0 && b->minor < GROUP_MINORS;
}

/* One block for the rules that differ only in their minor:
 * r1 = mask >> minor; match when bit 0 is set. The minor is checked to be
 * below 32 first, which the verifier also wants to see before a shift by
 * a register. */
static int emit_group(struct prog *p, const struct brig_devices_rule *first, uint32_t minors)
{
    struct block b = { .k = 0 };
    block_prefix(&b, first);
    block_skip_unless(&b, JMP_IMM(BPF_JGT, R5, GROUP_MINORS - 1, 0));
    b.v[b.k++] = ALU_IMM(BPF_MOV, R1, (int32_t) minors);
    b.v[b.k++] = ALU_REG(BPF_RSH, R1, R5);
    b.v[b.k++] = ALU_IMM(BPF_AND, R1, 1);
    block_skip_unless(&b, JMP_IMM(BPF_JEQ, R1, 0, 0));
    return block_finish(p, &b, first->allow);
}

static int emit_prologue(struct prog *p)
{
    if (prog_reserve(p, 6) < 0)
        return -1;
    p->v[p->n++] = LDX_W(R2, R1, offsetof(struct bpf_cgroup_dev_ctx, access_type));
    p->v[p->n++] = ALU_IMM(BPF_AND, R2, 0xffff);
    p->v[p->n++] = LDX_W(R3, R1, offsetof(struct bpf_cgroup_dev_ctx, access_type));
    p->v[p->n++] = ALU_IMM(BPF_RSH, R3, 16);
    p->v[p->n++] = LDX_W(R4, R1, offsetof(struct bpf_cgroup_dev_ctx, major));
    p->v[p->n++] = LDX_W(R5, R1, offsetof(struct bpf_cgroup_dev_ctx, minor));
    return 0;
}

/* The defaults come after the spec's rules in last-match-wins order, so
 * they take precedence: a spec's usual leading "deny all" must not take
 * /dev/null away (runc appends its allowed devices the same way). */
static int compile_rules(const struct brig_devices_rule *rules, size_t n, struct prog *p)
{
    if (emit_prologue(p) < 0)
        return -1;
    for (size_t i = n; i-- > 0;) {
        /* rules[first..i] differ only in their minor: neighbours, so no
         * other rule comes between them in the order of testing. */
        size_t first = i;
        uint32_t minors = 0;
        while (first > 0 && same_but_minor(&rules[i], &rules[first - 1]))
            first--;
        if (first < i) {
            for (size_t j = first; j <= i; j++)
                minors |= UINT32_C(1) << rules[j].minor;
            if (emit_group(p, &rules[i], minors) < 0)
                return -1;
            i = first;
            continue;
        }
        bool unconditional = false;
        if (emit_rule(p, &rules[i], &unconditional) < 0)
            return -1;
        if (unconditional)
            return 0;
    }
    if (prog_reserve(p, 2) < 0)
        return -1;
    p->v[p->n++] = ALU_IMM(BPF_MOV, R0, 0);
    p->v[p->n++] = EXIT();
    return 0;
}

int brig_ebpf_devices_compile(const struct brig_device_rule *rules, size_t n, bool with_defaults,
                              struct bpf_insn **out, size_t *len, brig_error_t *err)
{
    size_t total = n + (with_defaults ? brig_devices_n_default_rules : 0);
    cleanup_free struct brig_devices_rule *all = calloc(total ? total : 1, sizeof *all);
    if (all == NULL)
        return brig_error_set(err, ENOMEM, "device rules");
    for (size_t i = 0; i < n; i++)
        if (brig_devices_rule_read(&rules[i], i, &all[i], err) < 0)
            return -1;
    if (with_defaults)
        memcpy(all + n, brig_devices_default_rules,
               sizeof brig_devices_default_rules[0] * brig_devices_n_default_rules);
    struct prog p = { NULL, 0, 0 };
    if (compile_rules(all, total, &p) < 0) {
        free(p.v);
        return brig_error_set(err, ENOMEM, "device rules");
    }
    *out = p.v;
    *len = p.n;
    return 0;
}

/* ---- the test interpreter -------------------------------------------------------- */

/* Runs exactly the instruction forms the compiler emits; anything else
 * (or a jump out of the program) returns -1. */
int brig_ebpf_devices_eval(const struct bpf_insn *insns, size_t len, char type, int64_t major,
                           int64_t minor, const char *access)
{
    int bits = 0;
    if (access_bits(access, &bits) < 0)
        return -1;
    struct bpf_cgroup_dev_ctx ctx = {
        .access_type = (uint32_t) bits << 16
                       | (type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR),
        .major = (uint32_t) major,
        .minor = (uint32_t) minor,
    };
    uint64_t reg[11] = { 0 };
    for (size_t pc = 0, steps = 0; pc < len && steps <= len; pc++, steps++) {
        const struct bpf_insn *i = &insns[pc];
        if (i->dst_reg > 10 || i->src_reg > 10)
            return -1;
        uint64_t imm = (uint64_t) (int64_t) i->imm;
        switch (i->code) {
        case BPF_LDX | BPF_MEM | BPF_W:
            if (i->src_reg != R1 || i->off < 0 || (size_t) i->off + 4 > sizeof ctx)
                return -1;
            uint32_t word;
            memcpy(&word, (const char *) &ctx + i->off, 4);
            reg[i->dst_reg] = word;
            break;
        case BPF_ALU64 | BPF_AND | BPF_K:
            reg[i->dst_reg] &= imm;
            break;
        case BPF_ALU64 | BPF_RSH | BPF_K:
            reg[i->dst_reg] >>= (imm & 63);
            break;
        case BPF_ALU64 | BPF_RSH | BPF_X:
            reg[i->dst_reg] >>= (reg[i->src_reg] & 63);
            break;
        case BPF_ALU64 | BPF_MOV | BPF_K:
            reg[i->dst_reg] = imm;
            break;
        case BPF_ALU64 | BPF_MOV | BPF_X:
            reg[i->dst_reg] = reg[i->src_reg];
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            if (reg[i->dst_reg] == imm)
                pc += (size_t) i->off;
            break;
        case BPF_JMP | BPF_JNE | BPF_K:
            if (reg[i->dst_reg] != imm)
                pc += (size_t) i->off;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            if (reg[i->dst_reg] > imm)
                pc += (size_t) i->off;
            break;
        case BPF_JMP | BPF_EXIT:
            return (int) reg[R0];
        default:
            return -1;
        }
    }
    return -1;
}
