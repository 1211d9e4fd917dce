/* config.json parsing: every field of a full document, every class of
 * error with the JSON path it must name, and the default spec. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "spec/spec.h"
#include "unit.h"

#define MINIMAL "\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}"

static struct brig_spec *parse_ok(const char *json, const char *name)
{
    struct brig_spec *spec = NULL;
    brig_error_t err = NULL;
    int r = brig_spec_parse(json, strlen(json), "config.json", &spec, &err);
    CHECK(r == 0 && spec != NULL, name);
    if (r < 0) {
        printf("#   error: %s\n", err->msg);
        brig_error_release(&err);
    }
    return spec;
}

/* Parses json, expects failure with `want` in the message, a single line
 * starting with the origin, and no spec handed out. */
static void expect_error(const char *json, const char *want)
{
    struct brig_spec *spec = (struct brig_spec *) 1;
    brig_error_t err = NULL;
    int r = brig_spec_parse(json, strlen(json), "config.json", &spec, &err);
    const char *msg = err ? err->msg : "";
    int ok = r < 0 && spec == NULL && err != NULL && strstr(msg, want) != NULL
             && strncmp(msg, "config.json: ", 13) == 0 && strchr(msg, '\n') == NULL;
    CHECK(ok, want);
    if (!ok)
        printf("#   got \"%s\"\n", msg);
    if (r == 0)
        brig_spec_free(spec);
    brig_error_release(&err);
}

static char *fixture_path(const char *name)
{
    const char *dir = getenv("top_srcdir");
    char *path = NULL;
    if (asprintf(&path, "%s/tests/unit/fixtures/%s", dir ? dir : ".", name) < 0)
        abort();
    return path;
}

static void test_full_process(const struct brig_process *p)
{
    CHECK(p->terminal, "process.terminal");
    CHECK(p->has_console_size && p->console_height == 24 && p->console_width == 80,
          "process.consoleSize");
    CHECK(p->user.uid == 1000 && p->user.gid == 1001, "process.user uid/gid");
    CHECK(p->user.has_umask && p->user.umask == 18, "process.user.umask");
    CHECK(p->user.n_additional_gids == 2 && p->user.additional_gids[0] == 5
              && p->user.additional_gids[1] == UINT32_MAX,
          "process.user.additionalGids");
    CHECK_STR(p->user.username, "oai", "process.user.username");
    CHECK(p->args.n == 3 && p->args.v[3] == NULL, "process.args NULL-terminated");
    CHECK_STR(p->args.v[2], "echo hi", "process.args[2]");
    CHECK(p->env.n == 2, "process.env count");
    CHECK_STR(p->env.v[1], "HOME=/home/oai", "process.env[1]");
    CHECK_STR(p->cwd, "/home/oai", "process.cwd");
    CHECK(p->capabilities != NULL, "process.capabilities");
    if (p->capabilities) {
        CHECK(p->capabilities->bounding.n == 2, "capabilities.bounding");
        CHECK(p->capabilities->inheritable.n == 0 && p->capabilities->inheritable.v == NULL,
              "capabilities.inheritable empty");
        CHECK(p->capabilities->permitted.n == 3 && p->capabilities->permitted.v[3] == NULL,
              "capabilities.permitted");
        CHECK_STR(p->capabilities->ambient.v[0], "CAP_NET_BIND_SERVICE", "capabilities.ambient");
        CHECK_STR(p->capabilities->effective.v[0], "CAP_KILL", "capabilities.effective");
    }
    CHECK(p->n_rlimits == 2, "process.rlimits count");
    if (p->n_rlimits == 2) {
        CHECK(p->rlimits[0].resource == RLIMIT_NOFILE && p->rlimits[0].hard == 4096
                  && p->rlimits[0].soft == 1024,
              "rlimits[0]");
        CHECK(p->rlimits[1].resource == RLIMIT_CORE && p->rlimits[1].hard == UINT64_MAX,
              "rlimits[1] unlimited hard");
        CHECK_STR(p->rlimits[1].type, "RLIMIT_CORE", "rlimits[1].type");
    }
    CHECK(p->no_new_privileges, "process.noNewPrivileges");
    CHECK_STR(p->apparmor_profile, "brig-default", "process.apparmorProfile");
    CHECK(p->has_oom_score_adj && p->oom_score_adj == -500, "process.oomScoreAdj");
    CHECK_STR(p->selinux_label, "system_u:system_r:svirt_lxc_net_t:s0:c124,c675",
              "process.selinuxLabel");
    CHECK(p->scheduler != NULL, "process.scheduler");
    if (p->scheduler) {
        CHECK_STR(p->scheduler->policy, "SCHED_DEADLINE", "scheduler.policy");
        CHECK(p->scheduler->nice == -5 && p->scheduler->priority == 10, "scheduler nice/prio");
        CHECK(p->scheduler->flags.n == 1, "scheduler.flags");
        CHECK(p->scheduler->runtime == 10000000 && p->scheduler->deadline == 20000000
                  && p->scheduler->period == 30000000,
              "scheduler runtime/deadline/period");
    }
    CHECK(p->io_priority && p->io_priority->priority == 4, "process.ioPriority");
    CHECK_STR(p->io_priority ? p->io_priority->class : NULL, "IOPRIO_CLASS_BE", "ioPriority.class");
    CHECK_STR(p->exec_cpu_affinity_initial, "0-1", "execCPUAffinity.initial");
    CHECK_STR(p->exec_cpu_affinity_final, "2", "execCPUAffinity.final");
}

