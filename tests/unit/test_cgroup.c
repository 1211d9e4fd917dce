/* cgroup v2: path resolution, needed controllers, the resources → file
 * writes plan, the stats parsers; then, as root, a real cgroup on the v2
 * hierarchy: create, join, freeze, kill, device rules, destroy. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/backend.h"
#include "unit.h"

/* A TAP skip that still counts as a test point, so the plan line matches. */
#define SKIP(why) printf("ok %d - # SKIP %s\n", ++unit_run, why)

/* ---- path ------------------------------------------------------------------------ */

static void test_path_resolve(void)
{
    static const struct {
        const char *path, *id, *own, *want; /* want NULL: an error */
    } cases[] = {
        { "/foo/bar", "c1", "/", "foo/bar" },
        { "/foo/bar", "c1", "/a/b", "foo/bar" },
        { "//foo//./bar/", "c1", "/", "foo/bar" },
        { "/foo/../../../bar", "c1", "/", "bar" },
        { "/../../etc", "c1", "/a", "etc" },
        { "/", "c1", "/", NULL },
        { "/foo/..", "c1", "/", NULL },
        { "foo", "c1", "/a/b", "a/foo" },
        { "foo/bar", "c1", "/a/b/c", "a/b/foo/bar" },
        { "foo", "c1", "/", "foo" },
        { "../../../../x", "c1", "/a/b", "x" },
        { "..", "c1", "/a/b", NULL },
        { "./", "c1", "/", NULL },
        { NULL, "c1", "/a/b", "a/brig/c1" },
        { NULL, "c1", "/", "brig/c1" },
        { NULL, "c1", "/user.slice", "brig/c1" },
        { NULL, "c1", NULL, "brig/c1" },
        { "", "c1", "/a/b", "a/brig/c1" },
        { NULL, "../x", "/", NULL },
        { NULL, "..", "/", NULL },
        { NULL, "", "/", NULL },
        { NULL, NULL, "/", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        brig_error_t err = NULL;
        int r = brig_cgroup_path_resolve(cases[i].path, cases[i].id, cases[i].own, &out, &err);
        char name[200];
        snprintf(name, sizeof name, "resolve path=%s id=%s own=%s", cases[i].path, cases[i].id,
                 cases[i].own);
        if (cases[i].want) {
            CHECK(r == 0, name);
            CHECK_STR(out, cases[i].want, name);
        } else {
            CHECK(r < 0 && err && err->msg, name);
        }
        free(out);
        brig_error_release(&err);
    }
}

/* ---- plan ------------------------------------------------------------------------ */

/* "file=value; file=value", or "ERROR: message". */
static char *plan_text(const struct brig_resources *r)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    char *out = NULL;
    if (brig_cgroup_plan(r, &w, &n, &err) < 0) {
        if (asprintf(&out, "ERROR: %s", err->msg) < 0)
            out = NULL;
        brig_error_release(&err);
        return out;
    }
    size_t size = 1;
    for (size_t i = 0; i < n; i++)
        size += strlen(w[i].file) + strlen(w[i].value) + 3;
    out = calloc(1, size);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(out, "; ");
        strcat(out, w[i].file);
        strcat(out, "=");
        strcat(out, w[i].value);
    }
    brig_cgroup_plan_free(w, n);
    return out;
}

static void check_plan(const char *name, const struct brig_resources *r, const char *want)
{
    char *got = plan_text(r);
    CHECK_STR(got, want, name);
    free(got);
}

static void check_plan_error(const char *name, const struct brig_resources *r, const char *part)
{
    unit_check_error(name, plan_text(r), part);
}

