#define _GNU_SOURCE
#include "metrics.h"

#include <errno.h>
#include <stdlib.h>

#include "metrics.pb-c.h"
#include "metrics_v1.pb-c.h"

static int pack(const ProtobufCMessage *m, const char *type_url, Shimpb__Any *any,
                brig_error_t *err)
{
    uint8_t *buf = malloc(protobuf_c_message_get_packed_size(m) + 1);
    if (buf == NULL)
        return brig_error_set(err, ENOMEM, "stats");
    any->type_url = (char *) type_url;
    any->value.data = buf;
    any->value.len = protobuf_c_message_pack(m, buf);
    return 0;
}

static int pack_v2(const struct brig_cgroup_stats *cg, Shimpb__Any *any, brig_error_t *err)
{
    Shimpb__PidsStat pids = SHIMPB__PIDS_STAT__INIT;
    pids.current = cg->pids_current;
    pids.limit = cg->pids_max;
    Shimpb__CPUStat cpu = SHIMPB__CPUSTAT__INIT;
    cpu.usage_usec = cg->cpu_usage_usec;
    cpu.user_usec = cg->cpu_user_usec;
    cpu.system_usec = cg->cpu_system_usec;
    cpu.nr_periods = cg->cpu_nr_periods;
    cpu.nr_throttled = cg->cpu_nr_throttled;
    cpu.throttled_usec = cg->cpu_throttled_usec;
    Shimpb__MemoryStat mem = SHIMPB__MEMORY_STAT__INIT;
    mem.usage = cg->memory_current;
    mem.usage_limit = cg->memory_max;
    mem.swap_usage = cg->memory_swap_current;
    mem.swap_limit = cg->memory_swap_max;
    mem.anon = cg->memory_anon;
    mem.file = cg->memory_file;
    mem.inactive_file = cg->memory_inactive_file;
    mem.pgfault = cg->memory_pgfault;
    mem.pgmajfault = cg->memory_pgmajfault;
    Shimpb__MemoryEvents events = SHIMPB__MEMORY_EVENTS__INIT;
    events.max = cg->memory_events_max;
    events.oom = cg->memory_events_oom;
    events.oom_kill = cg->memory_events_oom_kill;
    /* The library sums io.stat over devices: one entry without a device. */
    Shimpb__IOEntry io_entry = SHIMPB__IOENTRY__INIT;
    io_entry.rbytes = cg->io_rbytes;
    io_entry.wbytes = cg->io_wbytes;
    io_entry.rios = cg->io_rios;
    io_entry.wios = cg->io_wios;
    Shimpb__IOEntry *entries[1] = { &io_entry };
    Shimpb__IOStat io = SHIMPB__IOSTAT__INIT;
    io.n_usage = 1;
    io.usage = entries;
    Shimpb__Metrics m = SHIMPB__METRICS__INIT;
    m.pids = &pids;
    m.cpu = &cpu;
    m.memory = &mem;
    m.io = &io;
    m.memory_events = &events;
    return pack(&m.base, "io.containerd.cgroups.v2.Metrics", any, err);
}

/* v1 counts swap with memory (memsw); the library tells the swap alone. */
static uint64_t sum_limits(uint64_t a, uint64_t b)
{
    return a == UINT64_MAX || b == UINT64_MAX || b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static void fill_v1_memory(const struct brig_cgroup_stats *cg, Shimpb__V1MemoryEntry *usage,
                           Shimpb__V1MemoryEntry *swap, Shimpb__V1MemoryOomControl *oom)
{
    usage->usage = cg->memory_current;
    usage->limit = cg->memory_max;
    usage->failcnt = cg->memory_events_max;
    swap->usage = cg->memory_current + cg->memory_swap_current;
    swap->limit = sum_limits(cg->memory_max, cg->memory_swap_max);
    oom->oom_kill = cg->memory_events_oom_kill;
    oom->under_oom = cg->memory_events_oom > cg->memory_events_oom_kill ? 1 : 0;
}

static int pack_v1(const struct brig_cgroup_stats *cg, Shimpb__Any *any, brig_error_t *err)
{
    Shimpb__V1PidsStat pids = SHIMPB__V1_PIDS_STAT__INIT;
    pids.current = cg->pids_current;
    pids.limit = cg->pids_max;
    Shimpb__V1CPUUsage usage = SHIMPB__V1_CPUUSAGE__INIT;
    usage.total = cg->cpu_usage_usec * 1000;
    usage.kernel = cg->cpu_system_usec * 1000;
    usage.user = cg->cpu_user_usec * 1000;
    Shimpb__V1Throttle throttle = SHIMPB__V1_THROTTLE__INIT;
    throttle.periods = cg->cpu_nr_periods;
    throttle.throttled_periods = cg->cpu_nr_throttled;
    throttle.throttled_time = cg->cpu_throttled_usec * 1000;
    Shimpb__V1CPUStat cpu = SHIMPB__V1_CPUSTAT__INIT;
    cpu.usage = &usage;
    cpu.throttling = &throttle;
    Shimpb__V1MemoryEntry mem_usage = SHIMPB__V1_MEMORY_ENTRY__INIT;
    Shimpb__V1MemoryEntry mem_swap = SHIMPB__V1_MEMORY_ENTRY__INIT;
    Shimpb__V1MemoryOomControl oom = SHIMPB__V1_MEMORY_OOM_CONTROL__INIT;
    fill_v1_memory(cg, &mem_usage, &mem_swap, &oom);
    Shimpb__V1MemoryStat mem = SHIMPB__V1_MEMORY_STAT__INIT;
    /* hierarchical, as the kubelet reads them (working set: usage less
     * the inactive page cache) */
    mem.total_cache = cg->memory_file;
    mem.total_rss = cg->memory_anon;
    mem.total_pg_fault = cg->memory_pgfault;
    mem.total_pg_maj_fault = cg->memory_pgmajfault;
    mem.total_inactive_file = cg->memory_inactive_file;
    mem.usage = &mem_usage;
    mem.swap = &mem_swap;
    /* Summed over devices, as on v2: one entry an operation, no device. */
    Shimpb__V1BlkIOEntry rbytes = SHIMPB__V1_BLK_IOENTRY__INIT, wbytes = rbytes, rios = rbytes,
                         wios = rbytes;
    rbytes.op = rios.op = "Read";
    wbytes.op = wios.op = "Write";
    rbytes.value = cg->io_rbytes;
    wbytes.value = cg->io_wbytes;
    rios.value = cg->io_rios;
    wios.value = cg->io_wios;
    Shimpb__V1BlkIOEntry *bytes[2] = { &rbytes, &wbytes }, *ios[2] = { &rios, &wios };
    Shimpb__V1BlkIOStat blkio = SHIMPB__V1_BLK_IOSTAT__INIT;
    blkio.n_io_service_bytes_recursive = blkio.n_io_serviced_recursive = 2;
    blkio.io_service_bytes_recursive = bytes;
    blkio.io_serviced_recursive = ios;
    Shimpb__V1Metrics m = SHIMPB__V1_METRICS__INIT;
    m.pids = &pids;
    m.cpu = &cpu;
    m.memory = &mem;
    m.blkio = &blkio;
    m.memory_oom_control = &oom;
    return pack(&m.base, "io.containerd.cgroups.v1.Metrics", any, err);
}

int shim_metrics_pack(const struct brig_cgroup_stats *cg, bool v1, Shimpb__Any *any,
                      brig_error_t *err)
{
    return v1 ? pack_v1(cg, any, err) : pack_v2(cg, any, err);
}
