#define _GNU_SOURCE
/* A device program onto a cgroup: the program comes from the cache of
 * pinned programs (devices_bpf_cache.c), which loads it when it has to;
 * then it is attached, and the programs brig attached before leave. */
#include "cgroup/devices_bpf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

/* Ids of the device programs attached to this cgroup itself. */
static int query_programs(int cgroup_fd, uint32_t **ids, uint32_t *count, brig_error_t *err)
{
    uint32_t cap = 64;
    for (;;) {
        cleanup_free uint32_t *buf = calloc(cap, sizeof *buf);
        if (buf == NULL)
            return brig_error_set(err, ENOMEM, "query device programs");
        union bpf_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.query.target_fd = (uint32_t) cgroup_fd;
        attr.query.attach_type = BPF_CGROUP_DEVICE;
        attr.query.prog_ids = (uint64_t) (uintptr_t) buf;
        attr.query.prog_cnt = cap;
        if (brig_bpf(BPF_PROG_QUERY, &attr) == 0) {
            *ids = brig_steal_ptr(buf);
            *count = attr.query.prog_cnt;
            return 0;
        }
        if (errno != ENOSPC || attr.query.prog_cnt <= cap)
            return brig_error_set(err, errno, "query device programs");
        cap = attr.query.prog_cnt;
    }
}

static int detach_program(int cgroup_fd, uint32_t id, brig_error_t *err)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_id = id;
    cleanup_close int fd = brig_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
    if (fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "device program %u", id);
    memset(&attr, 0, sizeof attr);
    attr.target_fd = (uint32_t) cgroup_fd;
    attr.attach_bpf_fd = (uint32_t) fd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    if (brig_bpf(BPF_PROG_DETACH, &attr) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "detach device program %u", id);
    return 0;
}

/* The new program goes in before the old ones leave: there is never a
 * moment without device rules. While both are attached, both must allow.
 * With the cache (devices_bpf_cache.c), an update to the same rules finds its
 * program attached already: it stays, and only the others leave. */
int brig_ebpf_devices_attach(int cgroup_fd, const struct bpf_insn *insns, size_t len,
                             brig_error_t *err)
{
    cleanup_free uint32_t *old = NULL;
    uint32_t n_old = 0;
    if (query_programs(cgroup_fd, &old, &n_old, err) < 0)
        return -1;
    cleanup_close int prog = brig_ebpf_devices_program(BRIG_EBPF_PIN_DIR, insns, len, err);
    if (prog < 0)
        return -1;
    uint32_t id = 0;
    bool attached = false;
    if (n_old > 0 && brig_ebpf_program_id(prog, &id) == 0)
        for (uint32_t i = 0; i < n_old; i++)
            attached |= old[i] == id;
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.target_fd = (uint32_t) cgroup_fd;
    attr.attach_bpf_fd = (uint32_t) prog;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = BPF_F_ALLOW_MULTI;
    if (!attached && brig_bpf(BPF_PROG_ATTACH, &attr) < 0)
        return brig_error_set(err, errno, "attach device program");
    for (uint32_t i = 0; i < n_old; i++)
        if (!(attached && old[i] == id) && detach_program(cgroup_fd, old[i], err) < 0)
            return -1;
    return 0;
}