static void test_full_top(const struct brig_spec *s)
{
    CHECK_STR(s->oci_version, "1.2.0", "ociVersion");
    CHECK(s->root && s->root->readonly, "root.readonly");
    CHECK_STR(s->root ? s->root->path : NULL, "/srv/rootfs", "root.path");
    CHECK_STR(s->hostname, "box", "hostname");
    CHECK_STR(s->domainname, "example.org", "domainname");
    CHECK(s->n_mounts == 2, "mounts count");
    if (s->n_mounts == 2) {
        const struct brig_mount *m = &s->mounts[1];
        CHECK_STR(s->mounts[0].type, "proc", "mounts[0].type");
        CHECK(s->mounts[0].options.n == 0 && s->mounts[0].options.v == NULL,
              "mounts[0] no options");
        CHECK_STR(m->destination, "/mnt/data", "mounts[1].destination");
        CHECK(m->type == NULL, "mounts[1].type absent");
        CHECK_STR(m->source, "/srv/data", "mounts[1].source");
        CHECK(m->options.n == 2 && m->options.v[2] == NULL, "mounts[1].options");
        CHECK(m->n_uid_mappings == 1 && m->uid_mappings[0].host_id == 100000
                  && m->uid_mappings[0].size == 65536,
              "mounts[1].uidMappings");
        CHECK(m->n_gid_mappings == 1 && m->gid_mappings[0].host_id == 200000,
              "mounts[1].gidMappings");
    }
    const struct brig_hooks *h = &s->hooks;
    CHECK(h->prestart.n == 1 && h->prestart.items[0].has_timeout
              && h->prestart.items[0].timeout == 5,
          "hooks.prestart");
    CHECK(h->prestart.n == 1 && h->prestart.items[0].args.n == 2 && h->prestart.items[0].env.n == 1,
          "hooks.prestart args/env");
    CHECK(h->create_runtime.n == 2, "hooks.createRuntime");
    CHECK_STR(h->create_runtime.n == 2 ? h->create_runtime.items[1].path : NULL, "/bin/cr2",
              "hooks.createRuntime[1].path");
    CHECK(h->create_container.n == 1 && !h->create_container.items[0].has_timeout,
          "hooks.createContainer");
    CHECK(h->start_container.n == 1, "hooks.startContainer");
    CHECK(h->poststart.n == 1 && h->poststart.items[0].timeout == 1, "hooks.poststart");
    CHECK(h->poststop.n == 1, "hooks.poststop");
    CHECK(s->annotations.n == 2, "annotations count");
    CHECK_STR(s->annotations.n ? s->annotations.items[0].value : NULL, "sandbox",
              "annotations value");
}

static void test_full_linux(const struct brig_linux *l)
{
    CHECK(l->n_namespaces == 8, "linux.namespaces count");
    CHECK(l->n_namespaces == 8 && l->namespaces[7].type == BRIG_NS_TIME, "namespaces[7] time");
    CHECK(l->n_uid_mappings == 2 && l->uid_mappings[1].container_id == 1, "linux.uidMappings");
    CHECK(l->n_gid_mappings == 1 && l->gid_mappings[0].host_id == 1000, "linux.gidMappings");
    CHECK(l->time_monotonic.set && l->time_monotonic.secs == -86400
              && l->time_monotonic.nanosecs == 500,
          "timeOffsets.monotonic");
    CHECK(l->time_boottime.set && l->time_boottime.secs == 3600 && l->time_boottime.nanosecs == 0,
          "timeOffsets.boottime");
    CHECK(l->n_devices == 2, "linux.devices count");
    if (l->n_devices == 2) {
        const struct brig_device *d = &l->devices[0];
        CHECK(d->major == 10 && d->minor == 229 && d->has_file_mode && d->file_mode == 0666
                  && d->has_uid && d->has_gid,
              "devices[0]");
        CHECK_STR(l->devices[1].type, "p", "devices[1] fifo");
        CHECK(!l->devices[1].has_uid, "devices[1] no uid");
    }
    CHECK_STR(l->cgroups_path, "/brig/sb1", "linux.cgroupsPath");
    CHECK(l->sysctl.n == 2, "linux.sysctl");
    CHECK_STR(l->rootfs_propagation, "rslave", "linux.rootfsPropagation");
    CHECK(l->masked_paths.n == 2 && l->masked_paths.v[2] == NULL, "linux.maskedPaths");
    CHECK(l->readonly_paths.n == 1, "linux.readonlyPaths");
    CHECK_STR(l->mount_label, "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811", "mountLabel");
    CHECK(l->personality && l->personality->flags.n == 0, "linux.personality");
    CHECK_STR(l->personality ? l->personality->domain : NULL, "LINUX32", "personality.domain");
    CHECK(l->intel_rdt != NULL, "linux.intelRdt");
    if (l->intel_rdt) {
        CHECK_STR(l->intel_rdt->clos_id, "guaranteed", "intelRdt.closID");
        CHECK_STR(l->intel_rdt->l3_cache_schema, "L3:0=7f0", "intelRdt.l3CacheSchema");
        CHECK_STR(l->intel_rdt->mem_bw_schema, "MB:0=20", "intelRdt.memBwSchema");
    }
    const struct brig_seccomp *sc = l->seccomp;
    CHECK(sc != NULL, "linux.seccomp");
    if (sc) {
        CHECK_STR(sc->default_action, "SCMP_ACT_ERRNO", "seccomp.defaultAction");
        CHECK(sc->has_default_errno_ret && sc->default_errno_ret == 1, "seccomp.defaultErrnoRet");
        CHECK(sc->architectures.n == 2 && sc->flags.n == 1, "seccomp arch/flags");
        CHECK_STR(sc->listener_path, "/run/seccomp-agent.sock", "seccomp.listenerPath");
        CHECK_STR(sc->listener_metadata, "meta", "seccomp.listenerMetadata");
        CHECK(sc->n_syscalls == 2 && sc->syscalls[0].names.n == 2 && !sc->syscalls[0].has_errno_ret,
              "seccomp.syscalls[0]");
        if (sc->n_syscalls == 2) {
            const struct brig_seccomp_syscall *s1 = &sc->syscalls[1];
            CHECK(s1->has_errno_ret && s1->errno_ret == 38 && s1->n_args == 1,
                  "seccomp.syscalls[1]");
            CHECK(s1->n_args == 1 && s1->args[0].index == 0 && s1->args[0].value == UINT32_MAX
                      && s1->args[0].value_two == UINT64_MAX,
                  "seccomp args values");
            CHECK_STR(s1->n_args ? s1->args[0].op : NULL, "SCMP_CMP_MASKED_EQ", "seccomp args op");
        }
    }
}

