/* cgroup v1's pure half: the resources → file writes plan, the devices
 * allow/deny lists checked against the eBPF program v2 gets (by the model
 * of the kernel's list, over random rule sets), the writes that take a
 * live cgroup's list to the rules' without a gap (named cases, and random
 * pairs of lists replayed write by write on the model), the controllers a
 * v1 plan names, exec --cgroup's sub-cgroups as read; then, as root on a
 * host with a v1 devices hierarchy, the lists written into a real cgroup,
 * updated from what its devices.list reads, and devices opened from
 * inside it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "cgroup/devices_bpf.h"
#include "unit.h"

/* A TAP skip that still counts as a test point, so the plan line matches. */
#define SKIP(why) printf("ok %d - # SKIP %s\n", ++unit_run, why)

/* ---- helpers ---------------------------------------------------------------------- */

/* The writes as "file=value; file=value". */
static char *writes_text(const struct brig_cgroup_write *w, size_t n)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    for (size_t i = 0; f && i < n; i++)
        fprintf(f, "%s%s=%s", i ? "; " : "", w[i].file, w[i].value);
    if (f)
        fclose(f);
    return text;
}

/* What a plan function returned, as text ("ERROR: message" for a
 * failure); takes the writes and the error. */
static char *result_text(int rc, struct brig_cgroup_write *w, size_t n, brig_error_t *err)
{
    char *text = NULL;
    if (rc == 0)
        text = writes_text(w, n);
    else if (asprintf(&text, "ERROR: %s", (*err)->msg) < 0)
        text = NULL;
    brig_cgroup_plan_free(w, n);
    brig_error_release(err);
    return text;
}

static char *v1_text(const struct brig_resources *r)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    int rc = brig_cgroup_v1_plan(r, &w, &n, &err);
    return result_text(rc, w, n, &err);
}

static char *devices_text(const struct brig_device_rule *rules, size_t n_rules)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    int rc = brig_cgroup_v1_devices_plan(rules, n_rules, &w, &n, &err);
    return result_text(rc, w, n, &err);
}

/* got is freed. */
static void check_text(const char *name, char *got, const char *want)
{
    CHECK_STR(got, want, name);
    free(got);
}

/* ---- resources -------------------------------------------------------------------- */

/* A resources section and what its plan must be: the writes, or "ERROR: "
 * and a part of the message. */
struct resources_case {
    const char *name;
    struct brig_resources r;
    const char *want;
};
#define MEMORY(...)                     \
    {                                   \
        .memory = &(struct brig_memory) \
        {                               \
            __VA_ARGS__                 \
        }                               \
    }
#define CPU(...)                  \
    {                             \
        .cpu = &(struct brig_cpu) \
        {                         \
            __VA_ARGS__           \
        }                         \
    }

static void run_cases(const struct resources_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *got = v1_text(&cases[i].r);
        if (strncmp(cases[i].want, "ERROR: ", 7) == 0)
            unit_check_error(cases[i].name, got, cases[i].want + 7);
        else
            check_text(cases[i].name, got, cases[i].want);
    }
}

