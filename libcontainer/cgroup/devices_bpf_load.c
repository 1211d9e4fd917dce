#define _GNU_SOURCE
/* Device programs into the kernel: the bpf(2) system call, loading a
 * compiled program (with the verifier's reason when it refuses), and what
 * the kernel says of a loaded one. The lowest layer of the device-program
 * files: the cache and the attach step call it, it calls nothing of them. */
#include "cgroup/devices_bpf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

/* The program's declared license; cgroup device programs call no helpers,
 * so the kernel doesn't care whether it is GPL-compatible. */
#define BRIG_EBPF_LICENSE "Apache-2.0"

int brig_bpf(int cmd, union bpf_attr *attr)
{
    return (int) syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

/* The verifier's log is a trace of every instruction followed by the
 * complaint; keep the complaint: the last line that is neither an
 * instruction ("12: (b7) ...") nor the closing statistics. */
static void log_reason(const char *log, char *out, size_t size)
{
    *out = '\0';
    for (const char *line = log; *line;) {
        size_t len = strcspn(line, "\n");
        bool insn_line = line[0] >= '0' && line[0] <= '9' && memchr(line, ':', len) != NULL;
        bool stats = strncmp(line, "processed ", 10) == 0
                     || strncmp(line, "verification time", 17) == 0;
        if (len > 0 && !insn_line && !stats)
            snprintf(out, size, "%.*s", (int) len, line);
        line += len;
        line += *line == '\n';
    }
}

int brig_ebpf_devices_load(const struct bpf_insn *insns, size_t len, brig_error_t *err)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (uint64_t) (uintptr_t) insns;
    attr.insn_cnt = (uint32_t) len;
    attr.license = (uint64_t) (uintptr_t) BRIG_EBPF_LICENSE;
    int fd = brig_bpf(BPF_PROG_LOAD, &attr);
    if (fd >= 0)
        return fd;
    int saved = errno;
    if (saved != EINVAL && saved != EACCES)
        return brig_error_set(err, saved, "load device program");
    /* Again with the verifier's log, only to say why. */
    size_t log_size = 1 << 16;
    cleanup_free char *log = calloc(1, log_size);
    if (log) {
        attr.log_level = 1;
        attr.log_buf = (uint64_t) (uintptr_t) log;
        attr.log_size = (uint32_t) log_size;
        fd = brig_bpf(BPF_PROG_LOAD, &attr);
        if (fd >= 0)
            return fd;
        char reason[256];
        log_reason(log, reason, sizeof reason);
        if (*reason)
            return brig_error_set(err, saved, "load device program (verifier: %s)", reason);
    }
    return brig_error_set(err, saved, "load device program");
}

int brig_ebpf_program_info(int prog_fd, struct bpf_prog_info *info)
{
    memset(info, 0, sizeof *info);
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.info.bpf_fd = (uint32_t) prog_fd;
    attr.info.info_len = sizeof *info;
    attr.info.info = (uint64_t) (uintptr_t) info;
    return brig_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr);
}

int brig_ebpf_program_id(int prog_fd, uint32_t *id)
{
    struct bpf_prog_info info;
    if (brig_ebpf_program_info(prog_fd, &info) < 0)
        return -1;
    *id = info.id;
    return 0;
}