static void test_full_resources(const struct brig_resources *r)
{
    CHECK(r->n_devices == 2 && !r->devices[0].allow && r->devices[0].type == NULL
              && !r->devices[0].has_major,
          "resources.devices[0] deny all");
    CHECK(r->n_devices == 2 && r->devices[1].allow && r->devices[1].has_minor
              && r->devices[1].minor == 229,
          "resources.devices[1]");
    const struct brig_memory *m = r->memory;
    CHECK(m && m->has_limit && m->limit == 4294967296LL && m->has_swap && m->swap == -1,
          "memory limit/swap");
    CHECK(m && m->has_reservation && m->has_kernel && m->has_kernel_tcp && m->has_swappiness
              && m->swappiness == 60,
          "memory reservation/kernel/swappiness");
    CHECK(m && m->has_disable_oom_killer && m->disable_oom_killer && m->has_use_hierarchy
              && !m->use_hierarchy && m->has_check_before_update && m->check_before_update,
          "memory booleans");
    const struct brig_cpu *c = r->cpu;
    CHECK(c && c->shares == 1024 && c->quota == 200000 && c->burst == 1000 && c->period == 100000,
          "cpu shares/quota/burst/period");
    CHECK(c && c->has_realtime_runtime && c->realtime_runtime == 950000 && c->has_realtime_period
              && c->has_idle && c->idle == 1,
          "cpu realtime/idle");
    CHECK_STR(c ? c->cpus : NULL, "0-3", "cpu.cpus");
    CHECK_STR(c ? c->mems : NULL, "0", "cpu.mems");
    CHECK(r->has_pids_limit && r->pids_limit == 512, "pids.limit");
    const struct brig_block_io *b = r->block_io;
    CHECK(b && b->has_weight && b->weight == 500 && b->leaf_weight == 300, "blockIO weight");
    CHECK(b && b->n_weight_devices == 2 && b->weight_devices[0].weight == 600
              && !b->weight_devices[1].has_weight,
          "blockIO.weightDevice");
    CHECK(b && b->throttle_read_bps.n == 1 && b->throttle_read_bps.items[0].rate == 104857600,
          "blockIO.throttleReadBpsDevice");
    CHECK(b && b->throttle_write_bps.n == 1 && b->throttle_read_iops.n == 1
              && b->throttle_write_iops.n == 2 && b->throttle_write_iops.items[1].minor == 16,
          "blockIO throttles");
    CHECK(r->n_hugepage_limits == 1 && r->hugepage_limits[0].limit == 209715200, "hugepageLimits");
    CHECK(r->has_net_class_id && r->net_class_id == 1048577 && r->n_net_priorities == 1
              && r->net_priorities[0].priority == 500,
          "network");
    CHECK(r->n_rdma == 1 && r->rdma[0].has_hca_handles && r->rdma[0].hca_objects == 10000, "rdma");
    CHECK_STR(r->n_rdma ? r->rdma[0].device : NULL, "mlx5_1", "rdma device name");
    CHECK(r->unified.n == 2, "unified");
    CHECK_STR(r->unified.n == 2 ? r->unified.items[1].value : NULL, "8:0 rbps=1048576",
              "unified value");
}

static void test_full(void)
{
    char *path = fixture_path("full.json");
    struct brig_spec *s = NULL;
    brig_error_t err = NULL;
    int r = brig_spec_load(path, &s, &err);
    CHECK(r == 0, "load full.json");
    if (r < 0) {
        printf("#   %s\n", err->msg);
        brig_error_release(&err);
        free(path);
        return;
    }
    test_full_top(s);
    CHECK(s->process != NULL, "process present");
    if (s->process)
        test_full_process(s->process);
    CHECK(s->linux_ != NULL, "linux present");
    if (s->linux_) {
        test_full_linux(s->linux_);
        CHECK(s->linux_->resources != NULL, "resources present");
        if (s->linux_->resources)
            test_full_resources(s->linux_->resources);
    }
    brig_spec_free(s);
    free(path);
}

