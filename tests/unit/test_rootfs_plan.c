/* The rootfs plan, without root: config.json → the ordered steps the init
 * takes (propagation, rootfs bind, each mount with its flags, /dev, pivot,
 * read-only and masked paths, read-only root, final propagation), and each
 * config error refused by the planner with the field it is in. Last, the
 * runtime's other check before the clone, of destinations in the rootfs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rootfs/plan.h"
#include "unit.h"

#define ROOTFS "/var/lib/brig/c1/rootfs"

static struct brig_spec *parse_json(const char *json)
{
    struct brig_spec *spec = NULL;
    brig_error_t err = NULL;
    if (brig_spec_parse(json, strlen(json), "config.json", &spec, &err) < 0) {
        printf("# parse: %s\n", err->msg);
        brig_error_release(&err);
    }
    return spec;
}

/* The configs below quote with ' for legibility; JSON wants ". */
static struct brig_spec *parse(const char *quoted)
{
    char *json = strdup(quoted);
    for (char *p = json; p && *p; p++)
        if (*p == '\'')
            *p = '"';
    struct brig_spec *spec = json ? parse_json(json) : NULL;
    free(json);
    return spec;
}

/* A config.json with a mount namespace, the given mounts and linux fields. */
static struct brig_spec *parse_config(const char *root, const char *mounts, const char *linux_)
{
    char *json = NULL;
    if (asprintf(&json,
                 "{'ociVersion': '1.2.0', 'root': %s, 'mounts': [%s],"
                 " 'linux': {'namespaces': [{'type': 'mount'}]%s%s}}",
                 root, mounts, *linux_ ? ", " : "", linux_)
        < 0)
        return NULL;
    struct brig_spec *spec = parse(json);
    free(json);
    return spec;
}

static struct brig_rootfs_plan *plan_of(const struct brig_spec *spec, bool no_pivot)
{
    struct brig_rootfs_plan *plan = NULL;
    brig_error_t err = NULL;
    if (spec == NULL || brig_rootfs_plan_build(spec, ROOTFS, no_pivot, &plan, &err) < 0) {
        printf("# plan: %s\n", err ? err->msg : "no spec");
        brig_error_release(&err);
        return NULL;
    }
    return plan;
}

/* The plan as text, a line a step: "<phase> <kind> <path>", so a test
 * reads the order the init will follow. */
static char *render(const struct brig_rootfs_plan *plan)
{
    static const char phases[] = { 'P', 'V', 'F' };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (size_t i = 0; plan && f && i < plan->n_steps; i++) {
        const struct brig_rootfs_step *s = &plan->steps[i];
        fprintf(f, "%c %s %s\n", phases[s->phase], brig_rootfs_step_name(s->kind),
                s->path ? s->path : "-");
    }
    if (f)
        fclose(f);
    return text;
}

/* The i-th step of a kind (0 for the first), or NULL. */
static const struct brig_rootfs_step *nth(const struct brig_rootfs_plan *plan,
                                          enum brig_rootfs_step_kind kind, size_t n)
{
    for (size_t i = 0; plan && i < plan->n_steps; i++)
        if (plan->steps[i].kind == kind && n-- == 0)
            return &plan->steps[i];
    return NULL;
}

static const struct brig_rootfs_step *mount_at(const struct brig_rootfs_plan *plan,
                                               const char *path)
{
    for (size_t i = 0; plan && i < plan->n_steps; i++)
        if (plan->steps[i].kind == BRIG_STEP_MOUNT && strcmp(plan->steps[i].path, path) == 0)
            return &plan->steps[i];
    return NULL;
}

static size_t count(const struct brig_rootfs_plan *plan, enum brig_rootfs_step_kind kind)
{
    size_t n = 0;
    while (nth(plan, kind, n))
        n++;
    return n;
}

static bool data_is(const struct brig_rootfs_step *s, const char *want)
{
    if (s == NULL)
        return false;
    if (want == NULL)
        return s->mount.data == NULL;
    return s->mount.data && strcmp(s->mount.data, want) == 0;
}

/* ---- the default `brig spec` ---- */