static void test_memory(void)
{
    const struct resources_case cases[] = {
        { "memory.limit", MEMORY(.has_limit = true, .limit = 1048576),
          "memory.limit_in_bytes=1048576" },
        { "memory.limit -1 is unlimited", MEMORY(.has_limit = true, .limit = -1),
          "memory.limit_in_bytes=-1" },
        { "memory.limit 0 is unset", MEMORY(.has_limit = true, .limit = 0), "" },
        { "negative limit", MEMORY(.has_limit = true, .limit = -5),
          "ERROR: linux.resources.memory.limit: -5 is not a limit" },
        { "every memory field, the limit before memsw",
          MEMORY(.has_limit = true, .limit = 100, .has_swap = true, .swap = 300,
                 .has_reservation = true, .reservation = 50, .has_swappiness = true,
                 .swappiness = 10, .has_disable_oom_killer = true, .disable_oom_killer = true),
          "memory.limit_in_bytes=100; memory.memsw.limit_in_bytes=300; "
          "memory.soft_limit_in_bytes=50; memory.swappiness=10; memory.oom_control=1" },
        { "swap == limit: no swap",
          MEMORY(.has_limit = true, .limit = 100, .has_swap = true, .swap = 100),
          "memory.limit_in_bytes=100; memory.memsw.limit_in_bytes=100" },
        { "swap -1", MEMORY(.has_limit = true, .limit = 100, .has_swap = true, .swap = -1),
          "memory.limit_in_bytes=100; memory.memsw.limit_in_bytes=-1" },
        { "swap below the limit",
          MEMORY(.has_limit = true, .limit = 100, .has_swap = true, .swap = 99),
          "ERROR: linux.resources.memory.swap: 99 is below the memory limit 100" },
        { "swap limited under an unlimited memory",
          MEMORY(.has_limit = true, .limit = -1, .has_swap = true, .swap = 300),
          "ERROR: linux.resources.memory.swap: 300 limits memory+swap, but memory.limit is -1" },
        { "both unlimited", MEMORY(.has_limit = true, .limit = -1, .has_swap = true, .swap = -1),
          "memory.limit_in_bytes=-1; memory.memsw.limit_in_bytes=-1" },
        { "swap alone (update under the limit there)", MEMORY(.has_swap = true, .swap = 300),
          "memory.memsw.limit_in_bytes=300" },
        { "swap -2", MEMORY(.has_swap = true, .swap = -2),
          "ERROR: linux.resources.memory.swap: -2 is not a limit" },
        { "reservation -1", MEMORY(.has_reservation = true, .reservation = -1),
          "memory.soft_limit_in_bytes=-1" },
        { "reservation -7", MEMORY(.has_reservation = true, .reservation = -7),
          "ERROR: linux.resources.memory.reservation: -7" },
        { "swappiness 0 is written", MEMORY(.has_swappiness = true, .swappiness = 0),
          "memory.swappiness=0" },
        { "swappiness 100", MEMORY(.has_swappiness = true, .swappiness = 100),
          "memory.swappiness=100" },
        { "swappiness 101", MEMORY(.has_swappiness = true, .swappiness = 101),
          "ERROR: linux.resources.memory.swappiness: 101 is outside 0-100" },
        { "disableOOMKiller false",
          MEMORY(.has_disable_oom_killer = true, .disable_oom_killer = false),
          "memory.oom_control=0" },
        { "kernel, kernelTCP, useHierarchy: left out",
          MEMORY(.has_kernel = true, .kernel = 1 << 20, .has_kernel_tcp = true,
                 .kernel_tcp = 1 << 20, .has_use_hierarchy = true, .use_hierarchy = true),
          "" },
    };
    run_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_cpu_pids(void)
{
    const struct resources_case cases[] = {
        { "shares as they are", CPU(.has_shares = true, .shares = 1024), "cpu.shares=1024" },
        { "shares 0 is unset", CPU(.has_shares = true, .shares = 0), "" },
        { "period before quota",
          CPU(.has_quota = true, .quota = 50000, .has_period = true, .period = 200000),
          "cpu.cfs_period_us=200000; cpu.cfs_quota_us=50000" },
        { "quota -1", CPU(.has_quota = true, .quota = -1), "cpu.cfs_quota_us=-1" },
        { "quota 0 is unset", CPU(.has_quota = true, .quota = 0), "" },
        { "quota -2", CPU(.has_quota = true, .quota = -2),
          "ERROR: linux.resources.cpu.quota: -2 is not a limit" },
        { "burst, idle", CPU(.has_burst = true, .burst = 1000, .has_idle = true, .idle = 1),
          "cpu.cfs_burst_us=1000; cpu.idle=1" },
        { "realtime: period before runtime",
          CPU(.has_realtime_runtime = true, .realtime_runtime = 950000, .has_realtime_period = true,
              .realtime_period = 1000000),
          "cpu.rt_period_us=1000000; cpu.rt_runtime_us=950000" },
        { "realtime runtime -1", CPU(.has_realtime_runtime = true, .realtime_runtime = -1),
          "cpu.rt_runtime_us=-1" },
        { "realtime runtime -3", CPU(.has_realtime_runtime = true, .realtime_runtime = -3),
          "ERROR: linux.resources.cpu.realtimeRuntime: -3" },
        { "cpuset first", CPU(.cpus = "0-1", .mems = "0", .has_shares = true, .shares = 512),
          "cpuset.cpus=0-1; cpuset.mems=0; cpu.shares=512" },
        { "empty cpus and mems are unset", CPU(.cpus = "", .mems = ""), "" },
        { "pids 5", { .has_pids_limit = true, .pids_limit = 5 }, "pids.max=5" },
        { "pids 0 is no limit, as on v2",
          { .has_pids_limit = true, .pids_limit = 0 },
          "pids.max=max" },
        { "pids -1 is no limit", { .has_pids_limit = true, .pids_limit = -1 }, "pids.max=max" },
        { "no pids limit, no write", { .has_pids_limit = false, .pids_limit = 7 }, "" },
    };
    run_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_blkio(void)
{
    struct brig_weight_device wd[] = {
        { .major = 8,
          .minor = 0,
          .has_weight = true,
          .weight = 500,
          .has_leaf_weight = true,
          .leaf_weight = 200 },
        { .major = 8, .minor = 16, .has_leaf_weight = true, .leaf_weight = 300 },
    };
    struct brig_throttle_device rb[] = { { 8, 0, 1048576 } }, wb[] = { { 8, 0, 0 } },
                                ri[] = { { 8, 16, 100 } }, wi[] = { { 253, 1, 200 } };
    struct brig_block_io b = { .has_weight = true,
                               .weight = 500,
                               .has_leaf_weight = true,
                               .leaf_weight = 300,
                               .weight_devices = wd,
                               .n_weight_devices = 2,
                               .throttle_read_bps = { rb, 1 },
                               .throttle_write_bps = { wb, 1 },
                               .throttle_read_iops = { ri, 1 },
                               .throttle_write_iops = { wi, 1 } };
    struct brig_resources r = { .block_io = &b };
    check_text("every blockIO field", v1_text(&r),
               "blkio.weight=500; blkio.leaf_weight=300; blkio.weight_device=8:0 500; "
               "blkio.leaf_weight_device=8:0 200; blkio.leaf_weight_device=8:16 300; "
               "blkio.throttle.read_bps_device=8:0 1048576; "
               "blkio.throttle.write_bps_device=8:0 0; "
               "blkio.throttle.read_iops_device=8:16 100; "
               "blkio.throttle.write_iops_device=253:1 200");
    struct brig_block_io zero = { .has_weight = true, .weight = 0 };
    r.block_io = &zero;
    check_text("weight 0 is unset", v1_text(&r), "");
    zero.weight = 5;
    unit_check_error("weight 5", v1_text(&r),
                     "linux.resources.blockIO.weight: 5 is outside 10-1000");
    zero = (struct brig_block_io){ .has_leaf_weight = true, .leaf_weight = 2000 };
    unit_check_error("leafWeight 2000", v1_text(&r), "blockIO.leafWeight: 2000 is outside 10-1000");
    wd[0].weight = 5;
    r.block_io = &b;
    unit_check_error("weightDevice weight 5", v1_text(&r),
                     "blockIO.weightDevice.weight: 5 is outside");
    wd[0].weight = 500;
    wd[1].leaf_weight = 1001;
    unit_check_error("weightDevice leafWeight 1001", v1_text(&r), "weightDevice.leafWeight: 1001");
    wd[1].leaf_weight = 300;
    wd[1].major = -1;
    unit_check_error("weightDevice bad major", v1_text(&r),
                     "blockIO.weightDevice: bad device -1:16");
    wd[1].major = 8;
    wi[0].minor = (int64_t) UINT32_MAX + 1;
    unit_check_error("throttle bad minor", v1_text(&r),
                     "blockIO.throttleWriteIOPSDevice: bad device 253:4294967296");
}

/* One of every resource a v1 plan writes. */
static struct brig_memory every_memory = { .has_limit = true, .limit = 1 << 20 };
static struct brig_cpu every_cpu = { .cpus = "0", .has_shares = true, .shares = 100 };
static struct brig_block_io every_block_io = { .has_weight = true, .weight = 100 };
static struct brig_hugepage_limit every_hugepage[] = { { "2MB", 1 << 30 }, { "1GB", 0 } };
static struct brig_net_priority every_priority[] = { { "eth0", 5 }, { "lo", 1 } };
static struct brig_rdma_limit every_rdma[] = { { "mlx5_0", true, 2, true, 100 },
                                               { "mlx4_0", false, 0, true, 7 } };
static const struct brig_resources every = { .memory = &every_memory,
                                             .cpu = &every_cpu,
                                             .has_pids_limit = true,
                                             .pids_limit = 9,
                                             .block_io = &every_block_io,
                                             .hugepage_limits = every_hugepage,
                                             .n_hugepage_limits = 2,
                                             .has_net_class_id = true,
                                             .net_class_id = 0x100001,
                                             .net_priorities = every_priority,
                                             .n_net_priorities = 2,
                                             .rdma = every_rdma,
                                             .n_rdma = 2 };

static void test_hugetlb_network_rdma(void)
{
    struct brig_resources r = every;
    r.memory = NULL, r.cpu = NULL, r.has_pids_limit = false, r.block_io = NULL;
    check_text("hugetlb, net_cls, net_prio, rdma", v1_text(&r),
               "hugetlb.2MB.limit_in_bytes=1073741824; hugetlb.1GB.limit_in_bytes=0; "
               "net_cls.classid=1048577; net_prio.ifpriomap=eth0 5; net_prio.ifpriomap=lo 1; "
               "rdma.max=mlx5_0 hca_handle=2 hca_object=100; rdma.max=mlx4_0 hca_object=7");
    struct brig_hugepage_limit h[] = { every_hugepage[0], { "1GB/../x", 0 } };
    r.hugepage_limits = h;
    unit_check_error("bad page size", v1_text(&r), "hugepageLimits: bad pageSize `1GB/../x`");
    r.hugepage_limits = every_hugepage;
    struct brig_net_priority prio[] = { every_priority[0], { "eth 1", 1 } };
    r.net_priorities = prio;
    unit_check_error("interface name with a space", v1_text(&r),
                     "linux.resources.network.priorities[1]: bad interface name `eth 1`");
    prio[1].name = "eth1\n";
    unit_check_error("interface name with a newline", v1_text(&r), "priorities[1]: bad interface");
    prio[1].name = NULL;
    unit_check_error("no interface name", v1_text(&r), "priorities[1]: bad interface name ``");
    r.net_priorities = every_priority;
    struct brig_rdma_limit rdma[] = { every_rdma[0], { "mlx4 0", false, 0, true, 7 } };
    r.rdma = rdma;
    unit_check_error("bad rdma device", v1_text(&r),
                     "linux.resources.rdma: bad device name `mlx4 0`");
}

static void test_left_out_and_order(void)
{
    struct brig_kv kv[] = { { "memory.high", "5" } };
    struct brig_device_rule dev = { .allow = false, .access = "rwm" };
    struct brig_resources none = { .unified = { kv, 1 }, .devices = &dev, .n_devices = 1 };
    check_text("unified and devices are not in the plan", v1_text(&none), "");
    check_text("order: cpuset, memory, pids, cpu, blkio, hugetlb, network, rdma", v1_text(&every),
               "cpuset.cpus=0; memory.limit_in_bytes=1048576; pids.max=9; cpu.shares=100; "
               "blkio.weight=100; hugetlb.2MB.limit_in_bytes=1073741824; "
               "hugetlb.1GB.limit_in_bytes=0; net_cls.classid=1048577; "
               "net_prio.ifpriomap=eth0 5; net_prio.ifpriomap=lo 1; "
               "rdma.max=mlx5_0 hca_handle=2 hca_object=100; rdma.max=mlx4_0 hca_object=7");
}

/* ---- controllers ------------------------------------------------------------------ */

static char *controllers_text(const struct brig_cgroup_write *w, size_t n)
{
    const char *names[BRIG_CGROUP_MAX_CONTROLLERS + 1];
    brig_cgroup_plan_controllers(w, n, names);
    static char buf[200];
    buf[0] = '\0';
    for (size_t i = 0; names[i]; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "", names[i]);
    return buf;
}

static void test_controllers(void)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    CHECK(brig_cgroup_v1_plan(&every, &w, &n, &err) == 0, "a plan of every v1 controller");
    CHECK_STR(controllers_text(w, n), "cpuset cpu memory hugetlb pids rdma blkio net_cls net_prio",
              "a v1 plan's controllers, v1 names included");
    brig_cgroup_plan_free(w, n);
    CHECK(brig_cgroup_v1_devices_plan(NULL, 0, &w, &n, &err) == 0, "a devices plan");
    CHECK_STR(controllers_text(w, n), "devices", "a devices plan needs devices");
    brig_cgroup_plan_free(w, n);

    static const struct {
        const char *controller, *want;
    } by[] = {
        { "blkio", "linux.resources.blockIO" },
        { "io", "linux.resources.blockIO" },
        { "net_cls", "linux.resources.network.classID" },
        { "net_prio", "linux.resources.network.priorities" },
        { "devices", "linux.resources.devices" },
        { "memory", "linux.resources.memory" },
        { "freezer", "linux.resources" },
    };
    char buf[100];
    for (size_t i = 0; i < sizeof by / sizeof by[0]; i++) {
        brig_cgroup_needed_by(&every, by[i].controller, buf, sizeof buf);
        CHECK_STR(buf, by[i].want, by[i].controller);
    }
    struct brig_resources empty = { 0 };
    brig_cgroup_needed_by(&empty, "net_cls", buf, sizeof buf);
    CHECK_STR(buf, "linux.resources", "net_cls without a classID: the section");
    struct brig_kv kv[] = { { "devices.allow", "a" } };
    struct brig_resources unified = { .unified = { kv, 1 } };
    brig_cgroup_needed_by(&unified, "devices", buf, sizeof buf);
    CHECK_STR(buf, "linux.resources.unified `devices.allow`", "a unified key before the default");
}

/* ---- devices ---------------------------------------------------------------------- */

#define ANY -1
#define RULE(allow_, type_, major_, minor_, access_)                               \
    {                                                                              \
        .allow = (allow_), .type = (char *) (type_), .has_major = (major_) != ANY, \
        .major = (major_), .has_minor = (minor_) != ANY, .minor = (minor_),        \
        .access = (char *) (access_)                                               \
    }
#define N(rules) (sizeof(rules) / sizeof(rules)[0])

/* The default devices, as every devices plan ends. */
#define DEFAULTS                                                                  \
    "devices.allow=c 1:3 rwm; devices.allow=c 1:5 rwm; devices.allow=c 1:7 rwm; " \
    "devices.allow=c 1:8 rwm; devices.allow=c 1:9 rwm; devices.allow=c 5:0 rwm; " \
    "devices.allow=c 5:2 rwm; devices.allow=c 136:* rwm"

/* Rules and what their plan must be: the writes (after "deny a" and
 * before the defaults), or "ERROR: " and a part of the message. */
struct devices_case {
    const char *name;
    struct brig_device_rule rules[5];
    size_t n;
    const char *want;
};

static void run_devices_cases(const struct devices_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *got = devices_text(cases[i].rules, cases[i].n), *want = NULL;
        if (strncmp(cases[i].want, "ERROR: ", 7) == 0) {
            unit_check_error(cases[i].name, got, cases[i].want + 7);
            continue;
        }
        if (asprintf(&want, "devices.deny=a; %s%s" DEFAULTS, cases[i].want,
                     *cases[i].want ? "; " : "")
            < 0)
            want = NULL;
        check_text(cases[i].name, got, want);
        free(want);
    }
}