static void test_required(void)
{
    expect_error("{\"root\": {\"path\": \"r\"}}", "config.json: missing ociVersion");
    expect_error("{\"ociVersion\": \"1.2.0\"}", "config.json: missing root");
    expect_error("{\"ociVersion\": \"1.2.0\", \"root\": {}}", "config.json: missing root.path");
    expect_error("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"\"}}",
                 "config.json: root.path: must not be empty");
    expect_error("{" MINIMAL ", \"process\": {\"cwd\": \"/\"}}",
                 "config.json: missing process.args");
    expect_error("{" MINIMAL ", \"process\": {\"args\": []}}",
                 "config.json: process.args: must not be empty");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"cwd\": \"tmp\"}}",
                 "config.json: process.cwd: must be an absolute path");
    expect_error("{" MINIMAL ", \"mounts\": [{\"type\": \"proc\"}]}",
                 "config.json: missing mounts[0].destination");
    expect_error("{" MINIMAL ", \"mounts\": [{\"destination\": \"/a\"}, {\"source\": \"x\"}]}",
                 "config.json: missing mounts[1].destination");
    expect_error("{" MINIMAL ", \"linux\": {\"namespaces\": [{\"path\": \"/x\"}]}}",
                 "config.json: missing linux.namespaces[0].type");
    expect_error("{" MINIMAL ", \"hooks\": {\"poststop\": [{\"args\": []}]}}",
                 "config.json: missing hooks.poststop[0].path");
    expect_error("{" MINIMAL ", \"linux\": {\"seccomp\": {\"syscalls\": []}}}",
                 "config.json: missing linux.seccomp.defaultAction");
    expect_error("{" MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\","
                 " \"syscalls\": [{\"names\": [\"read\"]}]}}}",
                 "config.json: missing linux.seccomp.syscalls[0].action");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"pids\": {}}}}",
                 "config.json: missing linux.resources.pids.limit");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"devices\": [{\"access\": \"r\"}]}}}",
                 "config.json: missing linux.resources.devices[0].allow");
    expect_error("{" MINIMAL ", \"linux\": {\"uidMappings\": [{\"containerID\": 0, \"size\": 1}]}}",
                 "config.json: missing linux.uidMappings[0].hostID");
    expect_error("{" MINIMAL ", \"linux\": {\"devices\": [{\"type\": \"c\", \"path\": \"/dev/x\","
                 " \"major\": 1}]}}",
                 "config.json: missing linux.devices[0].minor");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"rlimits\": [{\"type\":"
                 " \"RLIMIT_NOFILE\", \"hard\": 1}]}}",
                 "config.json: missing process.rlimits[0].soft");
}

static void test_wrong_types(void)
{
    expect_error("{\"ociVersion\": 1, \"root\": {\"path\": \"r\"}}",
                 "config.json: ociVersion: expected a string");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\", 1]}}",
                 "config.json: process.args[1]: expected a string");
    expect_error("{" MINIMAL ", \"process\": {\"args\": \"sh\"}}",
                 "config.json: process.args: expected an array");
    expect_error("{" MINIMAL ", \"process\": []}", "config.json: process: expected an object");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"terminal\": \"yes\"}}",
                 "config.json: process.terminal: expected a boolean");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"user\": {\"uid\": \"0\"}}}",
                 "config.json: process.user.uid: expected an integer");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"user\": {\"additionalGids\":"
                 " [1, \"2\"]}}}",
                 "config.json: process.user.additionalGids[1]: expected an integer");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"memory\": {\"limit\": \"1G\"}}}}",
                 "config.json: linux.resources.memory.limit: expected an integer");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"memory\": {\"limit\": 1.5}}}}",
                 "config.json: linux.resources.memory.limit: expected an integer");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"cpu\": {\"cpus\": 3}}}}",
                 "config.json: linux.resources.cpu.cpus: expected a string");
    expect_error("{" MINIMAL ", \"annotations\": {\"a\": \"b\", \"c\": 1}}",
                 "config.json: annotations.c: expected a string");
    expect_error("{" MINIMAL ", \"mounts\": [\"/proc\"]}",
                 "config.json: mounts[0]: expected an object");
    expect_error("{" MINIMAL ", \"linux\": {\"sysctl\": []}}",
                 "config.json: linux.sysctl: expected an object");
    expect_error("{" MINIMAL
                 ", \"linux\": {\"resources\": {\"rdma\": {\"mlx\": {\"hcaHandles\": true}}}}}",
                 "config.json: linux.resources.rdma.mlx.hcaHandles: expected an integer");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"rdma\": {\"mlx\": 3}}}}",
                 "config.json: linux.resources.rdma.mlx: expected an object");
    expect_error(
        "{" MINIMAL ", \"linux\": {\"resources\": {\"blockIO\": {\"throttleReadBpsDevice\":"
        " [{\"major\": 8, \"minor\": 0, \"rate\": -1}]}}}}",
        "config.json: linux.resources.blockIO.throttleReadBpsDevice[0].rate: -1 is out of range");
    expect_error("{" MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\","
                 " \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\","
                 " \"args\": [{\"index\": 0, \"value\": 1, \"op\": 7}]}]}}}",
                 "config.json: linux.seccomp.syscalls[0].args[0].op: expected a string");
    expect_error("{" MINIMAL
                 ", \"hooks\": {\"prestart\": [{\"path\": \"/bin/true\", \"timeout\": 0}]}}",
                 "config.json: hooks.prestart[0].timeout: must be greater than zero");
    expect_error("{" MINIMAL
                 ", \"hooks\": {\"createRuntime\": [{\"path\": \"/x\", \"timeout\": -3}]}}",
                 "config.json: hooks.createRuntime[0].timeout: must be greater than zero");
    expect_error("{" MINIMAL ", \"hooks\": {\"prestart\": [{\"path\": \"true\"}]}}",
                 "config.json: hooks.prestart[0].path: must be an absolute path");
    expect_error("{" MINIMAL
                 ", \"linux\": {\"timeOffsets\": {\"boottime\": {\"nanosecs\": 1000000000}}}}",
                 "config.json: linux.timeOffsets.boottime.nanosecs: 1000000000 is out of range");
    expect_error("{" MINIMAL ", \"linux\": {\"rootfsPropagation\": \"sideways\"}}",
                 "config.json: linux.rootfsPropagation: unknown propagation `sideways`");
    expect_error("{" MINIMAL
                 ", \"linux\": {\"devices\": [{\"type\": \"x\", \"path\": \"/dev/x\"}]}}",
                 "config.json: linux.devices[0].type: must be one of c, b, u, p");
    expect_error(
        "{" MINIMAL ", \"linux\": {\"resources\": {\"devices\": [{\"allow\": true,"
        " \"access\": \"rwx\"}]}}}",
        "config.json: linux.resources.devices[0].access: must be a combination of r, w and m");
    expect_error("{" MINIMAL ", \"linux\": {\"personality\": {\"domain\": \"BSD\"}}}",
                 "config.json: linux.personality.domain: must be LINUX or LINUX32");
    expect_error("[1, 2]", "config.json: expected a JSON object");
    expect_error("{" MINIMAL ", \"annotations\": {\"a\\nb\": 1}}",
                 "config.json: annotations.a b: expected a string");
    expect_error("{" MINIMAL ", \"linux\": {\"namespaces\": [{\"type\": \"p\\nid\"}]}}",
                 "linux.namespaces[0].type: unknown namespace type `p id`");
}