static void test_plan_memory(void)
{
    struct brig_memory m = { .has_limit = true, .limit = 1048576 };
    struct brig_resources r = { .memory = &m };
    check_plan("memory.limit", &r, "memory.max=1048576");
    m.limit = -1;
    check_plan("memory.limit -1", &r, "memory.max=max");
    m.limit = 0;
    check_plan("memory.limit 0 is unset", &r, "");
    m = (struct brig_memory){ .has_limit = true,
                              .limit = 100,
                              .has_swap = true,
                              .swap = 300,
                              .has_reservation = true,
                              .reservation = 50 };
    check_plan("memory reservation, limit, swap", &r,
               "memory.low=50; memory.max=100; memory.swap.max=200");
    m.swap = 100;
    check_plan("swap == limit: no swap", &r, "memory.low=50; memory.max=100; memory.swap.max=0");
    m.swap = -1;
    check_plan("swap -1", &r, "memory.low=50; memory.max=100; memory.swap.max=max");
    m.swap = 99;
    check_plan_error("swap < limit", &r, "memory.swap: 99 is below the memory limit 100");
    m = (struct brig_memory){ .has_swap = true, .swap = 300 };
    check_plan_error("swap without limit", &r, "needs a memory limit");
    m = (struct brig_memory){ .has_limit = true, .limit = -5 };
    check_plan_error("negative limit", &r, "memory.limit: -5");
    m = (struct brig_memory){ .has_reservation = true, .reservation = -1 };
    check_plan("reservation -1", &r, "memory.low=max");
    m = (struct brig_memory){ .has_kernel = true,
                              .kernel = 1 << 20,
                              .has_kernel_tcp = true,
                              .kernel_tcp = 1 << 20,
                              .has_swappiness = true,
                              .swappiness = 60,
                              .has_disable_oom_killer = true,
                              .disable_oom_killer = true };
    check_plan("kernel, kernelTCP, swappiness, disableOOMKiller: nothing in v2", &r, "");
}

static void test_plan_cpu(void)
{
    struct brig_cpu c = { .has_shares = true, .shares = 1024 };
    struct brig_resources r = { .cpu = &c };
    check_plan("shares 1024", &r, "cpu.weight=39");
    c.shares = 2;
    check_plan("shares 2", &r, "cpu.weight=1");
    c.shares = 262144;
    check_plan("shares 262144", &r, "cpu.weight=10000");
    c.shares = 1;
    check_plan("shares 1 clamps", &r, "cpu.weight=1");
    c.shares = 1000000;
    check_plan("shares huge clamps", &r, "cpu.weight=10000");
    c.shares = 0;
    check_plan("shares 0 is unset", &r, "");
    c = (struct brig_cpu){ .has_quota = true,
                           .quota = 50000,
                           .has_period = true,
                           .period = 200000 };
    check_plan("quota + period", &r, "cpu.max=50000 200000");
    c = (struct brig_cpu){ .has_quota = true, .quota = 50000 };
    check_plan("quota alone: default period", &r, "cpu.max=50000 100000");
    c = (struct brig_cpu){ .has_quota = true, .quota = -1, .has_period = true, .period = 50000 };
    check_plan("quota -1", &r, "cpu.max=max 50000");
    c = (struct brig_cpu){ .has_period = true, .period = 50000 };
    check_plan("period alone", &r, "cpu.max=max 50000");
    c = (struct brig_cpu){ .has_burst = true, .burst = 1000, .has_idle = true, .idle = 1 };
    check_plan("burst, idle", &r, "cpu.max.burst=1000; cpu.idle=1");
    c = (struct brig_cpu){ .cpus = "0-1", .mems = "0", .has_shares = true, .shares = 512 };
    check_plan("cpuset first", &r, "cpuset.cpus=0-1; cpuset.mems=0; cpu.weight=20");
    c = (struct brig_cpu){ .has_realtime_runtime = true, .realtime_runtime = 950000 };
    check_plan_error("realtime runtime", &r, "not supported by cgroup v2");
    c = (struct brig_cpu){ .has_realtime_period = true, .realtime_period = 1000000 };
    check_plan_error("realtime period", &r, "realtimeRuntime/realtimePeriod");
    c = (struct brig_cpu){ .has_realtime_period = true,
                           .realtime_period = 0,
                           .has_realtime_runtime = true,
                           .realtime_runtime = 0 };
    check_plan("realtime zeros are unset", &r, "");
}