static void test_devices_plans(void)
{
    const struct devices_case cases[] = {
        { "no rules: deny all, then the defaults", { { 0 } }, 0, "" },
        { "allow all", { RULE(true, NULL, ANY, ANY, "rwm") }, 1, "devices.allow=a" },
        { "allow all: type a, no access",
          { RULE(true, "a", ANY, ANY, NULL) },
          1,
          "devices.allow=a" },
        { "allow all: empty access", { RULE(true, "a", ANY, ANY, "") }, 1, "devices.allow=a" },
        { "allow every device for reading: a c and a b line",
          { RULE(true, NULL, ANY, ANY, "r") },
          1,
          "devices.allow=c *:* r; devices.allow=b *:* r" },
        { "type a with a major",
          { RULE(true, "a", 7, ANY, "rw") },
          1,
          "devices.allow=c 7:* rw; devices.allow=b 7:* rw" },
        { "wildcard majors and minors",
          { RULE(false, "a", ANY, ANY, "rwm"), RULE(true, "b", ANY, 0, "r"),
            RULE(true, "c", 4, ANY, "rw") },
          3,
          "devices.deny=a; devices.allow=b *:0 r; devices.allow=c 4:* rw" },
        { "a deny after an allow of the same device",
          { RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", 10, 200, "rwm"),
            RULE(false, "c", 10, 200, "w") },
          3,
          "devices.deny=a; devices.allow=c 10:200 rwm; devices.deny=c 10:200 w" },
        { "a deny after allow all",
          { RULE(true, NULL, ANY, ANY, "rwm"), RULE(false, "c", 10, ANY, "w") },
          2,
          "devices.allow=a; devices.deny=c 10:* w" },
    };
    run_devices_cases(cases, N(cases));
    struct brig_device_rule runc[] = {
        RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", ANY, ANY, "m"),
        RULE(true, "b", ANY, ANY, "m"),     RULE(true, "c", 1, 3, "rwm"),
        RULE(true, "c", 10, 200, "rwm"),    RULE(true, "c", 136, ANY, "rwm"),
    };
    check_text("the usual runc rules, in order, defaults last", devices_text(runc, N(runc)),
               "devices.deny=a; devices.deny=a; devices.allow=c *:* m; devices.allow=b *:* m; "
               "devices.allow=c 1:3 rwm; devices.allow=c 10:200 rwm; "
               "devices.allow=c 136:* rwm; " DEFAULTS);
}

static void test_devices_refused(void)
{
    const struct devices_case cases[] = {
        { "a deny inside a wider allow",
          { RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", ANY, ANY, "rwm"),
            RULE(false, "c", 10, 200, "rwm") },
          3,
          "ERROR: linux.resources.devices[2]: cgroup v1 can't express `deny c 10:200 rwm` after "
          "the rules before it (it would allow a read of c 10:200, which the rules deny)" },
        { "allow all, deny every char device: the defaults can't come back",
          { RULE(true, NULL, ANY, ANY, "rwm"), RULE(false, "c", ANY, ANY, "rwm") },
          2,
          "ERROR: linux.resources.devices[1]: cgroup v1 can't express `deny c *:* rwm` with the "
          "default devices after it (it would deny a read of c 1:3, which the rules allow)" },
        { "after allow all: an allow inside a wider deny",
          { RULE(true, NULL, ANY, ANY, "rwm"), RULE(false, "c", 10, ANY, "rwm"),
            RULE(true, "c", 10, 200, "rwm") },
          3,
          "ERROR: devices[2]: cgroup v1 can't express `allow c 10:200 rwm` after the rules "
          "before it (it would deny a read of c 10:200, which the rules allow)" },
        { "two allows of one device stay apart in the list, not on v1",
          { RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", 10, 200, "r"),
            RULE(true, "c", 10, 200, "w") },
          3,
          "ERROR: devices[2]: cgroup v1 can't express `allow c 10:200 w` after the rules before "
          "it (it would allow a read-write open of c 10:200, which the rules deny)" },
        { "deny reading of all devices after an allow",
          { RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", 10, 200, "rwm"),
            RULE(false, NULL, ANY, ANY, "r") },
          3,
          "ERROR: devices[2]: cgroup v1 can't express `deny a *:* r` after the rules before it" },
        { "a difference undone, then made again: the rule that made it last",
          { RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", ANY, ANY, "rwm"),
            RULE(false, "c", 10, 200, "rwm"), RULE(true, "c", 10, 200, "rwm"),
            RULE(false, "c", 10, ANY, "rwm") },
          5,
          "ERROR: devices[4]: cgroup v1 can't express `deny c 10:* rwm` after the rules before "
          "it (it would allow a read of c 10:200, which the rules deny)" },
        { "bad type",
          { RULE(true, "x", 1, 3, "r") },
          1,
          "ERROR: linux.resources.devices[0]: type `x` is not a, c or b" },
        { "bad access",
          { RULE(true, "c", 1, 3, "r"), RULE(true, "c", 1, 5, "rwx") },
          2,
          "ERROR: linux.resources.devices[1]: access `rwx` is not a combination of r, w and m" },
        { "bad major",
          { RULE(true, "c", -2, 3, "r") },
          1,
          "ERROR: linux.resources.devices[0]: bad device number -2:3" },
        { "minor too big",
          { RULE(true, "b", 8, (long) INT32_MAX + 1, "r") },
          1,
          "ERROR: devices[0]: bad device number 8:2147483648" },
    };
    run_devices_cases(cases, N(cases));
}