static void test_namespaces(void)
{
    expect_error("{" MINIMAL
                 ", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"bogus\"}]}}",
                 "config.json: linux.namespaces[1].type: unknown namespace type `bogus`");
    expect_error("{" MINIMAL
                 ", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"ipc\"},"
                 " {\"type\": \"pid\", \"path\": \"/proc/1/ns/pid\"}]}}",
                 "config.json: linux.namespaces[2].type: namespace type `pid` listed twice, with "
                 "different paths");
    struct brig_spec *twice = parse_ok(
        "{" MINIMAL ", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\","
        " \"path\": \"/proc/1/ns/net\"}, {\"type\": \"pid\"}, {\"type\": \"network\", \"path\":"
        " \"/proc/1/ns/net\"}, {\"type\": \"ipc\"}]}}",
        "a type listed twice, the same both times");
    CHECK(twice && twice->linux_->n_namespaces == 3
              && twice->linux_->namespaces[2].type == BRIG_NS_IPC
              && strcmp(twice->linux_->namespaces[1].path, "/proc/1/ns/net") == 0,
          "is one namespace");
    brig_spec_free(twice);
    expect_error("{" MINIMAL
                 ", \"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"netns\"}]}}",
                 "config.json: linux.namespaces[0].path: must be an absolute path");

    static const char *const names[] = { "pid", "network", "mount",  "ipc",
                                         "uts", "user",    "cgroup", "time" };
    for (int t = 0; t < BRIG_NS_COUNT; t++)
        CHECK_STR(brig_ns_type_name((enum brig_ns_type) t), names[t], names[t]);
    CHECK(brig_ns_type_name(BRIG_NS_COUNT) == NULL, "ns name out of range is NULL");

    struct brig_spec *s = parse_ok("{" MINIMAL ", \"linux\": {\"namespaces\": [{\"type\": \"uts\"},"
                                   " {\"type\": \"network\", \"path\": \"/run/netns/x\"}]}}",
                                   "parse namespaces");
    if (s) {
        const struct brig_namespace *ns = brig_spec_namespace(s, BRIG_NS_NETWORK);
        CHECK(ns && ns->type == BRIG_NS_NETWORK, "lookup network");
        CHECK_STR(ns ? ns->path : NULL, "/run/netns/x", "network path");
        ns = brig_spec_namespace(s, BRIG_NS_UTS);
        CHECK(ns && ns->path == NULL, "uts new namespace");
        CHECK(brig_spec_namespace(s, BRIG_NS_PID) == NULL, "pid not requested");
        brig_spec_free(s);
    }
    s = parse_ok("{" MINIMAL "}", "parse without linux");
    if (s) {
        CHECK(s->linux_ == NULL && brig_spec_namespace(s, BRIG_NS_PID) == NULL,
              "no linux, no namespace");
        brig_spec_free(s);
    }
}