static void test_plan_io(void)
{
    struct brig_weight_device wd[] = {
        { .major = 8, .minor = 0, .has_weight = true, .weight = 500 },
        { .major = 8, .minor = 16, .has_leaf_weight = true, .leaf_weight = 10 },
    };
    struct brig_throttle_device rb[] = { { 8, 0, 1048576 }, { 8, 16, 0 } };
    struct brig_throttle_device wb[] = { { 8, 0, 2048 } };
    struct brig_throttle_device ri[] = { { 253, 1, 100 } };
    struct brig_throttle_device wi[] = { { 253, 1, 200 } };
    struct brig_block_io b = {
        .has_weight = true,
        .weight = 10,
        .weight_devices = wd,
        .n_weight_devices = 2,
        .throttle_read_bps = { rb, 2 },
        .throttle_write_bps = { wb, 1 },
        .throttle_read_iops = { ri, 1 },
        .throttle_write_iops = { wi, 1 },
    };
    struct brig_resources r = { .block_io = &b };
    check_plan("blockIO everything", &r,
               "io.weight=default 1; io.weight=8:0 4950; io.max=8:0 rbps=1048576; "
               "io.max=8:16 rbps=max; io.max=8:0 wbps=2048; io.max=253:1 riops=100; "
               "io.max=253:1 wiops=200");
    struct brig_block_io b2 = { .has_weight = true, .weight = 1000 };
    r.block_io = &b2;
    check_plan("blkio weight 1000", &r, "io.weight=default 10000");
    b2.weight = 5;
    check_plan_error("blkio weight 5", &r, "blockIO.weight: 5 is outside 10-1000");
    struct brig_throttle_device bad[] = { { -1, 0, 5 } };
    struct brig_block_io b3 = { .throttle_read_bps = { bad, 1 } };
    r.block_io = &b3;
    check_plan_error("throttle bad device", &r, "bad device -1:0");
}

static void test_plan_misc(void)
{
    struct brig_resources r = { .has_pids_limit = true, .pids_limit = 100 };
    check_plan("pids.limit", &r, "pids.max=100");
    r.pids_limit = 0;
    check_plan("pids.limit 0", &r, "pids.max=max");
    r.pids_limit = -1;
    check_plan("pids.limit -1", &r, "pids.max=max");

    struct brig_hugepage_limit h[] = { { "2MB", 4194304 }, { "1GB", 0 } };
    struct brig_resources rh = { .hugepage_limits = h, .n_hugepage_limits = 2 };
    check_plan("hugepageLimits", &rh, "hugetlb.2MB.max=4194304; hugetlb.1GB.max=0");
    struct brig_hugepage_limit hbad[] = { { "../2MB", 1 } };
    struct brig_resources rhb = { .hugepage_limits = hbad, .n_hugepage_limits = 1 };
    check_plan_error("hugepage pageSize with a path", &rhb, "bad pageSize `../2MB`");

    struct brig_rdma_limit rd[] = {
        { "mlx5_0", true, 10, true, 1000 },
        { "mlx4_1", true, 5, false, 0 },
        { "none", false, 0, false, 0 },
    };
    struct brig_resources rr = { .rdma = rd, .n_rdma = 3 };
    check_plan("rdma", &rr,
               "rdma.max=mlx5_0 hca_handle=10 hca_object=1000; "
               "rdma.max=mlx4_1 hca_handle=5");
    struct brig_rdma_limit rdbad[] = { { "a b", true, 1, false, 0 } };
    struct brig_resources rrb = { .rdma = rdbad, .n_rdma = 1 };
    check_plan_error("rdma device with a space", &rrb, "bad device name `a b`");

    struct brig_net_priority np[] = { { "eth0", 5 } };
    struct brig_resources rn = { .has_net_class_id = true,
                                 .net_class_id = 7,
                                 .net_priorities = np,
                                 .n_net_priorities = 1 };
    check_plan_error("network is v1 only: refused on v2", &rn,
                     "linux.resources.network: cgroup v2 has no net_cls or net_prio");
}

