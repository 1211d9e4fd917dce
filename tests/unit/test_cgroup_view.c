/* The container's /sys/fs/cgroup on hosts with cgroup v1 hierarchies, as
 * planned from a mountinfo and a /proc/self/cgroup text: a hybrid host (v1
 * hierarchies and the v2 tree at unified), a legacy host that co-mounts
 * cpu,cpuacct and net_cls,net_prio, and a legacy host with every
 * controller on its own; with a cgroup namespace (fresh mounts) and
 * without (binds of the container's directories). No root needed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs/cgroup_view.h"
#include "rootfs/mountinfo.h"
#include "unit.h"

/* ---- fixtures ---- */

static const char hybrid_mountinfo[] =
    "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "23 22 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
    "31 23 0:28 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:3 - tmpfs tmpfs ro,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:4"
    " - cgroup2 cgroup2 rw,nsdelegate\n"
    "33 31 0:30 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:5"
    " - cgroup cgroup rw,xattr,name=systemd\n"
    "34 31 0:31 / /sys/fs/cgroup/cpu rw,relatime shared:6 - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpuacct\n"
    "36 31 0:33 / /sys/fs/cgroup/memory rw,relatime shared:8 - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/pids rw,relatime shared:9 - cgroup cgroup rw,pids\n"
    /* The same hierarchy again, further down: the first mount names it. */
    "90 22 0:33 / /mnt/other\\040memory rw,relatime - cgroup cgroup rw,memory\n";

static const char hybrid_cgroup[] = "5:pids:/brig/c1\n"
                                    "4:memory:/brig/c1\n"
                                    "3:cpuacct:/brig/c1\n"
                                    "2:cpu:/brig/c1\n"
                                    "1:name=systemd:/user.slice/brig/c1\n"
                                    "0::/brig/c1\n";

/* Co-mounted controllers, a systemd hierarchy whose superblock carries a
 * release agent, and a memory hierarchy mounted from a subtree (a host that
 * is itself a container, shown its own part of the tree). */
static const char comounted_mountinfo[] =
    "25 1 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec - tmpfs tmpfs rw,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime - cgroup cgroup"
    " rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd\n"
    "27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "28 25 0:25 / /sys/fs/cgroup/net_cls,net_prio rw,relatime - cgroup cgroup"
    " rw,net_cls,net_prio\n"
    "29 25 0:26 /ct/outer /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "30 25 0:27 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset,clone_children\n";

static const char comounted_cgroup[] = "6:cpuset:/ct/outer/brig/c1\n"
                                       "5:memory:/ct/outer/brig/c1\n"
                                       "4:net_cls,net_prio:/ct/outer/brig/c1\n"
                                       "3:cpu,cpuacct:/ct/outer/brig/c1\n"
                                       "1:name=systemd:/ct/outer/brig/c1\n";

static const char separate_mountinfo[] =
    "25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    "27 25 0:24 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
    "28 25 0:25 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio\n"
    "29 25 0:26 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
    /* A cgroup2 mount on a legacy host is no part of the view. */
    "30 1 0:27 / /run/cg2 rw - cgroup2 cgroup2 rw\n";

static const char separate_cgroup[] = "4:freezer:/\n"
                                      "3:blkio:/\n"
                                      "2:cpuacct:/\n"
                                      "1:cpu:/\n"
                                      "0::/\n";

/* ---- helpers ---- */

static struct brig_cgroup_view plan(const char *mountinfo, const char *cgroups, bool cgroupns,
                                    bool unified, int *rc, char **msg)
{
    struct brig_cgroup_view v;
    brig_error_t err = NULL;
    *rc = brig_cgroup_view_plan(mountinfo, cgroups, cgroupns, unified, &v, &err);
    *msg = err ? strdup(err->msg) : NULL;
    if (err)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    return v;
}

/* "name=fstype:data" or "name=fstype<source" per mount, space-separated,
 * then "| link>target ..." */