static void test_rlimits(void)
{
    static const struct {
        const char *name;
        int resource;
    } all[] = {
        { "RLIMIT_AS", RLIMIT_AS },
        { "RLIMIT_CORE", RLIMIT_CORE },
        { "RLIMIT_CPU", RLIMIT_CPU },
        { "RLIMIT_DATA", RLIMIT_DATA },
        { "RLIMIT_FSIZE", RLIMIT_FSIZE },
        { "RLIMIT_LOCKS", RLIMIT_LOCKS },
        { "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
        { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
        { "RLIMIT_NICE", RLIMIT_NICE },
        { "RLIMIT_NOFILE", RLIMIT_NOFILE },
        { "RLIMIT_NPROC", RLIMIT_NPROC },
        { "RLIMIT_RSS", RLIMIT_RSS },
        { "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
        { "RLIMIT_RTTIME", RLIMIT_RTTIME },
        { "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
        { "RLIMIT_STACK", RLIMIT_STACK },
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        char *json = NULL;
        if (asprintf(&json,
                     "{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"rlimits\":"
                     " [{\"type\": \"%s\", \"hard\": 7, \"soft\": 3}]}}",
                     all[i].name)
            < 0)
            abort();
        struct brig_spec *s = parse_ok(json, all[i].name);
        CHECK(s && s->process->n_rlimits == 1 && s->process->rlimits[0].resource == all[i].resource
                  && s->process->rlimits[0].soft == 3,
              "rlimit resolves");
        brig_spec_free(s);
        free(json);
    }
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"rlimits\": [{\"type\":"
                 " \"RLIMIT_BOGUS\", \"hard\": 1, \"soft\": 1}]}}",
                 "config.json: process.rlimits[0].type: unknown rlimit `RLIMIT_BOGUS`");
    expect_error(
        "{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_CPU\","
        " \"hard\": 1, \"soft\": 1}, {\"type\": \"RLIMIT_CPU\", \"hard\": 2, \"soft\": 2}]}}",
        "config.json: process.rlimits[1].type: duplicate rlimit `RLIMIT_CPU`");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"rlimits\": [{\"type\":"
                 " \"RLIMIT_NOFILE\", \"hard\": 10, \"soft\": 11}]}}",
                 "config.json: process.rlimits[0].soft: greater than hard limit");
}

static void test_nulls(void)
{
    struct brig_spec *s =
        parse_ok("{" MINIMAL
                 ", \"hostname\": null, \"process\": null, \"mounts\": null, \"hooks\": null,"
                 " \"annotations\": null, \"linux\": {\"resources\": null, \"seccomp\": null,"
                 " \"namespaces\": null, \"maskedPaths\": null, \"cgroupsPath\": null}}",
                 "nulls accepted");
    if (s) {
        CHECK(s->hostname == NULL && s->process == NULL && s->n_mounts == 0
                  && s->annotations.n == 0,
              "top-level nulls are absent");
        CHECK(s->linux_ && s->linux_->resources == NULL && s->linux_->seccomp == NULL
                  && s->linux_->n_namespaces == 0 && s->linux_->masked_paths.v == NULL
                  && s->linux_->cgroups_path == NULL,
              "linux nulls are absent");
        brig_spec_free(s);
    }
    s = parse_ok("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"user\": {\"uid\": null,"
                 " \"umask\": null}, \"oomScoreAdj\": null, \"capabilities\": null}}",
                 "process nulls accepted");
    if (s) {
        CHECK(s->process->user.uid == 0 && !s->process->user.has_umask
                  && !s->process->has_oom_score_adj && s->process->capabilities == NULL,
              "process nulls are absent");
        CHECK(s->process->env.n == 0 && s->process->env.v == NULL && s->process->cwd == NULL,
              "absent env and cwd");
        brig_spec_free(s);
    }
    expect_error("{\"ociVersion\": null, \"root\": {\"path\": \"r\"}}",
                 "config.json: missing ociVersion");
    expect_error("{\"ociVersion\": \"1\", \"root\": null}", "config.json: missing root");
    expect_error("{" MINIMAL ", \"process\": {\"args\": null}}",
                 "config.json: missing process.args");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [null]}}",
                 "config.json: process.args[0]: expected a string");
}

static void test_ranges(void)
{
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"user\": {\"uid\": -1}}}",
                 "config.json: process.user.uid: -1 is out of range [0, 4294967295]");
    expect_error("{" MINIMAL
                 ", \"process\": {\"args\": [\"sh\"], \"user\": {\"uid\": 8589934592}}}",
                 "config.json: process.user.uid: 8589934592 is out of range");
    expect_error("{" MINIMAL
                 ", \"process\": {\"args\": [\"sh\"], \"user\": {\"gid\": 4294967296}}}",
                 "config.json: process.user.gid: 4294967296 is out of range");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"oomScoreAdj\": 1001}}",
                 "config.json: process.oomScoreAdj: 1001 is out of range [-1000, 1000]");
    expect_error("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"rlimits\": [{\"type\":"
                 " \"RLIMIT_NOFILE\", \"hard\": 18446744073709551616, \"soft\": 1}]}}",
                 "config.json: process.rlimits[0].hard: 18446744073709551616 is out of range");
    expect_error("{" MINIMAL
                 ", \"linux\": {\"resources\": {\"memory\": {\"limit\": 9223372036854775808}}}}",
                 "config.json: linux.resources.memory.limit: 9223372036854775808 is out of range");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"blockIO\": {\"weight\": 65536}}}}",
                 "config.json: linux.resources.blockIO.weight: 65536 is out of range [0, 65535]");
    expect_error("{" MINIMAL ", \"linux\": {\"resources\": {\"memory\": {\"swappiness\": 101}}}}",
                 "config.json: linux.resources.memory.swappiness: 101 is out of range [0, 100]");
    expect_error("{" MINIMAL
                 ", \"process\": {\"args\": [\"sh\"], \"scheduler\": {\"policy\": \"SCHED_RR\","
                 " \"nice\": 2147483648}}}",
                 "config.json: process.scheduler.nice: 2147483648 is out of range");
    expect_error(
        "{" MINIMAL
        ", \"linux\": {\"uidMappings\": [{\"containerID\": 0, \"hostID\": 0, \"size\": 0}]}}",
        "config.json: linux.uidMappings[0].size: must be greater than zero");

    struct brig_spec *s =
        parse_ok("{" MINIMAL ", \"process\": {\"args\": [\"sh\"], \"user\": {\"uid\":"
                 " 4294967295, \"gid\": -0}}, \"linux\": {\"resources\": {\"memory\":"
                 " {\"limit\": -9223372036854775808, \"swap\": 9223372036854775807}}}}",
                 "range edges accepted");
    if (s) {
        CHECK(s->process->user.uid == UINT32_MAX && s->process->user.gid == 0, "uid max, gid -0");
        CHECK(s->linux_->resources->memory->limit == INT64_MIN
                  && s->linux_->resources->memory->swap == INT64_MAX,
              "int64 edges");
        brig_spec_free(s);
    }
}