static const char default_plan[] = "P propagate-host-root /\n"
                                   "P bind-rootfs " ROOTFS "\n"
                                   "P mount /proc\n"
                                   "P mount /dev\n"
                                   "P mount /dev/pts\n"
                                   "P mount /dev/shm\n"
                                   "P mount /dev/mqueue\n"
                                   "P mount /sys\n"
                                   "P mount /sys/fs/cgroup\n"
                                   "P device /dev/null\n"
                                   "P device /dev/zero\n"
                                   "P device /dev/full\n"
                                   "P device /dev/random\n"
                                   "P device /dev/urandom\n"
                                   "P device /dev/tty\n"
                                   "P dev-link /dev/ptmx\n"
                                   "P dev-link /dev/fd\n"
                                   "P dev-link /dev/stdin\n"
                                   "P dev-link /dev/stdout\n"
                                   "P dev-link /dev/stderr\n"
                                   "P dev-shm /dev/shm\n"
                                   "V pivot_root " ROOTFS "\n"
                                   "F readonly-path /proc/bus\n"
                                   "F readonly-path /proc/fs\n"
                                   "F readonly-path /proc/irq\n"
                                   "F readonly-path /proc/sys\n"
                                   "F readonly-path /proc/sysrq-trigger\n"
                                   "F mask-path /proc/acpi\n"
                                   "F mask-path /proc/asound\n"
                                   "F mask-path /proc/kcore\n"
                                   "F mask-path /proc/keys\n"
                                   "F mask-path /proc/latency_stats\n"
                                   "F mask-path /proc/timer_list\n"
                                   "F mask-path /proc/timer_stats\n"
                                   "F mask-path /proc/sched_debug\n"
                                   "F mask-path /sys/firmware\n"
                                   "F mask-path /proc/scsi\n"
                                   "F mask-path /sys/devices/virtual/powercap\n"
                                   "F readonly-root /\n";

static void check_default_mounts(const struct brig_rootfs_plan *plan)
{
    const struct brig_rootfs_step *proc = mount_at(plan, "/proc");
    CHECK(proc && proc->mount_kind == BRIG_MOUNT_PROC && proc->mount.flags == 0
              && data_is(proc, NULL) && strcmp(proc->source, "proc") == 0,
          "default: /proc is a plain proc");
    const struct brig_rootfs_step *dev = mount_at(plan, "/dev");
    CHECK(dev && dev->mount_kind == BRIG_MOUNT_TMPFS
              && dev->mount.flags == (MS_NOSUID | MS_STRICTATIME) && !dev->mount.copy_up,
          "default: /dev is a nosuid,strictatime tmpfs");
    CHECK(data_is(dev, "mode=755,size=65536k"), "default: /dev data");
    const struct brig_rootfs_step *pts = mount_at(plan, "/dev/pts");
    CHECK(pts && pts->mount_kind == BRIG_MOUNT_DEVPTS && pts->mount.flags == (MS_NOSUID | MS_NOEXEC)
              && data_is(pts, "newinstance,ptmxmode=0666,mode=0620,gid=5"),
          "default: /dev/pts is devpts, nosuid,noexec, with its data");
    const struct brig_rootfs_step *shm = mount_at(plan, "/dev/shm");
    CHECK(shm && shm->mount_kind == BRIG_MOUNT_TMPFS && strcmp(shm->source, "shm") == 0
              && shm->mount.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV),
          "default: /dev/shm is a tmpfs named shm");
    const struct brig_rootfs_step *mq = mount_at(plan, "/dev/mqueue");
    CHECK(mq && mq->mount_kind == BRIG_MOUNT_MQUEUE, "default: /dev/mqueue is mqueue");
    const struct brig_rootfs_step *sys = mount_at(plan, "/sys");
    CHECK(sys && sys->mount_kind == BRIG_MOUNT_SYSFS
              && sys->mount.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY),
          "default: /sys is a read-only sysfs");
    const struct brig_rootfs_step *cg = mount_at(plan, "/sys/fs/cgroup");
    CHECK(cg && cg->mount_kind == BRIG_MOUNT_CGROUP
              && cg->mount.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME | MS_RDONLY)
              && strcmp(cg->fstype, "cgroup") == 0,
          "default: type cgroup plans a cgroup mount");
    CHECK(cg && cg->cgroupns, "default: the cgroup mount knows of the cgroup namespace");
    /* Without one, the init binds its directories instead of mounting. */
    struct brig_spec *no_ns =
        parse_config("{'path': 'rootfs'}",
                     "{'destination': '/sys/fs/cgroup', 'type': 'cgroup', 'source': 'cgroup'}", "");
    struct brig_rootfs_plan *no_ns_plan = plan_of(no_ns, false);
    brig_spec_free(no_ns);
    cg = mount_at(no_ns_plan, "/sys/fs/cgroup");
    CHECK(cg && cg->mount_kind == BRIG_MOUNT_CGROUP && !cg->cgroupns,
          "no cgroup namespace: the cgroup mount knows it has none");
    brig_rootfs_plan_free(no_ns_plan);
}