static char *render(const struct brig_cgroup_view *v)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        return NULL;
    for (size_t i = 0; i < v->n_mounts; i++) {
        const struct brig_cgroup_view_mount *m = &v->mounts[i];
        fprintf(f, "%s%s=%s", i ? " " : "", m->name, m->fstype);
        if (m->source)
            fprintf(f, "<%s", m->source);
        else if (m->data)
            fprintf(f, ":%s", m->data);
    }
    if (v->n_links)
        fprintf(f, " |");
    for (size_t i = 0; i < v->n_links; i++)
        fprintf(f, " %s>%s", v->links[i].name, v->links[i].target);
    fclose(f);
    return out;
}

static void check_view(const char *mountinfo, const char *cgroups, bool cgroupns, bool unified,
                       const char *want, const char *name)
{
    int rc;
    char *msg;
    struct brig_cgroup_view v = plan(mountinfo, cgroups, cgroupns, unified, &rc, &msg);
    char *got = rc == 0 ? render(&v) : NULL;
    CHECK_STR(got, want, name);
    free(got);
    free(msg);
    if (rc == 0)
        brig_cgroup_view_free(&v);
}

static void check_error(const char *mountinfo, const char *cgroups, const char *want,
                        const char *name)
{
    int rc;
    char *msg;
    struct brig_cgroup_view v = plan(mountinfo, cgroups, false, false, &rc, &msg);
    CHECK(rc < 0 && v.n_mounts == 0 && v.mounts == NULL, name);
    CHECK_STR(msg, want, name);
    free(msg);
}

/* ---- tests ---- */

static void test_hybrid(void)
{
    check_view(hybrid_mountinfo, hybrid_cgroup, true, true,
               "unified=cgroup2 systemd=cgroup:none,name=systemd cpu=cgroup:cpu"
               " cpuacct=cgroup:cpuacct memory=cgroup:memory pids=cgroup:pids",
               "hybrid, cgroup namespace: a fresh mount per hierarchy, the host's order, "
               "v2 as unified");
    check_view(
        hybrid_mountinfo, hybrid_cgroup, false, true,
        "unified=cgroup2</sys/fs/cgroup/unified/brig/c1"
        " systemd=cgroup</sys/fs/cgroup/systemd/user.slice/brig/c1"
        " cpu=cgroup</sys/fs/cgroup/cpu/brig/c1 cpuacct=cgroup</sys/fs/cgroup/cpuacct/brig/c1"
        " memory=cgroup</sys/fs/cgroup/memory/brig/c1 pids=cgroup</sys/fs/cgroup/pids/brig/c1",
        "hybrid, no cgroup namespace: the container's directory of each bound");
    check_view(hybrid_mountinfo, hybrid_cgroup, true, false,
               "systemd=cgroup:none,name=systemd cpu=cgroup:cpu cpuacct=cgroup:cpuacct"
               " memory=cgroup:memory pids=cgroup:pids",
               "without with_unified the v2 tree is left out");
}

static void test_comounted(void)
{
    check_view(comounted_mountinfo, comounted_cgroup, true, false,
               "systemd=cgroup:none,name=systemd cpu,cpuacct=cgroup:cpu,cpuacct"
               " net_cls,net_prio=cgroup:net_cls,net_prio memory=cgroup:memory"
               " cpuset=cgroup:cpuset"
               " | cpu>cpu,cpuacct cpuacct>cpu,cpuacct net_cls>net_cls,net_prio"
               " net_prio>net_cls,net_prio",
               "co-mounted: one directory named as the host names it, a link per "
               "controller; no release_agent= or clone_children in the options");
    check_view(comounted_mountinfo, comounted_cgroup, false, false,
               "systemd=cgroup</sys/fs/cgroup/systemd/ct/outer/brig/c1"
               " cpu,cpuacct=cgroup</sys/fs/cgroup/cpu,cpuacct/ct/outer/brig/c1"
               " net_cls,net_prio=cgroup</sys/fs/cgroup/net_cls,net_prio/ct/outer/brig/c1"
               " memory=cgroup</sys/fs/cgroup/memory/brig/c1"
               " cpuset=cgroup</sys/fs/cgroup/cpuset/ct/outer/brig/c1"
               " | cpu>cpu,cpuacct cpuacct>cpu,cpuacct net_cls>net_cls,net_prio"
               " net_prio>net_cls,net_prio",
               "co-mounted, binds: a mount of a subtree is joined below its root");
}