static void test_malformed(void)
{
    expect_error("{\"ociVersion\": \"1.2.0\",",
                 "config.json: invalid JSON: parse error: premature EOF");
    expect_error(
        "{\"ociVersion\": \n x}",
        "config.json: invalid JSON: lexical error: invalid char in json text near `{\"ociVersion\":   x}`");
    expect_error("{\"ociVersion\": \"1\"} trailing",
                 "config.json: invalid JSON: parse error: trailing garbage");
    expect_error("", "config.json: invalid JSON");
    static const char with_nul[] = "{\"ociVersion\": \"1\"}\0{}";
    struct brig_spec *s = NULL;
    brig_error_t err = NULL;
    int r = brig_spec_parse(with_nul, sizeof with_nul - 1, "config.json", &s, &err);
    CHECK(r < 0 && s == NULL && err && strstr(err->msg, "invalid JSON: NUL byte"),
          "embedded NUL rejected");
    brig_error_release(&err);
    /* Unterminated input: only len bytes may be read. */
    const char *buf = "{" MINIMAL "}garbage";
    r = brig_spec_parse(buf, strlen("{" MINIMAL "}"), "x.json", &s, &err);
    CHECK(r == 0 && s != NULL, "parse honours len");
    brig_spec_free(s);
    /* Found by tests/fuzz/fuzz_spec: deep nesting overflowed the stack in
     * yajl_tree_free(). Refused up front, for every parser. */
    size_t n = 200000;
    char *deep = malloc(2 * n + 32);
    if (deep) {
        int k = sprintf(deep, "{\"process\": ");
        memset(deep + k, '[', n);
        memset(deep + k + n, ']', n);
        strcpy(deep + k + 2 * n, "}");
        r = brig_spec_parse(deep, strlen(deep), "config.json", &s, &err);
        CHECK(r < 0 && s == NULL && err
                  && strstr(err->msg, "config.json: invalid JSON: nested more"
                                      " than 64 levels deep at byte 75"),
              "deep nesting refused");
        brig_error_release(&err);
        struct brig_process *p = NULL;
        r = brig_process_parse(deep, strlen(deep), "process.json", &p, &err);
        CHECK(r < 0 && p == NULL && err && strstr(err->msg, "nested more than 64"),
              "deep nesting refused in a process");
        brig_error_release(&err);
        free(deep);
    }
    /* Brackets inside strings are not nesting. */
    char many[300];
    memset(many, '[', sizeof many - 1);
    many[sizeof many - 1] = '\0';
    char *doc = NULL;
    if (asprintf(&doc, "{" MINIMAL ", \"hostname\": \"%s\\\"%s\"}", many, many) > 0) {
        s = parse_ok(doc, "brackets in strings");
        brig_spec_free(s);
        free(doc);
    }
}

static void test_forward_compat(void)
{
    struct brig_spec *s =
        parse_ok("{" MINIMAL ", \"hostname\": \"a\", \"hostname\": \"b\","
                 " \"future\": {\"x\": [1]}, \"linux\": {\"netDevices\": {\"eth0\": {}}}}",
                 "unknown fields ignored");
    if (s) {
        CHECK_STR(s->hostname, "b", "duplicate key: last wins");
        brig_spec_free(s);
    }
    s = parse_ok("{" MINIMAL ", \"annotations\": {\"a\": \"1\", \"b\": null, \"a\": \"2\"}}",
                 "annotations with null and duplicate");
    if (s) {
        CHECK(s->annotations.n == 1, "null entry dropped, duplicate merged");
        CHECK_STR(s->annotations.n ? s->annotations.items[0].value : NULL, "2",
                  "duplicate entry: last wins");
        brig_spec_free(s);
    }
    brig_error_t err = NULL;
    int r = brig_spec_parse("{\"root\": {}}", 12, "/b/c.json", &s, &err);
    CHECK(r < 0 && err && strncmp(err->msg, "/b/c.json: ", 11) == 0, "origin names the file");
    brig_error_release(&err);
}

static void test_process_parse(void)
{
    static const char good[] = "{\"args\": [\"ls\", \"-l\"], \"cwd\": \"/tmp\", \"env\": [],"
                               " \"user\": {\"uid\": 5}, \"terminal\": false}";
    struct brig_process *p = NULL;
    brig_error_t err = NULL;
    int r = brig_process_parse(good, sizeof good - 1, "process.json", &p, &err);
    CHECK(r == 0 && p != NULL, "process parse");
    if (p) {
        CHECK(p->args.n == 2 && p->args.v[2] == NULL && p->user.uid == 5, "process fields");
        CHECK(p->env.n == 0 && p->env.v == NULL, "empty env is NULL");
        brig_process_free(p);
    }
    static const char bad[] = "{\"args\": [\"ls\", 3]}";
    r = brig_process_parse(bad, sizeof bad - 1, "process.json", &p, &err);
    CHECK(r < 0 && p == NULL && err, "process parse error");
    CHECK_STR(err ? err->msg : NULL, "process.json: args[1]: expected a string",
              "process error path");
    brig_error_release(&err);
    r = brig_process_parse("{}", 2, "process.json", &p, &err);
    CHECK_STR(err ? err->msg : NULL, "process.json: missing args", "process missing args");
    brig_error_release(&err);
}