static void test_default_spec(void)
{
    char *json = NULL;
    brig_error_t err = NULL;
    CHECK(brig_spec_default_json(false, &json, &err) == 0, "default spec");
    struct brig_spec *spec = json ? parse_json(json) : NULL;
    free(json);
    struct brig_rootfs_plan *plan = plan_of(spec, false);
    /* The plan keeps copies: nothing below may read the freed spec. */
    brig_spec_free(spec);
    CHECK(plan && !plan->chroot_only && strcmp(plan->rootfs, ROOTFS) == 0,
          "default: a plan for the rootfs");
    char *text = render(plan);
    CHECK_STR(text, default_plan, "default: every step in order");
    free(text);
    const struct brig_rootfs_step *host = nth(plan, BRIG_STEP_PROPAGATE_HOST_ROOT, 0);
    CHECK(host && host->propagation == (MS_SLAVE | MS_REC), "default: / is made rslave first");
    check_default_mounts(plan);
    const struct brig_rootfs_step *null = nth(plan, BRIG_STEP_DEVICE, 0);
    CHECK(null && null->node.type == S_IFCHR && null->node.major == 1 && null->node.minor == 3
              && null->node.mode == 0666 && !null->node.from_host && !null->node.has_uid,
          "default: /dev/null is mknod'ed 1:3 0666");
    const struct brig_rootfs_step *tty = nth(plan, BRIG_STEP_DEVICE, 5);
    CHECK(tty && tty->node.major == 5 && tty->node.minor == 0, "default: /dev/tty is 5:0");
    const struct brig_rootfs_step *ptmx = nth(plan, BRIG_STEP_DEV_LINK, 0);
    CHECK(ptmx && strcmp(ptmx->source, "pts/ptmx") == 0, "default: /dev/ptmx -> pts/ptmx");
    const struct brig_rootfs_step *fd = nth(plan, BRIG_STEP_DEV_LINK, 1);
    CHECK(fd && strcmp(fd->source, "/proc/self/fd") == 0, "default: /dev/fd -> /proc/self/fd");
    brig_rootfs_plan_free(plan);
}

/* Rootless: /sys is the host's, bound; nodes come from the host. */
static void test_rootless_spec(void)
{
    char *json = NULL;
    brig_error_t err = NULL;
    CHECK(brig_spec_default_json(true, &json, &err) == 0, "rootless spec");
    struct brig_spec *spec = json ? parse_json(json) : NULL;
    free(json);
    struct brig_rootfs_plan *plan = plan_of(spec, false);
    brig_spec_free(spec);
    const struct brig_rootfs_step *sys = mount_at(plan, "/sys");
    CHECK(sys && sys->mount_kind == BRIG_MOUNT_BIND
              && sys->mount.flags
                     == (MS_BIND | MS_REC | MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY),
          "rootless: /sys is an rbind of the host's, read-only");
    const struct brig_rootfs_step *pts = mount_at(plan, "/dev/pts");
    CHECK(data_is(pts, "newinstance,ptmxmode=0666,mode=0620"), "rootless: devpts without gid=");
    const struct brig_rootfs_step *cg = mount_at(plan, "/sys/fs/cgroup");
    CHECK(cg && cg->cgroupns, "rootless: the cgroup mount knows of the cgroup namespace");
    bool all_from_host = count(plan, BRIG_STEP_DEVICE) == 6;
    for (size_t i = 0; i < 6; i++) {
        const struct brig_rootfs_step *d = nth(plan, BRIG_STEP_DEVICE, i);
        all_from_host &= d && d->node.from_host;
    }
    CHECK(all_from_host, "rootless: a user namespace binds the host's nodes");
    brig_rootfs_plan_free(plan);
}

/* ---- binds, propagation, tmpcopyup ---- */

static const char bind_mounts[] =
    "{'destination': '/data', 'type': 'bind', 'source': 'src',"
    " 'options': ['rbind', 'ro', 'rprivate']},"
    "{'destination': '/etc/hosts', 'source': '/etc/hosts', 'options': ['bind', 'rw']},"
    "{'destination': '/srv', 'type': 'none', 'source': '/srv',"
    " 'options': ['rbind', 'rro', 'rshared', 'x-systemd.automount']},"
    "{'destination': '/tmp', 'type': 'tmpfs', 'source': 'tmpfs',"
    " 'options': ['tmpcopyup', 'nosuid', 'mode=1777']},"
    "{'destination': '/run', 'type': 'tmpfs', 'options': ['rbind', 'tmpcopyup']},"
    "{'destination': '/proc', 'type': 'proc', 'source': 'proc',"
    " 'options': ['tmpcopyup']},"
    "{'destination': 'var/lib/x', 'type': 'ext4', 'source': '/dev/sdb1',"
    " 'options': ['noatime', 'errors=remount-ro']}";