/* The model of the kernel's list, on writes written by hand: what the
 * translation relies on. */
static void test_devices_model(void)
{
    struct brig_cgroup_write hole[] = { { "devices.deny", "a" },
                                        { "devices.allow", "c *:* rwm" },
                                        { "devices.deny", "c 1:5 rwm" } };
    CHECK(brig_cgroup_v1_devices_eval(hole, 3, 'c', 1, 5, "r") == 1,
          "model: a deny doesn't cut into a wider exception");
    struct brig_cgroup_write same[] = { { "devices.deny", "a" },
                                        { "devices.allow", "c 1:3 r" },
                                        { "devices.allow", "c 1:3 w" } };
    CHECK(brig_cgroup_v1_devices_eval(same, 3, 'c', 1, 3, "rw") == 1
              && brig_cgroup_v1_devices_eval(same, 3, 'c', 1, 3, "m") == 0
              && brig_cgroup_v1_devices_eval(same, 3, 'b', 1, 3, "r") == 0,
          "model: allows of one device are ORed");
    struct brig_cgroup_write take[] = { { "devices.deny", "a" },
                                        { "devices.allow", "c 1:3 rwm" },
                                        { "devices.deny", "c 1:3 w" } };
    CHECK(brig_cgroup_v1_devices_eval(take, 3, 'c', 1, 3, "r") == 1
              && brig_cgroup_v1_devices_eval(take, 3, 'c', 1, 3, "rw") == 0,
          "model: a deny takes access from the same exception");
    struct brig_cgroup_write open[] = { { "devices.allow", "a" }, { "devices.deny", "c 1:* w" } };
    CHECK(brig_cgroup_v1_devices_eval(open, 2, 'c', 1, 3, "r") == 1
              && brig_cgroup_v1_devices_eval(open, 2, 'c', 1, 3, "rw") == 0
              && brig_cgroup_v1_devices_eval(open, 2, 'c', 2, 3, "w") == 1,
          "model: allowing by default, any part of a request denied refuses it");
    CHECK(brig_cgroup_v1_devices_eval(open, 0, 'c', 1, 3, "rwm") == 1,
          "model: a cgroup starts allowing all");
    struct brig_cgroup_write bad[] = { { "devices.allow", "c 1:3" } };
    struct brig_cgroup_write other[] = { { "memory.max", "a" } };
    CHECK(brig_cgroup_v1_devices_eval(bad, 1, 'c', 1, 3, "r") == -1
              && brig_cgroup_v1_devices_eval(other, 1, 'c', 1, 3, "r") == -1
              && brig_cgroup_v1_devices_eval(open, 2, 'x', 1, 3, "r") == -1,
          "model: what it can't read");
}

/* The requests the grid asks: every named number of the rule sets below
 * and one unnamed major and minor, both types, the kernel's four kinds. */
static const long grid_majors[] = { 0, 1, 5, 10, 136, 241 };
static const long grid_minors[] = { 0, 2, 3, 5, 7, 8, 9, 200, 4242 };
static const char *const grid_kinds[] = { "r", "w", "rw", "m" };
#define GRID_N (2 * N(grid_majors) * N(grid_minors) * N(grid_kinds))

struct grid_request {
    char type;
    long major, minor;
    const char *kind;
};

/* The grid's i-th request, i below GRID_N. */
static struct grid_request grid_at(size_t i)
{
    struct grid_request q;
    q.kind = grid_kinds[i % N(grid_kinds)];
    i /= N(grid_kinds);
    q.minor = grid_minors[i % N(grid_minors)];
    i /= N(grid_minors);
    q.major = grid_majors[i % N(grid_majors)];
    q.type = i / N(grid_majors) ? 'b' : 'c';
    return q;
}

/* How many requests of the grid the writes decide otherwise than the
 * eBPF program of v2; -1 when something can't be evaluated. */