static void test_plan_unified(void)
{
    struct brig_kv kv[] = {
        { "memory.high", "1G" },
        { "io.max", "8:0 rbps=1 wbps=2" },
        { "cgroup.max.depth", "3" },
    };
    struct brig_memory m = { .has_limit = true, .limit = 4096 };
    struct brig_resources r = { .memory = &m, .unified = { kv, 3 } };
    check_plan("unified after typed fields", &r,
               "memory.max=4096; memory.high=1G; io.max=8:0 rbps=1 wbps=2; cgroup.max.depth=3");
    static const char *const bad[] = {
        "cgroup.procs",  "cgroup.threads", "cgroup.subtree_control",
        "cgroup.kill",   "cgroup.freeze",  "cgroup.type",
        "../memory.max", "memory/max",     "nodot",
        ".max",          "memory.",        "",
        "memory.max\n",  "memory max",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct brig_kv one = { (char *) bad[i], "1" };
        struct brig_resources rb = { .unified = { &one, 1 } };
        char name[80];
        snprintf(name, sizeof name, "unified key `%.*s` refused", (int) strcspn(bad[i], "\n"),
                 bad[i]);
        check_plan_error(name, &rb, "is not a controller file");
    }
}

/* ---- controllers ----------------------------------------------------------------- */

static char *joined(const char *const *v)
{
    static char buf[200];
    buf[0] = '\0';
    for (size_t i = 0; v[i]; i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, v[i]);
    }
    return buf;
}

static void test_needed(void)
{
    const char *out[8];
    struct brig_resources none = { 0 };
    brig_cgroup_needed_controllers(&none, out);
    CHECK_STR(joined(out), "", "no resources need no controller");

    struct brig_memory swappy = { .has_swappiness = true, .swappiness = 0 };
    struct brig_resources r1 = { .memory = &swappy };
    brig_cgroup_needed_controllers(&r1, out);
    CHECK_STR(joined(out), "", "memory without v2 fields needs nothing");

    struct brig_memory m = { .has_limit = true, .limit = 1 << 20 };
    struct brig_cpu c = { .cpus = "0", .has_shares = true, .shares = 100 };
    struct brig_hugepage_limit h[] = { { "2MB", 0 } };
    struct brig_resources r2 = { .memory = &m,
                                 .cpu = &c,
                                 .has_pids_limit = true,
                                 .pids_limit = 5,
                                 .hugepage_limits = h,
                                 .n_hugepage_limits = 1 };
    brig_cgroup_needed_controllers(&r2, out);
    CHECK_STR(joined(out), "cpuset cpu memory hugetlb pids", "memory, cpu, cpuset, pids, hugetlb");

    struct brig_kv kv[] = {
        { "pids.max", "3" },
        { "cgroup.max.depth", "2" },
        { "io.weight", "5" },
    };
    struct brig_resources r3 = { .unified = { kv, 3 } };
    brig_cgroup_needed_controllers(&r3, out);
    CHECK_STR(joined(out), "io pids", "unified keys name their controllers, cgroup.* none");

    struct brig_block_io b = { .has_weight = true, .weight = 100 };
    struct brig_resources r4 = { .block_io = &b };
    brig_cgroup_needed_controllers(&r4, out);
    CHECK_STR(joined(out), "io", "blockIO needs io");

    char by[100];
    brig_cgroup_needed_by(&r2, "memory", by, sizeof by);
    CHECK_STR(by, "linux.resources.memory", "memory needed by linux.resources.memory");
    brig_cgroup_needed_by(&r2, "cpuset", by, sizeof by);
    CHECK_STR(by, "linux.resources.cpu", "cpuset needed by linux.resources.cpu");
    brig_cgroup_needed_by(&r3, "pids", by, sizeof by);
    CHECK_STR(by, "linux.resources.unified `pids.max`", "pids needed by a unified key");
}

/* ---- stats ----------------------------------------------------------------------- */