static void test_binds(void)
{
    struct brig_spec *spec = parse_config("{'path': 'rootfs'}", bind_mounts,
                                          "'rootfsPropagation': 'rslave'");
    struct brig_rootfs_plan *plan = plan_of(spec, false);
    brig_spec_free(spec);
    CHECK(count(plan, BRIG_STEP_MOUNT) == 7 && nth(plan, BRIG_STEP_MOUNT, 0)
              && strcmp(nth(plan, BRIG_STEP_MOUNT, 0)->path, "/data") == 0
              && strcmp(nth(plan, BRIG_STEP_MOUNT, 6)->path, "/var/lib/x") == 0,
          "binds: every mount, in the spec's order");
    const struct brig_rootfs_step *data = mount_at(plan, "/data");
    CHECK(data && data->mount_kind == BRIG_MOUNT_BIND
              && data->mount.flags == (MS_BIND | MS_REC | MS_RDONLY)
              && data->mount.propagation == (MS_PRIVATE | MS_REC)
              && strcmp(data->source, "src") == 0,
          "binds: rbind,ro,rprivate");
    const struct brig_rootfs_step *hosts = mount_at(plan, "/etc/hosts");
    CHECK(hosts && hosts->mount_kind == BRIG_MOUNT_BIND && hosts->fstype == NULL
              && hosts->mount.flags == MS_BIND && hosts->mount.clear == MS_RDONLY,
          "binds: no type and a bind option is a bind; rw is a flag to clear");
    const struct brig_rootfs_step *srv = mount_at(plan, "/srv");
    CHECK(srv && srv->mount_kind == BRIG_MOUNT_BIND && srv->mount.flags == (MS_BIND | MS_REC)
              && srv->mount.rec_attr_set == MOUNT_ATTR_RDONLY
              && srv->mount.propagation == (MS_SHARED | MS_REC) && data_is(srv, NULL),
          "binds: type none + rbind, rro recursive, rshared, x- options dropped");
    const struct brig_rootfs_step *tmp = mount_at(plan, "/tmp");
    CHECK(tmp && tmp->mount_kind == BRIG_MOUNT_TMPFS && tmp->mount.copy_up
              && tmp->mount.flags == MS_NOSUID && data_is(tmp, "mode=1777"),
          "tmpcopyup: a tmpfs that copies up, the option kept from the kernel");
    const struct brig_rootfs_step *run = mount_at(plan, "/run");
    CHECK(run && run->mount_kind == BRIG_MOUNT_TMPFS && run->mount.flags == 0 && run->mount.copy_up
              && run->source == NULL,
          "a filesystem drops bind flags; no source is fine");
    const struct brig_rootfs_step *proc = mount_at(plan, "/proc");
    CHECK(proc && proc->mount_kind == BRIG_MOUNT_PROC && !proc->mount.copy_up,
          "tmpcopyup means nothing but on a tmpfs");
    const struct brig_rootfs_step *ext = nth(plan, BRIG_STEP_MOUNT, 6);
    CHECK(ext && ext->mount_kind == BRIG_MOUNT_OTHER && strcmp(ext->path, "/var/lib/x") == 0
              && ext->mount.flags == MS_NOATIME && data_is(ext, "errors=remount-ro"),
          "a relative destination is planned under /, another type passed as written");
    /* rslave: like the default on the way in, asked for again at the end. */
    const struct brig_rootfs_step *last = nth(plan, BRIG_STEP_PROPAGATE_ROOT, 0);
    CHECK(nth(plan, BRIG_STEP_PROPAGATE_HOST_ROOT, 0)->propagation == (MS_SLAVE | MS_REC) && last
              && last->propagation == (MS_SLAVE | MS_REC) && last->phase == BRIG_ROOTFS_FINISH
              && strcmp(last->source, "rslave") == 0 && last == &plan->steps[plan->n_steps - 1],
          "rootfsPropagation rslave: set again as the very last step");
    CHECK(count(plan, BRIG_STEP_PRIVATE_PARENT) == 0 && count(plan, BRIG_STEP_PRIVATE_ROOTS) == 0,
          "rslave: nothing shared to make private");
    brig_rootfs_plan_free(plan);
}