static int grid_differences(const struct brig_device_rule *rules, size_t n,
                            const struct brig_cgroup_write *w, size_t nw)
{
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    brig_error_t err = NULL;
    if (brig_ebpf_devices_compile(rules, n, true, &insns, &len, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    int differences = 0;
    for (size_t i = 0; i < GRID_N; i++) {
        struct grid_request q = grid_at(i);
        int bpf = brig_ebpf_devices_eval(insns, len, q.type, q.major, q.minor, q.kind);
        int v1 = brig_cgroup_v1_devices_eval(w, nw, q.type, q.major, q.minor, q.kind);
        if (bpf < 0 || v1 < 0) {
            free(insns);
            return -1;
        }
        differences += bpf != v1;
    }
    free(insns);
    return differences;
}

/* The translation without its check, written again from the kernel's
 * syntax: what the plan writes whenever it accepts the rules. */
static size_t naive_writes(const struct brig_device_rule *rules, size_t n,
                           struct brig_cgroup_write *w, char text[][64])
{
    size_t k = 0;
    w[k++] = (struct brig_cgroup_write){ "devices.deny", "a" };
    for (size_t i = 0; i < n + brig_devices_n_default_rules; i++) {
        const struct brig_devices_rule *d = &brig_devices_default_rules[i < n ? 0 : i - n];
        struct brig_devices_rule spec;
        brig_error_t err = NULL;
        if (i < n && brig_devices_rule_read(&rules[i], i, &spec, &err) == 0)
            d = &spec;
        brig_error_release(&err);
        char *file = d->allow ? "devices.allow" : "devices.deny";
        char major[24] = "*", minor[24] = "*";
        if (d->major >= 0)
            snprintf(major, sizeof major, "%ld", (long) d->major);
        if (d->minor >= 0)
            snprintf(minor, sizeof minor, "%ld", (long) d->minor);
        const char *access =
            (const char *[]){ "", "m", "r", "rm", "w", "wm", "rw", "rwm" }[d->access];
        if (d->type == 0 && d->major < 0 && d->minor < 0 && d->access == BRIG_DEVICES_ACC_ALL) {
            w[k++] = (struct brig_cgroup_write){ file, "a" };
            continue;
        }
        for (const char *type = "cb"; *type; type++) {
            if (d->type != 0
                && d->type != (*type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK))
                continue;
            snprintf(text[k], 64, "%c %s:%s %s", *type, major, minor, access);
            w[k] = (struct brig_cgroup_write){ file, text[k] };
            k++;
        }
    }
    return k;
}
static uint32_t next_random(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

/* One random rule set: the plan either writes exactly the plain
 * translation, and then decides every request as the eBPF program does,
 * or refuses, and then the plain translation does differ somewhere. */
static bool random_round(uint32_t *seed, int *accepted, int *refused)
{
    static const long majors[] = { ANY, 1, 10, 136 }, minors[] = { ANY, 3, 200, 0 };
    static const char *const types[] = { NULL, "a", "c", "b" };
    static const char *const accesses[] = { NULL, "r", "w", "m", "rw", "rm", "wm", "rwm" };
    struct brig_device_rule rules[6];
    size_t n = 1 + next_random(seed) % 6;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = next_random(seed);
        rules[i] = (struct brig_device_rule) RULE(x & 1, types[(x >> 1) % 4], majors[(x >> 3) % 4],
                                                  minors[(x >> 5) % 4], accesses[(x >> 7) % 8]);
    }
    struct brig_cgroup_write naive[2 * 6 + 16];
    char text[2 * 6 + 16][64];
    size_t nn = naive_writes(rules, n, naive, text);
    int differences = grid_differences(rules, n, naive, nn);
    char *got = devices_text(rules, n), *want = writes_text(naive, nn);
    bool ok;
    if (strncmp(got, "ERROR: ", 7) == 0) {
        ++*refused;
        ok = differences > 0 && strstr(got, "cgroup v1 can't express");
    } else {
        ++*accepted;
        ok = differences == 0 && strcmp(got, want) == 0;
    }
    if (!ok)
        printf("#   %s\n#   plain: %s (%d differences)\n", got, want, differences);
    free(got);
    free(want);
    return ok;
}

static void test_devices_random(void)
{
    uint32_t seed = 0x9e3779b9;
    int accepted = 0, refused = 0, wrong = 0;
    for (int round = 0; round < 3000 && wrong < 5; round++)
        wrong += !random_round(&seed, &accepted, &refused);
    CHECK(wrong == 0, "random rule sets: the v1 lists act as the eBPF program, or are refused "
                      "just when they can't");
    printf("# %d accepted, %d refused\n", accepted, refused);
    CHECK(accepted > 500 && refused > 500, "random rule sets: both outcomes are common");
}

static void test_devices_grid(void)
{
    struct brig_device_rule runc[] = {
        RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", ANY, ANY, "m"),
        RULE(true, "b", ANY, ANY, "m"),     RULE(true, "c", 1, 3, "rwm"),
        RULE(true, "c", 10, 200, "rwm"),    RULE(true, "c", 136, ANY, "rwm"),
        RULE(false, "c", 10, 200, "w"),     RULE(true, "a", 5, ANY, "r"),
    };
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    CHECK(brig_cgroup_v1_devices_plan(runc, N(runc), &w, &n, &err) == 0, "grid: a plan");
    CHECK(grid_differences(runc, N(runc), w, n) == 0, "grid: the same answers as the eBPF program");
    CHECK(brig_cgroup_v1_devices_eval(w, n, 'c', 10, 200, "r") == 1
              && brig_cgroup_v1_devices_eval(w, n, 'c', 10, 200, "rw") == 0
              && brig_cgroup_v1_devices_eval(w, n, 'b', 8, 0, "r") == 0
              && brig_cgroup_v1_devices_eval(w, n, 'b', 5, 9, "r") == 1
              && brig_cgroup_v1_devices_eval(w, n, 'b', 8, 0, "m") == 1,
          "grid: a few answers by hand");
    brig_cgroup_plan_free(w, n);
}

/* ---- devices: from the list a cgroup holds to the rules' ---------------------------- */

/* devices.list as the kernel prints the default devices alone. */
#define DEFAULT_LIST \
    "c 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 1:8 rwm\nc 1:9 rwm\nc 5:0 rwm\nc 5:2 rwm\nc 136:* rwm\n"

static char *update_text(const char *list, const struct brig_device_rule *rules, size_t n_rules)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    int rc = brig_cgroup_v1_devices_update(list, rules, n_rules, &w, &n, &err);
    return result_text(rc, w, n, &err);
}

/* A list, rules, and the writes that take the one to the other (or
 * "ERROR: " and a part of the message). */
struct update_case {
    const char *name;
    const char *list;
    struct brig_device_rule rules[3];
    size_t n;
    const char *want;
};

static void test_devices_update(void)
{
    const struct update_case cases[] = {
        { "the same rules: no write at all", DEFAULT_LIST, { { 0 } }, 0, "" },
        { "the same rules, listed in another order",
          "c 136:* rwm\nc 5:2 rwm\nc 5:0 rwm\nc 1:9 rwm\nc 1:8 rwm\nc 1:7 rwm\nc 1:5 rwm\n"
          "c 1:3 rwm\n",
          { { 0 } },
          0,
          "" },
        { "a device added: its allow alone",
          DEFAULT_LIST,
          { RULE(true, "c", 10, 200, "rwm") },
          1,
          "devices.allow=c 10:200 rwm" },
        { "a device removed: its deny alone",
          DEFAULT_LIST "c 10:200 rwm\n",
          { { 0 } },
          0,
          "devices.deny=c 10:200 rwm" },
        { "access narrowed: rwm to r denies w and m",
          DEFAULT_LIST "c 10:200 rwm\n",
          { RULE(true, "c", 10, 200, "r") },
          1,
          "devices.deny=c 10:200 wm" },
        { "access widened: r to rwm allows w and m",
          DEFAULT_LIST "c 10:200 r\n",
          { RULE(true, "c", 10, 200, "rwm") },
          1,
          "devices.allow=c 10:200 wm" },
        { "a wide exception to a narrow one: the allow comes first",
          DEFAULT_LIST "c 4:* rw\n",
          { RULE(true, "c", 4, 1, "rw") },
          1,
          "devices.allow=c 4:1 rw; devices.deny=c 4:* rw" },
        { "to allow-all",
          DEFAULT_LIST,
          { RULE(true, NULL, ANY, ANY, "rwm") },
          1,
          "devices.allow=a" },
        { "allow-all again: \"allow a\" again, as the list hides denies",
          "a *:* rwm\n",
          { RULE(true, "a", ANY, ANY, "rwm") },
          1,
          "devices.allow=a" },
        { "to allow-all with a deny",
          DEFAULT_LIST,
          { RULE(true, NULL, ANY, ANY, "rwm"), RULE(false, "c", 10, ANY, "w") },
          2,
          "devices.allow=a; devices.deny=c 10:* w" },
        { "from allow-all: deny all, then every allow",
          "a *:* rwm\n",
          { { 0 } },
          0,
          "devices.deny=a; " DEFAULTS },
        { "from a list with nothing allowed", "", { { 0 } }, 0, DEFAULTS },
        { "a line the kernel doesn't print",
          DEFAULT_LIST "x 1:3 rwm\n",
          { { 0 } },
          0,
          "ERROR: devices.list: can't read the line `x 1:3 rwm`" },
        { "allow-all beside exceptions",
          "a *:* rwm\nc 1:3 rwm\n",
          { { 0 } },
          0,
          "ERROR: `a *:* rwm` beside exceptions" },
        { "rules v1 can't express are refused as by the plan",
          DEFAULT_LIST,
          { RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", ANY, ANY, "rwm"),
            RULE(false, "c", 10, 200, "rwm") },
          3,
          "ERROR: linux.resources.devices[2]: cgroup v1 can't express" },
    };
    for (size_t i = 0; i < N(cases); i++) {
        char *got = update_text(cases[i].list, cases[i].rules, cases[i].n);
        if (strncmp(cases[i].want, "ERROR: ", 7) == 0)
            unit_check_error(cases[i].name, got, cases[i].want + 7);
        else
            check_text(cases[i].name, got, cases[i].want);
    }
}

static char *check_list_text(const char *list, const struct brig_device_rule *rules, size_t n)
{
    brig_error_t err = NULL;
    int rc = brig_cgroup_v1_devices_check_list(list, rules, n, &err);
    return result_text(rc, NULL, 0, &err);
}

static void test_devices_check_list(void)
{
    struct brig_device_rule tty[] = { RULE(true, "c", 10, 200, "rwm") };
    struct brig_device_rule all[] = { RULE(true, NULL, ANY, ANY, "rwm") };
    check_text("check: the defaults' list", check_list_text(DEFAULT_LIST, NULL, 0), "");
    check_text("check: one more device",
               check_list_text("c 10:200 rwm\n" DEFAULT_LIST, tty, N(tty)), "");
    unit_check_error("check: a device missing", check_list_text(DEFAULT_LIST, tty, N(tty)),
                     "devices.list differs from the rules' list (it still needs "
                     "`devices.allow` ← `c 10:200 rwm`)");
    unit_check_error("check: a device too many",
                     check_list_text(DEFAULT_LIST "c 10:200 r\n", NULL, 0),
                     "`devices.deny` ← `c 10:200 r`");
    check_text("check: allow-all", check_list_text("a *:* rwm\n", all, 1), "");
    unit_check_error("check: allow-all where the rules list devices",
                     check_list_text("a *:* rwm\n", NULL, 0),
                     "devices.list allows all devices, the rules don't");
}

/* ---- devices: random transitions -------------------------------------------------- */

/* Rules the plan accepts, at random; NULL when this round's are refused. */
static struct brig_cgroup_write *random_state(uint32_t *seed, struct brig_device_rule *rules,
                                              size_t *n, size_t *nw)
{
    static const long majors[] = { ANY, 1, 10, 136 }, minors[] = { ANY, 3, 200, 0 };
    static const char *const types[] = { NULL, "a", "c", "b" };
    static const char *const accesses[] = { NULL, "r", "w", "m", "rw", "rm", "wm", "rwm" };
    *n = next_random(seed) % 5;
    for (size_t i = 0; i < *n; i++) {
        uint32_t x = next_random(seed);
        rules[i] = (struct brig_device_rule) RULE(x & 1, types[(x >> 1) % 4], majors[(x >> 3) % 4],
                                                  minors[(x >> 5) % 4], accesses[(x >> 7) % 8]);
    }
    struct brig_cgroup_write *w = NULL;
    brig_error_t err = NULL;
    if (brig_cgroup_v1_devices_state(rules, *n, &w, nw, &err) < 0) {
        brig_error_release(&err);
        return NULL;
    }
    return w;
}

/* devices.list's text for a state: "a *:* rwm" for allow-all, else its
 * exceptions. */
static char *list_of(const struct brig_cgroup_write *w, size_t n)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (f && strcmp(w[0].file, "devices.allow") == 0)
        fputs("a *:* rwm\n", f);
    for (size_t i = 1; f && strcmp(w[0].file, "devices.deny") == 0 && i < n; i++)
        fprintf(f, "%s\n", w[i].value);
    if (f)
        fclose(f);
    return text;
}

