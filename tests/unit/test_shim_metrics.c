#define _GNU_SOURCE
/* The Stats answer: the same statistics packed as containerd's v2 and v1
 * metrics messages, decoded back. */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "metrics.pb-c.h"
#include "metrics_v1.pb-c.h"
#include "unit.h"

static const struct brig_cgroup_stats stats = {
    .memory_current = 100 << 20,
    .memory_max = 256 << 20,
    .memory_swap_current = 10 << 20,
    .memory_swap_max = UINT64_MAX,
    .memory_events_oom = 3,
    .memory_events_oom_kill = 2,
    .memory_events_max = 17,
    .pids_current = 4,
    .pids_max = UINT64_MAX,
    .cpu_usage_usec = 1500,
    .cpu_user_usec = 1000,
    .cpu_system_usec = 500,
    .cpu_nr_periods = 10,
    .cpu_nr_throttled = 3,
    .cpu_throttled_usec = 2500,
    .io_rbytes = 4096,
    .io_wbytes = 8192,
    .io_rios = 1,
    .io_wios = 2,
};

static void test_v2(void)
{
    brig_error_t err = NULL;
    Shimpb__Any any = SHIMPB__ANY__INIT;
    CHECK(shim_metrics_pack(&stats, false, &any, &err) == 0
              && strcmp(any.type_url, "io.containerd.cgroups.v2.Metrics") == 0,
          "v2: packed as io.containerd.cgroups.v2.Metrics");
    Shimpb__Metrics *m = shimpb__metrics__unpack(NULL, any.value.len, any.value.data);
    CHECK(m && m->memory && m->memory->usage == 100 << 20 && m->memory->swap_usage == 10 << 20
              && m->memory->swap_limit == UINT64_MAX && m->memory_events->oom_kill == 2
              && m->cpu->usage_usec == 1500 && m->pids->limit == UINT64_MAX && m->io->n_usage == 1
              && m->io->usage[0]->wios == 2,
          "v2: decoded back");
    if (m)
        shimpb__metrics__free_unpacked(m, NULL);
    free(any.value.data);
}

static void test_v1(void)
{
    brig_error_t err = NULL;
    Shimpb__Any any = SHIMPB__ANY__INIT;
    CHECK(shim_metrics_pack(&stats, true, &any, &err) == 0
              && strcmp(any.type_url, "io.containerd.cgroups.v1.Metrics") == 0,
          "v1: packed as io.containerd.cgroups.v1.Metrics");
    Shimpb__V1Metrics *m = shimpb__v1_metrics__unpack(NULL, any.value.len, any.value.data);
    CHECK(m && m->memory && m->memory->usage && m->memory->usage->usage == 100 << 20
              && m->memory->usage->limit == 256 << 20 && m->memory->usage->failcnt == 17,
          "v1: memory usage, limit, failcnt");
    CHECK(m && m->memory->swap->usage == 110 << 20 && m->memory->swap->limit == UINT64_MAX,
          "v1: swap as memsw (memory and swap), unlimited when swap is");
    CHECK(m && m->memory_oom_control && m->memory_oom_control->oom_kill == 2
              && m->memory_oom_control->under_oom == 1,
          "v1: memory.oom_control");
    CHECK(m && m->cpu->usage->total == 1500000 && m->cpu->usage->user == 1000000
              && m->cpu->usage->kernel == 500000 && m->cpu->throttling->throttled_time == 2500000
              && m->cpu->throttling->throttled_periods == 3,
          "v1: cpu in nanoseconds");
    CHECK(m && m->pids->current == 4 && m->blkio->n_io_service_bytes_recursive == 2
              && strcmp(m->blkio->io_service_bytes_recursive[0]->op, "Read") == 0
              && m->blkio->io_service_bytes_recursive[0]->value == 4096
              && m->blkio->io_serviced_recursive[1]->value == 2,
          "v1: pids and blkio");
    if (m)
        shimpb__v1_metrics__free_unpacked(m, NULL);
    free(any.value.data);
}

int main(void)
{
    test_v2();
    test_v1();
    return unit_done();
}