static const char shared_plan[] = "P propagate-host-root /\n"
                                  "P private-parent " ROOTFS "\n"
                                  "P bind-rootfs " ROOTFS "\n"
                                  "P mount /dev\n"
                                  "V private-roots " ROOTFS "\n"
                                  "V move-root " ROOTFS "\n"
                                  "F propagate-root /\n";

static void test_propagation(void)
{
    struct brig_spec *spec = parse_config(
        "{'path': 'rootfs'}",
        "{'destination': '/dev', 'type': 'bind', 'source': '/dev', 'options': ['rbind']}",
        "'rootfsPropagation': 'shared'");
    struct brig_rootfs_plan *plan = plan_of(spec, true);
    brig_spec_free(spec);
    char *text = render(plan);
    CHECK_STR(text, shared_plan, "shared, /dev bound, no_pivot: the steps in order");
    free(text);
    CHECK(plan && plan->steps[0].propagation == (MS_SHARED | MS_REC)
              && plan->steps[plan->n_steps - 1].propagation == (MS_SHARED | MS_REC),
          "shared: / is rshared before the mounts and after");
    brig_rootfs_plan_free(plan);

    static const struct {
        const char *name;
        unsigned long host, last; /* last 0: no final propagation step */
    } cases[] = {
        { "private", MS_PRIVATE | MS_REC, 0 },
        { "rprivate", MS_PRIVATE | MS_REC, 0 },
        { "slave", MS_SLAVE | MS_REC, MS_SLAVE | MS_REC },
        { "unbindable", MS_PRIVATE | MS_REC, MS_UNBINDABLE | MS_REC },
        { "runbindable", MS_PRIVATE | MS_REC, MS_UNBINDABLE | MS_REC },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char linux_[64], name[96];
        snprintf(linux_, sizeof linux_, "'rootfsPropagation': '%s'", cases[i].name);
        struct brig_spec *s = parse_config("{'path': 'rootfs'}", "", linux_);
        struct brig_rootfs_plan *p = plan_of(s, false);
        brig_spec_free(s);
        const struct brig_rootfs_step *last = nth(p, BRIG_STEP_PROPAGATE_ROOT, 0);
        snprintf(name, sizeof name, "rootfsPropagation %s: in and out", cases[i].name);
        CHECK(p && p->steps[0].propagation == cases[i].host
                  && (cases[i].last ? last && last->propagation == cases[i].last : last == NULL)
                  && count(p, BRIG_STEP_PRIVATE_PARENT) == 0 && count(p, BRIG_STEP_PIVOT_ROOT) == 1,
              name);
        brig_rootfs_plan_free(p);
    }
}

/* ---- /dev ---- */

static const char devices_linux[] =
    "'namespaces': [{'type': 'mount'}, {'type': 'user'}],"
    "'uidMappings': [{'containerID': 0, 'hostID': 100000, 'size': 65536}],"
    "'gidMappings': [{'containerID': 0, 'hostID': 100000, 'size': 65536}],"
    "'devices': ["
    " {'type': 'c', 'path': '/dev/fuse', 'major': 10, 'minor': 229,"
    "  'fileMode': 384, 'uid': 1000, 'gid': 1001},"
    " {'type': 'p', 'path': '/dev/fifo'},"
    " {'type': 'u', 'path': '/dev/null', 'major': 1, 'minor': 3, 'fileMode': 416},"
    " {'type': 'b', 'path': '/dev/disk/loop7', 'major': 7, 'minor': 7}]";