/* Requests the model answers otherwise after `w` than after `want`; with
 * `keep`, only those both `from` and `want` allow that `w` denies. */
static int model_losses(const struct brig_cgroup_write *w, size_t n,
                        const struct brig_cgroup_write *from, size_t n_from,
                        const struct brig_cgroup_write *want, size_t n_want, bool keep)
{
    int losses = 0;
    for (size_t i = 0; i < GRID_N; i++) {
        struct grid_request q = grid_at(i);
        int now = brig_cgroup_v1_devices_eval(w, n, q.type, q.major, q.minor, q.kind);
        int end = brig_cgroup_v1_devices_eval(want, n_want, q.type, q.major, q.minor, q.kind);
        int was = brig_cgroup_v1_devices_eval(from, n_from, q.type, q.major, q.minor, q.kind);
        losses += keep ? (was == 1 && end == 1 && now != 1) : now != end;
    }
    return losses;
}

/* The current state's writes, then the transition's first k: never a
 * device both states allow denied (but after "deny a", which only the
 * switch from allow-all writes), and at the end the target's answers. */
static bool transition_sound(const struct brig_cgroup_write *from, size_t n_from,
                             const struct brig_cgroup_write *to, size_t n_to,
                             const struct brig_cgroup_write *t, size_t n_t)
{
    struct brig_cgroup_write steps[64];
    if (n_from + n_t > N(steps))
        return false;
    if (n_from)
        memcpy(steps, from, n_from * sizeof *from);
    if (n_t)
        memcpy(steps + n_from, t, n_t * sizeof *t);
    bool denied_all = false;
    for (size_t k = 0; k <= n_t; k++) {
        denied_all |= k > 0 && strcmp(t[k - 1].value, "a") == 0
                      && strcmp(t[k - 1].file, "devices.deny") == 0;
        if (!denied_all && model_losses(steps, n_from + k, from, n_from, to, n_to, true) != 0) {
            printf("#   access lost after write %zu\n", k);
            return false;
        }
    }
    return model_losses(steps, n_from + n_t, from, n_from, to, n_to, false) == 0;
}

static bool random_transition(uint32_t *seed, int *rounds)
{
    struct brig_device_rule a[5], b[5];
    size_t na, nb, nwa = 0, nwb = 0, nt = 0;
    struct brig_cgroup_write *from = random_state(seed, a, &na, &nwa);
    struct brig_cgroup_write *to = random_state(seed, b, &nb, &nwb), *t = NULL, *same = NULL;
    char *list = from ? list_of(from, nwa) : NULL;
    brig_error_t err = NULL;
    bool ok = true;
    if (from && to && list) {
        ++*rounds;
        size_t n_same = 0;
        ok = brig_cgroup_v1_devices_update(list, b, nb, &t, &nt, &err) == 0
             && transition_sound(from, nwa, to, nwb, t, nt)
             && brig_cgroup_v1_devices_update(list, a, na, &same, &n_same, &err) == 0
             && n_same == (strcmp(from[0].file, "devices.deny") == 0 ? 0 : nwa);
        if (!ok) {
            char *want = writes_text(to, nwb), *by = writes_text(t, nt);
            printf("#   from %s\n#   to %s\n#   by %s\n", list, want, by);
            free(want);
            free(by);
        }
        brig_cgroup_plan_free(same, n_same);
    }
    brig_error_release(&err);
    brig_cgroup_plan_free(from, nwa);
    brig_cgroup_plan_free(to, nwb);
    brig_cgroup_plan_free(t, nt);
    free(list);
    return ok;
}

static void test_devices_update_random(void)
{
    uint32_t seed = 0x2545f491;
    int rounds = 0, wrong = 0;
    for (int i = 0; i < 3000 && wrong < 3; i++)
        wrong += !random_transition(&seed, &rounds);
    CHECK(wrong == 0, "random transitions: no access both lists give is ever lost, and the "
                      "end is the target; the same rules write nothing (allow-all: itself)");
    printf("# %d transitions\n", rounds);
    CHECK(rounds > 1000, "random transitions: most rounds have two lists v1 can express");
}

/* ---- exec --cgroup's sub-cgroups ---------------------------------------------------- */

/* The entries as "controller=path; ..." ("*" for every hierarchy), or
 * "ERROR: message". */
static char *sub_text(const char *const *args, size_t n_args)
{
    struct brig_cgroup_sub *s = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    char *text = NULL;
    size_t size = 0;
    if (brig_cgroup_sub_parse(args, n_args, &s, &n, &err) < 0) {
        if (asprintf(&text, "ERROR: %s", err->msg) < 0)
            text = NULL;
        brig_error_release(&err);
        return text;
    }
    FILE *f = open_memstream(&text, &size);
    for (size_t i = 0; f && i < n; i++)
        fprintf(f, "%s%s=%s", i ? "; " : "", s[i].controller ? s[i].controller : "*", s[i].path);
    if (f)
        fclose(f);
    brig_cgroup_sub_free(s, n);
    return text;
}