static void test_stats_parse(void)
{
    struct brig_cgroup_stats s = { 0 };
    CHECK(brig_cgroup_stats_parse("memory.current", "123456\n", &s) == 0
              && s.memory_current == 123456,
          "memory.current");
    brig_cgroup_stats_parse("memory.max", "max\n", &s);
    CHECK(s.memory_max == UINT64_MAX, "memory.max max");
    brig_cgroup_stats_parse("memory.swap.current", "0\n", &s);
    brig_cgroup_stats_parse("memory.swap.max", "1048576\n", &s);
    CHECK(s.memory_swap_current == 0 && s.memory_swap_max == 1048576, "memory.swap.*");
    brig_cgroup_stats_parse("memory.events",
                            "low 0\nhigh 4\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n", &s);
    CHECK(s.memory_events_max == 17 && s.memory_events_oom == 2 && s.memory_events_oom_kill == 1,
          "memory.events: max, oom, oom_kill (oom_group_kill not mistaken)");
    brig_cgroup_stats_parse("pids.current", "3", &s);
    brig_cgroup_stats_parse("pids.max", "max", &s);
    CHECK(s.pids_current == 3 && s.pids_max == UINT64_MAX, "pids.current, pids.max");
    brig_cgroup_stats_parse("cpu.stat",
                            "usage_usec 1000\nuser_usec 600\nsystem_usec 400\n"
                            "core_sched.force_idle_usec 0\n"
                            "nr_periods 10\nnr_throttled 3\nthrottled_usec 2500\nnr_bursts 0\n"
                            "burst_usec 0\n",
                            &s);
    CHECK(s.cpu_usage_usec == 1000 && s.cpu_user_usec == 600 && s.cpu_system_usec == 400
              && s.cpu_nr_periods == 10 && s.cpu_nr_throttled == 3 && s.cpu_throttled_usec == 2500,
          "cpu.stat");
    brig_cgroup_stats_parse("io.stat",
                            "8:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n"
                            "253:1 rbytes=1000 wbytes=2000 rios=10 wios=20 dbytes=5 dios=1\n",
                            &s);
    CHECK(s.io_rbytes == 1100 && s.io_wbytes == 2200 && s.io_rios == 11 && s.io_wios == 22,
          "io.stat summed over devices");
    struct brig_cgroup_stats e = { 0 };
    brig_cgroup_stats_parse("io.stat", "", &e);
    brig_cgroup_stats_parse("memory.current", "garbage", &e);
    brig_cgroup_stats_parse("cpu.stat", "usage_usec\nuser_usec x\n", &e);
    CHECK(e.io_rbytes == 0 && e.memory_current == 0 && e.cpu_usage_usec == 0
              && e.cpu_user_usec == 0,
          "empty or malformed text reads as 0");
    CHECK(brig_cgroup_stats_parse("memory.numa_stat", "anon=1\n", &e) == -1,
          "unknown file refused");
}

/* ---- as root: a real cgroup -------------------------------------------------------- */

static pid_t sleeper(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    return pid;
}

static bool events_say(const char *path, const char *line)
{
    char file[300], buf[512];
    snprintf(file, sizeof file, "%s/cgroup.events", path);
    int fd = open(file, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, line) != NULL;
}