static void test_devices(void)
{
    /* A user namespace of its own: parse_config gives only a mount one. */
    char *json = NULL;
    if (asprintf(&json,
                 "{'ociVersion': '1.2.0', 'root': {'path': 'r'}, "
                 "'mounts': [{'destination': '/dev', 'type': 'tmpfs'}], "
                 "'linux': {%s}}",
                 devices_linux)
        < 0)
        return;
    struct brig_spec *spec = parse(json);
    free(json);
    struct brig_rootfs_plan *plan = plan_of(spec, false);
    brig_spec_free(spec);
    /* /dev/null is redefined by linux.devices: the default one is left out. */
    CHECK(count(plan, BRIG_STEP_DEVICE) == 5 + 4, "devices: 5 defaults and 4 of linux.devices");
    const struct brig_rootfs_step *zero = nth(plan, BRIG_STEP_DEVICE, 0);
    CHECK(zero && strcmp(zero->path, "/dev/zero") == 0 && zero->node.from_host,
          "devices: the redefined /dev/null is not a default; the rest come from the host");
    const struct brig_rootfs_step *shm = nth(plan, BRIG_STEP_DEV_SHM, 0);
    const struct brig_rootfs_step *fuse = nth(plan, BRIG_STEP_DEVICE, 5);
    CHECK(shm && fuse && fuse > shm && strcmp(fuse->path, "/dev/fuse") == 0 && fuse->index == 0,
          "devices: linux.devices after the defaults, links and /dev/shm");
    CHECK(fuse && fuse->node.type == S_IFCHR && fuse->node.major == 10 && fuse->node.minor == 229
              && fuse->node.mode == 0600 && fuse->node.has_uid && fuse->node.uid == 1000
              && fuse->node.has_gid && fuse->node.gid == 1001 && fuse->node.from_host,
          "devices: a char device with its mode and owner, bound from the host in a userns");
    const struct brig_rootfs_step *fifo = nth(plan, BRIG_STEP_DEVICE, 6);
    CHECK(fifo && fifo->node.type == S_IFIFO && fifo->node.major == 0 && fifo->node.mode == 0666
              && !fifo->node.from_host,
          "devices: a fifo is made even in a user namespace, 0666 by default");
    const struct brig_rootfs_step *null = nth(plan, BRIG_STEP_DEVICE, 7);
    CHECK(null && strcmp(null->path, "/dev/null") == 0 && null->node.type == S_IFCHR
              && null->node.mode == 0640 && null->index == 2,
          "devices: type u is a char device; the spec's mode wins");
    const struct brig_rootfs_step *loop = nth(plan, BRIG_STEP_DEVICE, 8);
    CHECK(loop && loop->node.type == S_IFBLK && strcmp(loop->path, "/dev/disk/loop7") == 0,
          "devices: a block device in a subdirectory");
    brig_rootfs_plan_free(plan);
}

/* /dev from the host or a devtmpfs: creating a node would create it there. */
static void test_dev_not_ours(void)
{
    static const char *const dev_mounts[] = {
        "{'destination': '/dev', 'type': 'bind', 'source': '/dev', 'options': ['rbind']}",
        "{'destination': '/dev/', 'type': 'devtmpfs', 'source': 'devtmpfs'}",
        "{'destination': 'dev', 'source': '/dev', 'options': ['bind']}",
        "{'destination': '/dev', 'type': 'tmpfs'},"
        "{'destination': '/x/../dev', 'source': '/dev', 'options': ['rbind']}",
    };
    for (size_t i = 0; i < sizeof dev_mounts / sizeof dev_mounts[0]; i++) {
        struct brig_spec *spec = parse_config(
            "{'path': 'r'}", dev_mounts[i],
            "'devices': [{'type': 'c', 'path': '/dev/fuse', 'major': 10, 'minor': 229}]");
        struct brig_rootfs_plan *plan = plan_of(spec, false);
        brig_spec_free(spec);
        char name[64];
        snprintf(name, sizeof name, "/dev not ours (case %zu): no node, link or shm", i);
        CHECK(plan && count(plan, BRIG_STEP_DEVICE) == 0 && count(plan, BRIG_STEP_DEV_LINK) == 0
                  && count(plan, BRIG_STEP_DEV_SHM) == 0 && count(plan, BRIG_STEP_PIVOT_ROOT) == 1,
              name);
        brig_rootfs_plan_free(plan);
    }
}

/* ---- masked and read-only paths, read-only root, no mount namespace ---- */

static const char paths_plan[] = "P propagate-host-root /\n"
                                 "P bind-rootfs " ROOTFS "\n"
                                 "P mount /dev\n"
                                 "V pivot_root " ROOTFS "\n"
                                 "F readonly-path /proc/sys\n"
                                 "F readonly-path /etc/relative\n"
                                 "F mask-path /proc/kcore\n"
                                 "F mask-path /secret\n";