static void test_sub_parse(void)
{
    const struct {
        const char *name;
        const char *args[3];
        size_t n;
        const char *want;
    } cases[] = {
        { "a path alone is for every hierarchy", { "sub" }, 1, "*=sub" },
        { "cleaned", { "/a/./b//c/" }, 1, "*=a/b/c" },
        { "\"..\" stops at the container's cgroup", { "../../x/../../y" }, 1, "*=y" },
        { "\"/\" is the container's cgroup", { "/" }, 1, "*=" },
        { "one controller", { "memory:sub" }, 1, "memory=sub" },
        { "co-mounted controllers", { "cpu,cpuacct:s" }, 1, "cpu=s; cpuacct=s" },
        { "a named hierarchy", { "name=systemd:s" }, 1, "name=systemd=s" },
        { "repeated, a controller each", { "memory:a", "pids:b/c" }, 2, "memory=a; pids=b/c" },
        { "an empty path is the container's own", { "memory:" }, 1, "memory=" },
        { "a path alone beside another",
          { "sub", "memory:a" },
          2,
          "ERROR: sub-cgroup `sub`: a path without a `<controller>:` prefix must be the only "
          "sub-cgroup given" },
        { "two paths alone", { "a", "b" }, 2, "ERROR: must be the only" },
        { "a second colon",
          { "memory:a:b" },
          1,
          "ERROR: sub-cgroup `memory:a:b`: more than one `:` (the form is "
          "[<controller>[,<controller>...]:]<path>)" },
        { "an empty controller", { ":x" }, 1, "ERROR: sub-cgroup `:x`: an empty controller name" },
        { "an empty controller after a comma", { "memory,:x" }, 1, "ERROR: empty controller" },
        { "an empty controller before a comma", { ",memory:x" }, 1, "ERROR: empty controller" },
        { "a controller twice",
          { "memory:a", "memory:b" },
          2,
          "ERROR: sub-cgroup `memory:b`: controller `memory` is given twice" },
        { "a controller twice in one", { "cpu,cpu:x" }, 1, "ERROR: `cpu` is given twice" },
        { "a line break", { "a\nb" }, 1, "ERROR: has a line break" },
    };
    for (size_t i = 0; i < N(cases); i++) {
        char *got = sub_text(cases[i].args, cases[i].n);
        if (strncmp(cases[i].want, "ERROR: ", 7) == 0)
            unit_check_error(cases[i].name, got, cases[i].want + 7);
        else
            check_text(cases[i].name, got, cases[i].want);
    }
}

/* ---- as root: a real v1 devices cgroup ---------------------------------------------- */

#define V1_DEVICES "/sys/fs/cgroup/devices"

/* Majors 120 and 121 are for local and experimental use and never handed
 * out dynamically: no driver answers them, so an open the cgroup lets
 * through fails with ENXIO, and one it stops with EPERM. */
struct node {
    char type;
    long major, minor;
};
static const struct node nodes[] = {
    { 'c', 1, 3 },   { 'c', 1, 5 },   { 'c', 5, 0 },   { 'c', 120, 0 }, { 'c', 120, 1 },
    { 'c', 121, 0 }, { 'b', 120, 0 }, { 'b', 120, 1 }, { 'b', 121, 0 },
};
#define N_PROBES (N(nodes) * N(grid_kinds))

static void node_path(const char *dir, const struct node *nd, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%c%ld.%ld", dir, nd->type, nd->major, nd->minor);
}

/* '1' when the devices cgroup let the access through, '0' when it said
 * EPERM; mknod ("m") makes a node of its own. */
static char probe_one(const char *dir, const struct node *nd, const char *kind)
{
    char path[300];
    mode_t type = nd->type == 'b' ? S_IFBLK : S_IFCHR;
    if (strcmp(kind, "m") == 0) {
        snprintf(path, sizeof path, "%s/made", dir);
        if (mknod(path, type | 0600, makedev(nd->major, nd->minor)) == 0) {
            unlink(path);
            return '1';
        }
        return errno == EPERM ? '0' : '?';
    }
    node_path(dir, nd, path, sizeof path);
    int flags = strcmp(kind, "r") == 0 ? O_RDONLY : (strcmp(kind, "w") == 0 ? O_WRONLY : O_RDWR);
    int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return fd < 0 && errno == EPERM ? '0' : '1';
}

/* The answers of a process that joins cgroup `cg`, node by node, kind by
 * kind. */
static bool probe_in(const char *cg, const char *dir, char answers[N_PROBES])
{
    int p[2];
    if (pipe(p) < 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        char procs[300], out[N_PROBES];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(1);
        for (size_t i = 0; i < N_PROBES; i++)
            out[i] = probe_one(dir, &nodes[i / N(grid_kinds)], grid_kinds[i % N(grid_kinds)]);
        _exit(write(p[1], out, sizeof out) == (ssize_t) sizeof out ? 0 : 1);
    }
    close(p[1]);
    ssize_t got = pid > 0 ? read(p[0], answers, N_PROBES) : -1;
    close(p[0]);
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && got == (ssize_t) N_PROBES
           && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool write_all(const char *cg, const struct brig_cgroup_write *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", cg, w[i].file);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bool ok = fd >= 0
                  && write(fd, w[i].value, strlen(w[i].value)) == (ssize_t) strlen(w[i].value);
        if (fd >= 0)
            close(fd);
        if (!ok) {
            printf("#   %s <- %s: %s\n", path, w[i].value, strerror(errno));
            return false;
        }
    }
    return true;
}

/* How many probes the kernel, the model and (unless rules is NULL) the
 * eBPF program don't all answer alike (-1: no answers). */