static void test_separate(void)
{
    check_view(separate_mountinfo, separate_cgroup, true, false,
               "cpu=cgroup:cpu cpuacct=cgroup:cpuacct blkio=cgroup:blkio freezer=cgroup:freezer",
               "separate: a directory each, no links, no cgroup2 on a legacy host");
    check_view(separate_mountinfo, separate_cgroup, false, false,
               "cpu=cgroup</sys/fs/cgroup/cpu cpuacct=cgroup</sys/fs/cgroup/cpuacct"
               " blkio=cgroup</sys/fs/cgroup/blkio freezer=cgroup</sys/fs/cgroup/freezer",
               "separate, in the root cgroups: the mount points themselves");
    /* A controller the host didn't mount is simply not there. */
    check_view(separate_mountinfo, "5:pids:/\n1:cpu:/x\n", false, false,
               "cpu=cgroup</sys/fs/cgroup/cpu/x", "a hierarchy without a mount is left out");
}

static void test_unreachable(void)
{
    /* The container's memory cgroup is outside the subtree the host's
     * mount shows; its bind can't be found. */
    check_error(comounted_mountinfo, "5:memory:/elsewhere/c1\n",
                "cgroup hierarchy `memory`: the container's cgroup `/elsewhere/c1` is not below "
                "its mount at `/sys/fs/cgroup/memory`",
                "no cgroup namespace: a cgroup outside the mount's root is an error");
    check_error(separate_mountinfo, "1:cpu:/../../etc\n",
                "cgroup hierarchy `cpu`: the container's cgroup `/../../etc` is not below its "
                "mount at `/sys/fs/cgroup/cpu`",
                "a path that climbs with .. is never joined");
    /* A second mount that does reach it is taken instead. */
    check_view("1 0 0:1 /a /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
               "2 0 0:1 / /mnt/memory rw - cgroup cgroup rw,memory\n",
               "5:memory:/b/c1\n", false, false, "memory=cgroup</mnt/memory/b/c1",
               "a later mount that reaches the cgroup is used");
}

static void test_names(void)
{
    /* Mount points whose last part can't be a name, and a second
     * hierarchy under a name already taken, are left out; links never
     * take a name a directory has. */
    check_view("1 0 0:1 / / rw - cgroup cgroup rw,pids\n"
               "2 0 0:2 / /a/cpu rw - cgroup cgroup rw,cpu\n"
               "3 0 0:3 / /b/cpu rw - cgroup cgroup rw,blkio\n"
               "4 0 0:4 / /c/cpu,cpuacct rw - cgroup cgroup rw,cpuacct\n",
               "1:pids:/\n2:cpu:/\n3:blkio:/\n4:cpuacct:/\n", true, false,
               "cpu=cgroup:cpu cpu,cpuacct=cgroup:cpuacct | cpuacct>cpu,cpuacct",
               "names: \"/\" names nothing; a taken name is skipped, for a directory or a link");
    check_view("", "1:cpu:/\n", true, false, "", "no mounts, an empty view");
}

static void test_mountinfo_line(void)
{
    char line[] = "36 35 98:0 /mnt\\0401 /mnt\\0402 rw,noatime master:1 shared:2"
                  " - ext3 /dev/root rw,errors=continue\n";
    struct brig_mountinfo e;
    CHECK(brig_mountinfo_parse_line(line, &e), "mountinfo: a line parses");
    CHECK_STR(e.root, "/mnt 1", "mountinfo: root, unescaped");
    CHECK_STR(e.mountpoint, "/mnt 2", "mountinfo: mount point, unescaped");
    CHECK_STR(e.fstype, "ext3", "mountinfo: type");
    CHECK_STR(e.super_options, "rw,errors=continue", "mountinfo: superblock options");
    CHECK(e.shared, "mountinfo: shared");
    char short_line[] = "36 35 98:0 / /x rw\n";
    CHECK(!brig_mountinfo_parse_line(short_line, &e), "mountinfo: a line without type fails");
    CHECK(brig_path_is_under("/a/b", "/a") && brig_path_is_under("/a", "/a")
              && brig_path_is_under("/a", "/") && !brig_path_is_under("/ab", "/a"),
          "path_is_under");
}

int main(void)
{
    test_hybrid();
    test_comounted();
    test_separate();
    test_unreachable();
    test_names();
    test_mountinfo_line();
    return unit_done();
}