static void test_load(void)
{
    char path[] = "/tmp/brig-spec-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    static const char doc[] = "{" MINIMAL ", \"process\": {\"args\": [\"sh\", 2]}}";
    CHECK(write(fd, doc, sizeof doc - 1) == (ssize_t) (sizeof doc - 1), "write temp spec");
    close(fd);
    struct brig_spec *s = NULL;
    brig_error_t err = NULL;
    int r = brig_spec_load(path, &s, &err);
    CHECK(r < 0 && s == NULL && err && strncmp(err->msg, path, strlen(path)) == 0
              && strstr(err->msg, ": process.args[1]: expected a string"),
          "load reports the path as origin");
    brig_error_release(&err);
    unlink(path);
    r = brig_spec_load(path, &s, &err);
    CHECK(r < 0 && err && strstr(err->msg, path) && strstr(err->msg, "No such file or directory"),
          "load of a missing file");
    brig_error_release(&err);
    r = brig_spec_load("/tmp", &s, &err);
    CHECK(r < 0 && err && strstr(err->msg, "not a regular file"), "load of a directory");
    brig_error_release(&err);
}

static const struct brig_mount *find_mount(const struct brig_spec *s, const char *dest)
{
    for (size_t i = 0; i < s->n_mounts; i++)
        if (strcmp(s->mounts[i].destination, dest) == 0)
            return &s->mounts[i];
    return NULL;
}

static bool has_option(const struct brig_mount *m, const char *opt)
{
    for (size_t i = 0; m && i < m->options.n; i++)
        if (strcmp(m->options.v[i], opt) == 0)
            return true;
    return false;
}

static void test_default(void)
{
    char *json = NULL;
    brig_error_t err = NULL;
    CHECK(brig_spec_default_json(false, &json, &err) == 0 && json, "default json");
    struct brig_spec *s = json ? parse_ok(json, "default round-trips") : NULL;
    free(json);
    if (s) {
        CHECK_STR(s->oci_version, "1.2.0", "default ociVersion");
        CHECK(s->process && s->process->terminal && s->process->user.uid == 0
                  && s->process->no_new_privileges,
              "default process");
        CHECK(s->process && s->process->args.n == 1 && s->process->env.n == 2, "default args/env");
        CHECK_STR(s->process ? s->process->cwd : NULL, "/", "default cwd");
        CHECK(s->process && s->process->capabilities && s->process->capabilities->bounding.n == 3
                  && s->process->capabilities->ambient.n == 0,
              "default capabilities");
        CHECK(s->process && s->process->n_rlimits == 1
                  && s->process->rlimits[0].resource == RLIMIT_NOFILE
                  && s->process->rlimits[0].hard == 1024,
              "default rlimit");
        CHECK(s->root && s->root->readonly, "default root readonly");
        CHECK_STR(s->root ? s->root->path : NULL, "rootfs", "default root path");
        CHECK_STR(s->hostname, "brig", "default hostname");
        CHECK(s->n_mounts == 7, "default mounts");
        const struct brig_mount *sys = find_mount(s, "/sys");
        CHECK_STR(sys ? sys->type : NULL, "sysfs", "default /sys is sysfs");
        CHECK(has_option(find_mount(s, "/dev/pts"), "gid=5"), "default devpts gid=5");
        CHECK(s->linux_ && s->linux_->resources && s->linux_->resources->n_devices == 1
                  && !s->linux_->resources->devices[0].allow,
              "default deny-all device rule");
        CHECK(brig_spec_namespace(s, BRIG_NS_NETWORK) && brig_spec_namespace(s, BRIG_NS_CGROUP)
                  && brig_spec_namespace(s, BRIG_NS_MOUNT) && !brig_spec_namespace(s, BRIG_NS_USER),
              "default namespaces");
        CHECK(s->linux_ && s->linux_->n_namespaces == 6, "default namespace count");
        CHECK(s->linux_ && s->linux_->masked_paths.n >= 10 && s->linux_->readonly_paths.n == 5,
              "default masked/readonly paths");
        brig_spec_free(s);
    }

    CHECK(brig_spec_default_json(true, &json, &err) == 0 && json, "rootless default json");
    s = json ? parse_ok(json, "rootless default round-trips") : NULL;
    free(json);
    if (s) {
        CHECK(brig_spec_namespace(s, BRIG_NS_USER) != NULL, "rootless has user namespace");
        CHECK(brig_spec_namespace(s, BRIG_NS_NETWORK) == NULL, "rootless has no network namespace");
        CHECK(s->linux_->n_uid_mappings == 1 && s->linux_->uid_mappings[0].host_id == geteuid()
                  && s->linux_->uid_mappings[0].container_id == 0
                  && s->linux_->uid_mappings[0].size == 1,
              "rootless uid mapping");
        CHECK(s->linux_->n_gid_mappings == 1 && s->linux_->gid_mappings[0].host_id == getegid(),
              "rootless gid mapping");
        CHECK(s->linux_->resources == NULL, "rootless has no cgroup resources");
        const struct brig_mount *sys = find_mount(s, "/sys");
        CHECK(sys && has_option(sys, "rbind") && has_option(sys, "ro"), "rootless binds /sys");
        CHECK_STR(sys ? sys->source : NULL, "/sys", "rootless /sys source");
        const struct brig_mount *pts = find_mount(s, "/dev/pts");
        CHECK(pts && !has_option(pts, "gid=5") && has_option(pts, "newinstance"),
              "rootless devpts without gid=");
        brig_spec_free(s);
    }
}

int main(void)
{
    test_full();
    test_required();
    test_wrong_types();
    test_namespaces();
    test_rlimits();
    test_nulls();
    test_ranges();
    test_malformed();
    test_forward_compat();
    test_process_parse();
    test_load();
    test_default();
    return unit_done();
}