static void test_paths(void)
{
    struct brig_spec *spec = parse_config(
        "{'path': 'r', 'readonly': false}",
        "{'destination': '/dev', 'type': 'bind', 'source': '/dev', 'options': ['rbind']}",
        "'readonlyPaths': ['/proc/sys', 'etc/relative'],"
        "'maskedPaths': ['/proc/kcore', '/secret']");
    struct brig_rootfs_plan *plan = plan_of(spec, false);
    brig_spec_free(spec);
    char *text = render(plan);
    CHECK_STR(text, paths_plan, "paths: read-only before masked; a writable root stays so");
    free(text);
    const struct brig_rootfs_step *ro = nth(plan, BRIG_STEP_READONLY_PATH, 1);
    CHECK(ro && ro->index == 1 && ro->phase == BRIG_ROOTFS_FINISH, "paths: each names its entry");
    brig_rootfs_plan_free(plan);

    spec = parse_config("{'path': 'r', 'readonly': true}", "", "");
    plan = plan_of(spec, false);
    brig_spec_free(spec);
    CHECK(plan && plan->steps[plan->n_steps - 1].kind == BRIG_STEP_READONLY_ROOT,
          "root.readonly: the last step remounts / read-only");
    brig_rootfs_plan_free(plan);
}

static void test_chroot_only(void)
{
    /* The mounts are never looked at: the runtime's namespace is shared. */
    struct brig_spec *spec = parse("{'ociVersion': '1.2.0', 'root': {'path': 'r'},"
                                   " 'mounts': [{'destination': '/proc', 'type': 'proc'}],"
                                   " 'linux': {'namespaces': [{'type': 'pid'}]}}");
    struct brig_rootfs_plan *plan = plan_of(spec, false);
    brig_spec_free(spec);
    CHECK(plan && plan->chroot_only && plan->n_steps == 0 && strcmp(plan->rootfs, ROOTFS) == 0,
          "no mount namespace: a chroot, no steps");
    brig_rootfs_plan_free(plan);

    spec = parse("{'ociVersion': '1.2.0', 'root': {'path': 'r'},"
                 " 'linux': {'namespaces': [{'type': 'mount', 'path': '/proc/1/ns/mnt'}]}}");
    plan = plan_of(spec, false);
    brig_spec_free(spec);
    CHECK(plan && !plan->chroot_only && count(plan, BRIG_STEP_PIVOT_ROOT) == 1,
          "a joined mount namespace is the container's own: planned in full");
    brig_rootfs_plan_free(plan);
}

/* ---- config errors ---- */

static void expect_error(const struct brig_spec *spec, const char *want, const char *name)
{
    struct brig_rootfs_plan *plan = (struct brig_rootfs_plan *) 1;
    brig_error_t err = NULL;
    int r = spec ? brig_rootfs_plan_build(spec, ROOTFS, false, &plan, &err) : 0;
    CHECK(r < 0 && plan == NULL, name);
    CHECK_STR(err ? err->msg : NULL, want, name);
    brig_error_release(&err);
}

static void test_config_errors_parsed(void)
{
    struct brig_spec *spec = parse_config(
        "{'path': 'r'}",
        "{'destination': '/proc', 'type': 'proc'},"
        "{'destination': '/data', 'type': 'bind', 'source': '/srv', 'options': ['rbind', 'idmap']}",
        "");
    expect_error(spec, "mounts[1].options: mount option `idmap` is not supported",
                 "a refused option names the mount and its options");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}",
                        "{'destination': '/data', 'type': 'bind', 'options': ['rbind']}", "");
    expect_error(spec, "mounts[0].source: a bind mount needs a source", "a bind without a source");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}",
                        "{'destination': '/d', 'type': 'none', 'options': ['bind']},"
                        "{'destination': '/data', 'source': '/srv', 'options': ['ro']}",
                        "");
    expect_error(spec, "mounts[0].source: a bind mount needs a source",
                 "type none + bind without a source");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}",
                        "{'destination': '/data', 'source': '/srv', 'options': ['ro']}", "");
    expect_error(spec, "mounts[0].type: missing, and no bind option", "no type and no bind option");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}", "", "'maskedPaths': ['/proc/kcore', '']");
    expect_error(spec, "linux.maskedPaths[1]: must not be empty", "an empty masked path");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}", "", "'readonlyPaths': ['']");
    expect_error(spec, "linux.readonlyPaths[0]: must not be empty", "an empty read-only path");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}", "",
                        "'devices': [{'type': 'c', 'path': '/dev/ok', 'major': 1, 'minor': 3},"
                        " {'type': 'c', 'path': '/dev/big', 'major': 5000, 'minor': 1}]");
    expect_error(spec, "linux.devices[1]: device `/dev/big`: bad major/minor 5000:1",
                 "a major number the kernel can't hold");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}", "",
                        "'devices': [{'type': 'b', 'path': '/dev/neg', 'major': 8, 'minor': -1}]");
    expect_error(spec, "linux.devices[0]: device `/dev/neg`: bad major/minor 8:-1",
                 "a negative minor number");
    brig_spec_free(spec);

    spec = parse_config("{'path': 'r'}", "",
                        "'devices': [{'type': 'c', 'path': '/dev/..', 'major': 1, 'minor': 3}]");
    expect_error(spec, "linux.devices[0].path: `/dev/..` names no file",
                 "a device path naming a directory");
    brig_spec_free(spec);
}