static bool file_has(const char *file, const char *word)
{
    char buf[512] = "";
    FILE *f = fopen(file, "r");
    if (f == NULL)
        return false;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    fclose(f);
    return strstr(buf, word) != NULL;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The kernel tests drive the v2 backend itself: on a hybrid host the
 * interface's own choice is the v1 one (tested by cgroups_v1.bats), and
 * the v2 tree there still freezes, kills and lists without controllers. */
static int v2_create(const char *relative, const struct brig_resources *r, struct brig_cgroup *cg,
                     brig_error_t *err)
{
    char absolute[300];
    snprintf(absolute, sizeof absolute, "/%s", relative);
    *cg = (struct brig_cgroup) BRIG_CGROUP_INIT;
    return brig_cgroup_v2.create(absolute, NULL, r, cg, err);
}

static void test_kernel_lifecycle(const char *root, const char *top)
{
    char relative[200];
    snprintf(relative, sizeof relative, "%s/brig/c1", top);
    struct brig_resources none = { 0 };
    struct brig_cgroup cg;
    brig_error_t err = NULL;
    int r = v2_create(relative, &none, &cg, &err);
    CHECK(r == 0, "kernel: create a cgroup without limits");
    if (r < 0) {
        printf("#   %s\n", err->msg);
        brig_error_release(&err);
        return;
    }
    char want[300];
    snprintf(want, sizeof want, "%s/%s", root, relative);
    CHECK_STR(cg.path, want, "kernel: cgroup path under the root");

    pid_t child = sleeper();
    CHECK(brig_cgroup_add_pid(&cg, child, &err) == 0, "kernel: add a process");
    pid_t *pids = NULL;
    size_t n = 0;
    CHECK(brig_cgroup_pids(&cg, &pids, &n, &err) == 0 && n == 1 && pids[0] == child,
          "kernel: pids lists it");
    free(pids);

    CHECK(brig_cgroup_freeze(&cg, true, &err) == 0, "kernel: freeze");
    CHECK(events_say(cg.path, "frozen 1") && brig_cgroup_is_frozen(&cg),
          "kernel: cgroup.events says frozen 1");
    CHECK(brig_cgroup_freeze(&cg, false, &err) == 0, "kernel: thaw");
    CHECK(events_say(cg.path, "frozen 0") && !brig_cgroup_is_frozen(&cg), "kernel: frozen 0");

    /* Removal must wait for the process to go. */
    brig_error_t busy = NULL;
    struct brig_cgroup_stats s;
    CHECK(brig_cgroup_stats(&cg, &s, &err) == 0, "kernel: stats read (missing files are 0)");

    CHECK(brig_cgroup_kill_all(&cg, &err) == 0, "kernel: kill_all");
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
          "kernel: the process died of SIGKILL");

    pid_t term = sleeper();
    CHECK(brig_cgroup_add_pid(&cg, term, &err) == 0, "kernel: add another");
    CHECK(brig_cgroup_signal_all(&cg, SIGTERM, &err) == 0, "kernel: signal_all SIGTERM");
    CHECK(waitpid(term, &status, 0) == term && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
          "kernel: the process died of SIGTERM");

    char path[300];
    snprintf(path, sizeof path, "%s", cg.path);
    brig_cgroup_close(&cg);
    CHECK(brig_cgroup_destroy(path, &busy) == 0, "kernel: destroy");
    if (busy)
        printf("#   %s\n", busy->msg);
    brig_error_release(&busy);
    char parent[300], top_path[300];
    snprintf(parent, sizeof parent, "%s/%s/brig", root, top);
    snprintf(top_path, sizeof top_path, "%s/%s", root, top);
    CHECK(!exists(path), "kernel: cgroup dir gone");
    /* The brig/ level stays for the next container, as a slice would: one
     * mkdir per container, and no rmdir racing another one's create. */
    CHECK(exists(parent), "kernel: brig/ parent kept");
    CHECK(rmdir(parent) == 0, "kernel: ... and empty");
    CHECK(exists(top_path), "kernel: user-named parent kept");
    CHECK(brig_cgroup_destroy(path, &err) == 0, "kernel: destroying a missing cgroup succeeds");
    brig_error_release(&err);
}

/* A child that joins the cgroup, then opens /dev/kmsg read-only; returns
 * its errno (0 when the open worked). */
