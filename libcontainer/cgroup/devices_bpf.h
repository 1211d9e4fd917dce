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
 * cgroup.c compiles with the compiler and attaches with the attach step. */

/* ---- devices_bpf.c: the compiler --------------------------------------------- */

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
