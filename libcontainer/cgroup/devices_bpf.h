/* linux.resources.devices as a BPF_PROG_TYPE_CGROUP_DEVICE program: cgroup
 * v2 has no devices files, the kernel asks this program instead. */
#ifndef BRIG_EBPF_H
#define BRIG_EBPF_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

/* The files below each call only the ones listed after them:
 *   devices_bpf_attach.c  onto a cgroup      -> cache, load
 *   devices_bpf_cache.c   pinned programs    -> load
 *   devices_bpf_load.c    bpf(2), loading
 *   devices_bpf.c         the compiler       (pure)
 * cgroup.c compiles with the compiler and attaches with the attach step;
 * v1_devices_plan.c reads rules and takes the default devices from the
 * compiler, so a v1 cgroup's lists mean what the program does. */

/* ---- devices_bpf.c: the compiler --------------------------------------------- */

/* A rule as the compiler and the v1 devices plan (v1_devices_plan.c) read
 * it: type BPF_DEVCG_DEV_CHAR, BPF_DEVCG_DEV_BLOCK, or 0 for both; -1 is a
 * wildcard major or minor; access is BPF_DEVCG_ACC_* bits, never 0. */
struct brig_devices_rule {
    bool allow;
    int type;
    int64_t major, minor;
    int access;
};
#define BRIG_DEVICES_ACC_ALL (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)

/* The devices every container gets (null, zero, full, random, urandom,
 * tty, ptmx, pts/N), all access allowed, after the spec's rules: the one
 * list the eBPF program and the v1 devices.allow writes both use. */
extern const struct brig_devices_rule brig_devices_default_rules[];
extern const size_t brig_devices_n_default_rules;

/* linux.resources.devices[i], checked and read: type a, c or b (absent is
 * a), major and minor -1..INT32_MAX (absent is -1), access made of r, w
 * and m (absent or empty is all three). Errors name devices[i]. */
int brig_devices_rule_read(const struct brig_device_rule *in, size_t i,
                           struct brig_devices_rule *out, brig_error_t *err);

/* Whether rule r decides a request for `access` (BPF_DEVCG_ACC_* bits) on
 * the device type:major:minor: an allow rule when it grants all of it, a
 * deny rule when it takes any of it away (see brig_ebpf_devices_compile).
 * The meaning of the program the compiler emits, stated in C. */
bool brig_devices_rule_matches(const struct brig_devices_rule *r, int type, int64_t major,
                               int64_t minor, int access);

/* Compiles the rules into instructions. Rules are evaluated like the
 * devices cgroup v1 did: the last matching rule wins; nothing matching is a
 * deny. When `with_defaults` is set, the devices every container needs
 * (null, zero, full, random, urandom, tty, ptmx, pts/N) are allowed with
 * precedence over the spec's rules (as if appended after them, like runc),
 * so a spec's leading "deny all" doesn't take /dev/null away. An allow rule
 * matches an access only if it grants all of it (r and w for a read-write
 * open); a deny rule matches if it denies any part of it. Pure. */
int brig_ebpf_devices_compile(const struct brig_device_rule *rules, size_t n, bool with_defaults,
                              struct bpf_insn **out, size_t *len, brig_error_t *err);

/* For unit tests: runs the compiled program on one access in a tiny
 * interpreter of the instructions brig emits; returns 1 allow, 0 deny. */
int brig_ebpf_devices_eval(const struct bpf_insn *insns, size_t len, char type, int64_t major,
                           int64_t minor, const char *access);

/* ---- devices_bpf_attach.c: onto a cgroup ------------------------------------- */

/* Gets the program (from the cache, or loaded) and attaches it to the
 * cgroup (BPF_F_ALLOW_MULTI), replacing a program brig attached before
 * (update). */
int brig_ebpf_devices_attach(int cgroup_fd, const struct bpf_insn *insns, size_t len,
                             brig_error_t *err);

/* ---- devices_bpf_cache.c: pinned programs ------------------------------------ */

/* Where loaded device programs are pinned for the next container with the
 * same rules. */
#define BRIG_EBPF_PIN_DIR "/sys/fs/bpf/brig"

/* A program fd for these instructions: the one pinned under pin_dir, else
 * a newly loaded one, pinned there for next time. With pin_dir NULL, or not
 * a bpffs directory of ours, it only loads. */
int brig_ebpf_devices_program(const char *pin_dir, const struct bpf_insn *insns, size_t len,
                              brig_error_t *err);

/* ---- devices_bpf_load.c: into the kernel ------------------------------------- */

/* bpf(2). */
int brig_bpf(int cmd, union bpf_attr *attr);

/* Loads the program into the kernel: a program fd, or -1 with the
 * verifier's reason in the error. */
int brig_ebpf_devices_load(const struct bpf_insn *insns, size_t len, brig_error_t *err);

/* What the kernel says of a loaded program (BPF_OBJ_GET_INFO_BY_FD), and
 * its id alone; -1 with errno when the fd is no program. */
int brig_ebpf_program_info(int prog_fd, struct bpf_prog_info *info);
int brig_ebpf_program_id(int prog_fd, uint32_t *id);

#endif