/* What the parser already refuses, met again in a spec built by code (a
 * transform, a test): the plan is the last check before the clone. */
static void test_config_errors_built(void)
{
    struct brig_namespace mnt = { .type = BRIG_NS_MOUNT };
    struct brig_root root = { .path = "r" };
    struct brig_linux lx = { .namespaces = &mnt, .n_namespaces = 1 };
    struct brig_spec spec = { .root = &root, .linux_ = &lx };

    lx.rootfs_propagation = "sideways";
    expect_error(&spec, "linux.rootfsPropagation: unknown propagation `sideways`",
                 "an unknown propagation");
    lx.rootfs_propagation = NULL;

    struct brig_device dev = { .type = "x", .path = "/dev/x", .major = 1, .minor = 1 };
    lx.devices = &dev;
    lx.n_devices = 1;
    expect_error(&spec, "linux.devices[0].type: unknown type `x`", "an unknown device type");
    dev.type = "c";
    dev.path = "dev/x";
    expect_error(&spec, "linux.devices[0].path: must be an absolute path",
                 "a relative device path");
    dev.path = NULL;
    expect_error(&spec, "missing linux.devices[0].path", "a device without a path");
    lx.n_devices = 0;

    struct brig_mount m[2] = { { .destination = "/proc", .type = "proc" }, { .type = "tmpfs" } };
    spec.mounts = m;
    spec.n_mounts = 2;
    expect_error(&spec, "missing mounts[1].destination", "a mount without a destination");
    m[1].destination = "";
    expect_error(&spec, "mounts[1].destination: must not be empty", "an empty destination");
}

/* The other check the runtime makes before the clone, the one that reads
 * the rootfs: a proc or sysfs destination that is a symlink out of it is
 * refused, written relative or absolute; any other mount's is resolved
 * inside the rootfs later. Needs no root, only a directory of our own. */
static void test_destination_symlinks(void)
{
    char dir[] = "/tmp/brig-plan-XXXXXX", link[64];
    if (mkdtemp(dir) == NULL) {
        CHECK(false, "mkdtemp");
        return;
    }
    snprintf(link, sizeof link, "%s/evil", dir);
    CHECK(symlink("/etc", link) == 0, "a symlink out of the rootfs");
    static const struct {
        const char *destination, *want; /* want NULL: accepted */
    } cases[] = {
        { "/ok", NULL },
        { "/evil/sub", NULL }, /* resolved inside the rootfs */
        { "+/evil", NULL },    /* a tmpfs: resolved inside the rootfs */
        { "/evil", "mounts[0]: destination `/evil` is a symlink to `/etc`, outside the rootfs; "
                   "refusing to mount over it" },
        { "evil", "mounts[0]: destination `evil` is a symlink to `/etc`, outside the rootfs; "
                  "refusing to mount over it" },
        { "./x/../evil", "mounts[0]: destination `./x/../evil` is a symlink to `/etc`, outside "
                         "the rootfs; refusing to mount over it" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = cases[i].destination;
        struct brig_mount m = { .destination = (char *) (d[0] == '+' ? d + 1 : d),
                                .type = d[0] == '+' ? "tmpfs" : "proc" };
        struct brig_spec spec = { .mounts = &m, .n_mounts = 1 };
        brig_error_t err = NULL;
        int r = brig_mounts_check_destinations(&spec, dir, &err);
        char name[96];
        snprintf(name, sizeof name, "destination `%s` %s", cases[i].destination,
                 cases[i].want ? "refused" : "accepted");
        CHECK(cases[i].want ? r < 0 : r == 0, name);
        if (cases[i].want)
            CHECK_STR(err ? err->msg : NULL, cases[i].want, name);
        brig_error_release(&err);
    }
    unlink(link);
    rmdir(dir);
}

int main(void)
{
    test_default_spec();
    test_rootless_spec();
    test_binds();
    test_propagation();
    test_devices();
    test_dev_not_ours();
    test_paths();
    test_chroot_only();
    test_config_errors_parsed();
    test_config_errors_built();
    test_destination_symlinks();
    return unit_done();
}