static int kernel_differences(const struct brig_device_rule *rules, size_t n,
                              const struct brig_cgroup_write *w, size_t nw, const char *answers)
{
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    brig_error_t err = NULL;
    if (rules && brig_ebpf_devices_compile(rules, n, true, &insns, &len, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    int differences = 0;
    for (size_t i = 0; i < N_PROBES; i++) {
        const struct node *nd = &nodes[i / N(grid_kinds)];
        const char *kind = grid_kinds[i % N(grid_kinds)];
        int model = brig_cgroup_v1_devices_eval(w, nw, nd->type, nd->major, nd->minor, kind);
        int bpf = rules ? brig_ebpf_devices_eval(insns, len, nd->type, nd->major, nd->minor, kind)
                        : model;
        if (answers[i] != '0' + bpf || model != bpf) {
            differences++;
            printf("#   %c %ld:%ld %s: kernel %c, eBPF %d, model %d\n", nd->type, nd->major,
                   nd->minor, kind, answers[i], bpf, model);
        }
    }
    free(insns);
    return differences;
}

/* The writes into a new cgroup, then the probes from inside it. */
static bool kernel_agrees(const char *dir, const struct brig_device_rule *rules, size_t n,
                          const struct brig_cgroup_write *w, size_t nw)
{
    char cg[200], answers[N_PROBES];
    snprintf(cg, sizeof cg, V1_DEVICES "/brig-test-v1-%d", (int) getpid());
    bool made = mkdir(cg, 0755) == 0;
    bool ok = made && write_all(cg, w, nw) && probe_in(cg, dir, answers)
              && kernel_differences(rules, n, w, nw, answers) == 0;
    if (made)
        rmdir(cg);
    return ok;
}

static void kernel_case(const char *name, const char *dir, const struct brig_device_rule *rules,
                        size_t n)
{
    static const struct brig_device_rule none[1];
    struct brig_cgroup_write *w = NULL;
    size_t nw = 0;
    brig_error_t err = NULL;
    if (brig_cgroup_v1_devices_plan(rules, n, &w, &nw, &err) < 0) {
        CHECK(false, name);
        printf("#   %s\n", err->msg);
        brig_error_release(&err);
        return;
    }
    CHECK(kernel_agrees(dir, rules ? rules : none, n, w, nw), name);
    brig_cgroup_plan_free(w, nw);
}

/* Writes the plan never makes, for the quirks the model must share with
 * the kernel (the reasons it refuses some rules), and one request each
 * whose answer shows the quirk. */
static void kernel_quirks(const char *dir)
{
    const struct {
        const char *name;
        struct brig_cgroup_write w[4];
        size_t n;
        const char *access;
        int want; /* for c 120:0 */
    } quirks[] = {
        { "kernel: a deny doesn't cut into a wider allow",
          { { "devices.deny", "a" },
            { "devices.allow", "c *:* rwm" },
            { "devices.deny", "c 120:0 rwm" } },
          3,
          "r",
          1 },
        { "kernel: two allows of one device are ORed",
          { { "devices.deny", "a" },
            { "devices.allow", "c 120:0 r" },
            { "devices.allow", "b 120:0 r" },
            { "devices.allow", "c 120:0 w" } },
          4,
          "rw",
          1 },
        { "kernel: after allow all, an allow doesn't cut into a wider deny",
          { { "devices.allow", "a" },
            { "devices.deny", "c 120:* w" },
            { "devices.allow", "c 120:0 w" } },
          3,
          "w",
          0 },
    };
    for (size_t i = 0; i < N(quirks); i++)
        CHECK(kernel_agrees(dir, NULL, 0, quirks[i].w, quirks[i].n)
                  && brig_cgroup_v1_devices_eval(quirks[i].w, quirks[i].n, 'c', 120, 0,
                                                 quirks[i].access)
                         == quirks[i].want,
              quirks[i].name);
}

static void kernel_cases(const char *dir)
{
    kernel_case("kernel: no rules, the defaults", dir, NULL, 0);
    struct brig_device_rule runc[] = {
        RULE(false, NULL, ANY, ANY, "rwm"), RULE(true, "c", ANY, ANY, "m"),
        RULE(true, "b", ANY, ANY, "m"),     RULE(true, "c", 120, ANY, "rw"),
        RULE(true, "b", 120, 1, "r"),
    };
    kernel_case("kernel: deny all, then allows", dir, runc, N(runc));
    struct brig_device_rule all[] = { RULE(true, NULL, ANY, ANY, "rwm") };
    kernel_case("kernel: allow all", dir, all, 1);
    struct brig_device_rule all_but[] = { RULE(true, NULL, ANY, ANY, "rwm"),
                                          RULE(false, "c", 120, ANY, "w"),
                                          RULE(false, "b", ANY, ANY, "m"),
                                          RULE(false, "a", 121, 0, "r") };
    kernel_case("kernel: allow all, then denies", dir, all_but, N(all_but));
    struct brig_device_rule take[] = { RULE(false, NULL, ANY, ANY, "rwm"),
                                       RULE(true, "c", 120, 0, "rwm"),
                                       RULE(false, "c", 120, 0, "w"),
                                       RULE(true, "a", 121, ANY, "r") };
    kernel_case("kernel: a deny after an allow, type a", dir, take, N(take));
    kernel_quirks(dir);
}

/* The list a real cgroup reads. */
static char *read_list(const char *cg)
{
    char path[300], *text = calloc(1, 8192);
    snprintf(path, sizeof path, "%s/devices.list", cg);
    FILE *f = fopen(path, "r");
    if (f == NULL || text == NULL) {
        if (f)
            fclose(f);
        free(text);
        return NULL;
    }
    size_t got = fread(text, 1, 8191, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

/* A real cgroup given `from`'s list, then taken to `to`'s by the writes
 * brig_cgroup_v1_devices_update reads off its devices.list: the list it
 * ends with passes the check, and the kernel, the model and the eBPF
 * program answer every probe alike. `writes`: how many it should take
 * (-1: any). */
static bool kernel_update(const char *cg, const char *dir, const struct brig_device_rule *from,
                          size_t n_from, const struct brig_device_rule *to, size_t n_to, int writes)
{
    struct brig_cgroup_write *w0 = NULL, *w = NULL, *want = NULL;
    size_t n0 = 0, n = 0, nw = 0;
    brig_error_t err = NULL;
    char *before = NULL, *after = NULL, answers[N_PROBES];
    bool ok = brig_cgroup_v1_devices_state(from, n_from, &w0, &n0, &err) == 0
              && brig_cgroup_v1_devices_state(to, n_to, &want, &nw, &err) == 0
              && write_all(cg, w0, n0) && (before = read_list(cg)) != NULL
              && brig_cgroup_v1_devices_update(before, to, n_to, &w, &n, &err) == 0
              && (writes < 0 || n == (size_t) writes) && write_all(cg, w, n)
              && (after = read_list(cg)) != NULL
              && brig_cgroup_v1_devices_check_list(after, to, n_to, &err) == 0
              && probe_in(cg, dir, answers) && kernel_differences(to, n_to, want, nw, answers) == 0;
    if (!ok)
        printf("#   %s\n#   %zu writes; list after: %s\n", err ? err->msg : "", n,
               after ? after : "");
    brig_error_release(&err);
    brig_cgroup_plan_free(w0, n0);
    brig_cgroup_plan_free(w, n);
    brig_cgroup_plan_free(want, nw);
    free(before);
    free(after);
    return ok;
}

static void kernel_update_case(const char *name, const char *dir,
                               const struct brig_device_rule *from, size_t n_from,
                               const struct brig_device_rule *to, size_t n_to, int writes)
{
    static const struct brig_device_rule none[1];
    char cg[200];
    snprintf(cg, sizeof cg, V1_DEVICES "/brig-test-v1-%d", (int) getpid());
    bool made = mkdir(cg, 0755) == 0;
    CHECK(made && kernel_update(cg, dir, from, n_from, to ? to : none, n_to, writes), name);
    if (made)
        rmdir(cg);
}

static void kernel_updates(const char *dir)
{
    struct brig_device_rule some[] = { RULE(true, "c", 120, ANY, "rw"),
                                       RULE(true, "b", 120, 1, "r") };
    struct brig_device_rule other[] = { RULE(true, "c", 120, 0, "r"),
                                        RULE(true, "b", 121, 0, "rwm") };
    struct brig_device_rule all[] = { RULE(true, NULL, ANY, ANY, "rwm") };
    struct brig_device_rule all_but[] = { RULE(true, NULL, ANY, ANY, "rwm"),
                                          RULE(false, "c", 120, ANY, "w") };
    kernel_update_case("kernel update: the same rules write nothing", dir, some, N(some), some,
                       N(some), 0);
    kernel_update_case("kernel update: devices added, removed and narrowed", dir, some, N(some),
                       other, N(other), 4);
    kernel_update_case("kernel update: an allow-list to allow-all with a deny", dir, some, N(some),
                       all_but, N(all_but), 2);
    kernel_update_case("kernel update: allow-all to an allow-list", dir, all, 1, other, N(other),
                       -1);
    kernel_update_case("kernel update: allow-all with a deny to allow-all", dir, all_but,
                       N(all_but), all, 1, 1);
}

/* Device nodes in a directory of our own, if the host's majors 120 and
 * 121 are free and the file system takes nodes. */
static void test_kernel(void)
{
    char dir[] = "/tmp/brig-test-v1-XXXXXX", path[300], devices[4096] = "";
    FILE *f = fopen("/proc/devices", "r");
    size_t got = f ? fread(devices, 1, sizeof devices - 1, f) : 0;
    devices[got] = '\0';
    if (f)
        fclose(f);
    if (access(V1_DEVICES "/devices.allow", W_OK) < 0 || strstr(devices, "\n120 ")
        || strstr(devices, "\n121 ")) {
        SKIP("no v1 devices hierarchy, or majors 120/121 taken");
        return;
    }
    if (mkdtemp(dir) == NULL) {
        SKIP("no directory for device nodes");
        return;
    }
    bool nodes_made = true;
    for (size_t i = 0; i < N(nodes); i++) {
        node_path(dir, &nodes[i], path, sizeof path);
        nodes_made &= mknod(path, (nodes[i].type == 'b' ? S_IFBLK : S_IFCHR) | 0600,
                            makedev(nodes[i].major, nodes[i].minor))
                      == 0;
    }
    if (nodes_made) {
        kernel_cases(dir);
        kernel_updates(dir);
    } else
        SKIP("device nodes can't be made here");
    for (size_t i = 0; i < N(nodes); i++) {
        node_path(dir, &nodes[i], path, sizeof path);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    test_memory();
    test_cpu_pids();
    test_blkio();
    test_hugetlb_network_rdma();
    test_left_out_and_order();
    test_controllers();
    test_devices_plans();
    test_devices_refused();
    test_devices_model();
    test_devices_grid();
    test_devices_random();
    test_devices_update();
    test_devices_check_list();
    test_devices_update_random();
    test_sub_parse();
    if (geteuid() == 0)
        test_kernel();
    else
        SKIP("kernel tests need root");
    return unit_done();
}