static int open_kmsg_in(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        char procs[300];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", path);
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(255);
        _exit(open("/dev/kmsg", O_RDONLY) >= 0 ? 0 : errno);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void test_kernel_devices(const char *top)
{
    int kmsg = open("/dev/kmsg", O_RDONLY | O_CLOEXEC);
    if (kmsg < 0) {
        SKIP("/dev/kmsg can't be opened here");
        return;
    }
    close(kmsg);
    char relative[200];
    snprintf(relative, sizeof relative, "%s/dev", top);
    struct brig_resources none = { 0 };
    struct brig_cgroup cg;
    brig_error_t err = NULL;
    CHECK(v2_create(relative, &none, &cg, &err) == 0, "kernel: create (default devices)");
    brig_error_release(&err);
    if (cg.path == NULL)
        return;
    CHECK(open_kmsg_in(cg.path) == EPERM, "kernel: a device outside the defaults is refused");

    struct brig_device_rule allow_kmsg = { .allow = true,
                                           .type = "c",
                                           .has_major = true,
                                           .major = 1,
                                           .has_minor = true,
                                           .minor = 11,
                                           .access = "r" };
    struct brig_resources upd = { .devices = &allow_kmsg, .n_devices = 1 };
    CHECK(brig_cgroup_apply(&cg, &upd, &err) == 0, "kernel: update with a device rule");
    brig_error_release(&err);
    CHECK(open_kmsg_in(cg.path) == 0, "kernel: the allowed device opens after update");
    char path[300];
    snprintf(path, sizeof path, "%s", cg.path);
    brig_cgroup_close(&cg);
    CHECK(brig_cgroup_destroy(path, &err) == 0 && !exists(path), "kernel: destroy");
    brig_error_release(&err);
}

static void test_kernel_errors(const char *root, const char *top)
{
    char relative[200], path[300];
    snprintf(relative, sizeof relative, "%s/mem/c", top);
    snprintf(path, sizeof path, "%s/%s/mem", root, top);
    struct brig_memory m = { .has_limit = true, .limit = 1 << 20 };
    struct brig_resources r = { .memory = &m };
    struct brig_cgroup cg;
    brig_error_t err = NULL;
    char controllers[300];
    snprintf(controllers, sizeof controllers, "%s/cgroup.controllers", root);
    if (file_has(controllers, "memory")) {
        SKIP("this hierarchy has the memory controller");
    } else {
        int rc = v2_create(relative, &r, &cg, &err);
        CHECK(rc < 0 && err
                  && strstr(err->msg, "controller `memory` is not available (needed "
                                      "by linux.resources.memory)"),
              "kernel: a missing controller is named");
        if (err)
            printf("#   %s\n", err->msg);
        brig_error_release(&err);
        CHECK(!exists(path), "kernel: nothing left behind after a failed create");
    }

    snprintf(relative, sizeof relative, "%s/bad", top);
    struct brig_kv kv = { "cgroup.max.depth", "abc" };
    struct brig_resources bad = { .unified = { &kv, 1 } };
    int rc = v2_create(relative, &bad, &cg, &err);
    CHECK(rc < 0 && err
              && strcmp(err->msg, "cgroup: write `cgroup.max.depth` = `abc`: Invalid "
                                  "argument")
                     == 0,
          "kernel: a write error names file and value");
    if (err)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    snprintf(path, sizeof path, "%s/%s", root, relative);
    CHECK(!exists(path), "kernel: failed create removed its dir");

    struct brig_kv ok = { "cgroup.max.depth", "2" };
    struct brig_resources good = { .unified = { &ok, 1 } };
    CHECK(v2_create(relative, &good, &cg, &err) == 0, "kernel: unified key written");
    char file[400], buf[32] = "";
    snprintf(file, sizeof file, "%s/cgroup.max.depth", path);
    FILE *f = fopen(file, "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    }
    CHECK_STR(buf, "2\n", "kernel: cgroup.max.depth reads back");
    pid_t child = sleeper();
    brig_cgroup_add_pid(&cg, child, &err);
    struct brig_cgroup again;
    CHECK(v2_create(relative, &good, &again, &err) < 0 && err
              && strstr(err->msg, "already has processes"),
          "kernel: an existing cgroup with processes is refused");
    brig_error_release(&err);
    CHECK(exists(path), "kernel: ... and left alone");
    brig_cgroup_kill_all(&cg, &err);
    waitpid(child, NULL, 0);
    brig_cgroup_close(&cg);
    CHECK(brig_cgroup_destroy(path, &err) == 0, "kernel: destroy");
    brig_error_release(&err);
}

static bool undo_hugetlb;

/* hugetlb is the one real controller a hybrid host's v2 side may have. */
static void test_kernel_hugetlb(const char *root, const char *top)
{
    char file[400];
    snprintf(file, sizeof file, "%s/cgroup.controllers", root);
    if (!file_has(file, "hugetlb") || !exists("/sys/kernel/mm/hugepages/hugepages-2048kB")) {
        SKIP("no hugetlb controller with 2MB pages");
        return;
    }
    snprintf(file, sizeof file, "%s/cgroup.subtree_control", root);
    bool was_enabled = file_has(file, "hugetlb");
    char relative[200], path[300];
    snprintf(relative, sizeof relative, "%s/huge/c", top);
    struct brig_hugepage_limit h = { "2MB", 4194304 };
    struct brig_resources r = { .hugepage_limits = &h, .n_hugepage_limits = 1 };
    struct brig_cgroup cg;
    brig_error_t err = NULL;
    int rc = v2_create(relative, &r, &cg, &err);
    CHECK(rc == 0, "kernel: hugetlb enabled down the tree and limited");
    if (rc < 0) {
        printf("#   %s\n", err->msg);
        brig_error_release(&err);
    } else {
        snprintf(file, sizeof file, "%s/hugetlb.2MB.max", cg.path);
        CHECK(file_has(file, "4194304"), "kernel: hugetlb.2MB.max reads back");
        snprintf(path, sizeof path, "%s", cg.path);
        brig_cgroup_close(&cg);
        CHECK(brig_cgroup_destroy(path, &err) == 0, "kernel: destroy");
    }

    /* A non-root cgroup with processes can't delegate: the error says why. */
    snprintf(path, sizeof path, "%s/%s/busy", root, top);
    mkdir(path, 0755);
    pid_t child = sleeper();
    char procs[400], pid[16];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", path);
    snprintf(pid, sizeof pid, "%d", (int) child);
    int fd = open(procs, O_WRONLY);
    CHECK(fd >= 0 && write(fd, pid, strlen(pid)) > 0, "kernel: a process in an inner cgroup");
    if (fd >= 0)
        close(fd);
    snprintf(relative, sizeof relative, "%s/busy/c", top);
    rc = v2_create(relative, &r, &cg, &err);
    CHECK(rc < 0 && err && strstr(err->msg, "has processes of its own"),
          "kernel: no-internal-processes rule explained");
    if (err)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(brig_cgroup_destroy(path, &err) == 0 && !exists(path), "kernel: destroy busy/");
    brig_error_release(&err);
    snprintf(path, sizeof path, "%s/%s/huge", root, top);
    rmdir(path);
    if (!was_enabled)
        undo_hugetlb = true;
}

static void test_kernel(void)
{
    brig_error_t err = NULL;
    const char *root = brig_cgroup_root(&err);
    CHECK(root != NULL, "kernel: a cgroup v2 hierarchy");
    if (root == NULL) {
        brig_error_release(&err);
        return;
    }
    char top[64], top_path[300];
    snprintf(top, sizeof top, "brig-unit-%d", (int) getpid());
    snprintf(top_path, sizeof top_path, "%s/%s", root, top);
    test_kernel_lifecycle(root, top);
    test_kernel_devices(top);
    test_kernel_errors(root, top);
    test_kernel_hugetlb(root, top);
    CHECK(rmdir(top_path) == 0, "kernel: test tree removed");
    if (undo_hugetlb) {
        char file[300];
        snprintf(file, sizeof file, "%s/cgroup.subtree_control", root);
        int fd = open(file, O_WRONLY);
        CHECK(fd >= 0 && write(fd, "-hugetlb", 8) == 8, "kernel: hugetlb delegation undone");
        if (fd >= 0)
            close(fd);
    }
}

int main(void)
{
    test_path_resolve();
    test_plan_memory();
    test_plan_cpu();
    test_plan_io();
    test_plan_misc();
    test_plan_unified();
    test_needed();
    test_stats_parse();
    if (geteuid() == 0)
        test_kernel();
    else
        SKIP("kernel tests need root");
    return unit_done();
}
