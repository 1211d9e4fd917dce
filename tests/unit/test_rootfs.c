/* A rootfs plan carried out for real (brig_rootfs_prepare / pivot / finish),
 * as root: a forked child
 * unshares a mount namespace (and, in the second run, a user namespace),
 * builds a container root in a temp dir, and checks the result from inside.
 * The child's TAP lines share stdout; it hands its counters back through a
 * pipe so the parent can add host-side checks and print the plan. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "rootfs/plan.h"
#include "base/path.h"
#include "unit.h"

#define STRV(...)                                              \
    ((struct brig_strv){ .v = (char *[]){ __VA_ARGS__, NULL }, \
                         .n = sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *) })

static char bundle[64], rootfs[96], escape_name[64];
static char *root_propagation; /* linux.rootfsPropagation of the current run */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    if (f == NULL) {
        perror(path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

static void sub(char *buf, size_t len, const char *base, const char *rel)
{
    snprintf(buf, len, "%s/%s", base, rel);
}

static int build_rootfs(void)
{
    char p[256];
    snprintf(bundle, sizeof bundle, "/tmp/brig-test-rootfs-XXXXXX");
    if (mkdtemp(bundle) == NULL)
        return -1;
    chmod(bundle, 0755);
    sub(rootfs, sizeof rootfs, bundle, "rootfs");
    static const char *dirs[] = { "rootfs",     "rootfs/bin", "rootfs/proc",
                                  "rootfs/dev", "rootfs/tmp", "rootfs/etc",
                                  "rootfs/sys", "rootfs/ro",  "rootfs/secret_dir",
                                  "src" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        sub(p, sizeof p, bundle, dirs[i]);
        mkdir(p, 0755);
    }
    sub(p, sizeof p, bundle, "src/hello");
    write_file(p, "hi");
    sub(p, sizeof p, rootfs, "secret_dir/key");
    write_file(p, "secret");
    sub(p, sizeof p, rootfs, "secret_file");
    write_file(p, "secret");
    /* A destination that tries to leave the rootfs. */
    snprintf(escape_name, sizeof escape_name, "brig-escape-%d", (int) getpid());
    char target[128];
    snprintf(target, sizeof target, "/../../tmp/%s", escape_name);
    sub(p, sizeof p, rootfs, "evil");
    if (symlink(target, p) < 0)
        return -1;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cp /bin/busybox '%s/bin/busybox'", rootfs);
    return system(cmd) == 0 ? 0 : -1;
}

static void exercise(const struct brig_spec *spec, bool in_userns, bool no_pivot, int result_wr);

static struct brig_mount mnt(char *dest, char *type, char *source, struct brig_strv opts)
{
    return (
        struct brig_mount){ .destination = dest, .type = type, .source = source, .options = opts };
}

#define NO_OPTS ((struct brig_strv){ NULL, 0 })

/* The option lists are compound literals, alive only in this scope: the
 * whole run happens inside it. */
static void build_and_exercise(bool in_userns, bool no_pivot, int result_wr)
{
    struct brig_mount mounts[16];
    size_t n = 0;
    mounts[n++] = mnt("/proc", "proc", "proc", NO_OPTS);
    mounts[n++] = mnt("/dev", "tmpfs", "tmpfs",
                      STRV("nosuid", "strictatime", "mode=755", "size=65536k"));
    mounts[n++] = mnt("/dev/pts", "devpts", "devpts",
                      STRV("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620",
                           "gid=5"));
    mounts[n++] = mnt("/data", "bind", "src", STRV("rbind", "ro", "nosuid"));
    mounts[n++] = mnt("/etc/hostfile", NULL, "src/hello", STRV("bind", "ro"));
    mounts[n++] = mnt("/evil", "tmpfs", "tmpfs", NO_OPTS);
    mounts[n++] = mnt("/sys", "sysfs", "sysfs", STRV("nosuid", "noexec", "nodev", "ro"));
    mounts[n++] = mnt("/sys/fs/cgroup", "cgroup", "cgroup",
                      STRV("nosuid", "noexec", "nodev", "relatime", "ro"));
    /* In a user namespace a device is the host's node bound in, so it must
     * exist on the host under the same path. */
    struct brig_device devs[2] = {
        { .type = "c",
          .path = in_userns ? "/dev/null" : "/dev/custom_null",
          .major = 1,
          .minor = 3,
          .has_file_mode = true,
          .file_mode = 0600,
          .has_uid = true,
          .uid = 1000,
          .has_gid = true,
          .gid = 1000 },
        { .type = "p", .path = "/dev/fifo" },
    };
    /* The plan reads from the spec which namespaces the init is in. */
    struct brig_namespace ns[2] = { { .type = BRIG_NS_MOUNT }, { .type = BRIG_NS_USER } };
    struct brig_linux lx = {
        .namespaces = ns,
        .n_namespaces = in_userns ? 2 : 1,
        .devices = devs,
        .n_devices = 2,
        .masked_paths = STRV("/secret_dir", "/secret_file", "/proc/kcore", "/proc/version",
                             "/does/not/exist"),
        .readonly_paths = STRV("/ro", "/proc/sys", "/missing"),
        .rootfs_propagation = root_propagation,
    };
    struct brig_root root = { .path = rootfs, .readonly = true };
    struct brig_spec spec = { .root = &root, .mounts = mounts, .n_mounts = n, .linux_ = &lx };
    exercise(&spec, in_userns, no_pivot, result_wr);
}

static bool fs_is(const char *path, long magic)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 && sf.f_type == magic;
}

static bool has_flags(const char *path, unsigned long flags)
{
    struct statvfs sv;
    return statvfs(path, &sv) == 0 && (sv.f_flag & flags) == flags;
}

/* Every directory in the container's /sys/fs/cgroup is a read-only cgroup
 * mount (this spec has no cgroup namespace: binds of the host's); cgroup2
 * only as "unified". Counts them. */
static int v1_hierarchies_read_only(void)
{
    DIR *d = opendir("/sys/fs/cgroup");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char path[300];
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/sys/fs/cgroup/%s", e->d_name);
        bool v2 = strcmp(e->d_name, "unified") == 0;
        if (!fs_is(path, v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC)
            || !has_flags(path, ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC)) {
            printf("#   %s is not a read-only cgroup mount\n", path);
            n = -1;
            break;
        }
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void check_cgroup_mount(bool in_userns)
{
    enum brig_cgroup_layout layout = brig_cgroup_layout();
    if (layout != BRIG_CGROUP_LAYOUT_HYBRID && layout != BRIG_CGROUP_LAYOUT_LEGACY) {
        CHECK(fs_is("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC), "type cgroup mounts cgroup v2");
        if (in_userns)
            CHECK(has_flags("/sys/fs/cgroup", ST_RDONLY), "host cgroup2 fallback is read-only");
        return;
    }
    CHECK(fs_is("/sys/fs/cgroup", TMPFS_MAGIC)
              && has_flags("/sys/fs/cgroup", ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC),
          "v1 host: type cgroup is a read-only tmpfs");
    CHECK(v1_hierarchies_read_only() > 0,
          "v1 host: each hierarchy in it, a read-only cgroup mount");
    struct stat st;
    CHECK((layout == BRIG_CGROUP_LAYOUT_HYBRID) == (stat("/sys/fs/cgroup/unified", &st) == 0),
          "v1 host: the v2 tree as unified on a hybrid host only");
}

static bool is_null_device(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static bool link_is(const char *path, const char *want)
{
    char buf[128];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    return n > 0 && (buf[n] = '\0', strcmp(buf, want) == 0);
}

/* The optional fields of the mount at `where` mention a peer group. */
static bool mount_is_shared(const char *where)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024], mp[512];
    bool shared = false;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && strcmp(mp, where) == 0)
            shared = strstr(line, " shared:") != NULL;
    if (f)
        fclose(f);
    return shared;
}

/* Mounts whose mount point, as this process sees it, is `where`. */
static int mounts_at(const char *where)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024], mp[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && strcmp(mp, where) == 0;
    if (f)
        fclose(f);
    return n;
}

static void check_inside(bool in_userns, int host_tmp)
{
    struct stat st;
    char path[128];
    CHECK(fs_is("/proc", PROC_SUPER_MAGIC), "/proc is procfs");
    CHECK(is_null_device("/proc/version"), "masked file /proc/version is /dev/null");
    CHECK(has_flags("/proc/sys", ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC),
          "read-only path /proc/sys is ro,nosuid,nodev,noexec");
    CHECK(fs_is("/dev", TMPFS_MAGIC), "/dev is a tmpfs");
    CHECK(fs_is("/dev/pts", DEVPTS_SUPER_MAGIC), "/dev/pts is devpts");
    CHECK(is_null_device("/dev/null"), "/dev/null is 1:3");
    CHECK(stat("/dev/zero", &st) == 0 && st.st_rdev == makedev(1, 5), "/dev/zero is 1:5");
    CHECK(stat("/dev/tty", &st) == 0 && st.st_rdev == makedev(5, 0), "/dev/tty is 5:0");
    CHECK(is_null_device(in_userns ? "/dev/null" : "/dev/custom_null"),
          "linux.devices entry created");
    if (!in_userns) {
        CHECK(stat("/dev/null", &st) == 0 && (st.st_mode & 07777) == 0666, "/dev/null is 0666");
        CHECK(stat("/dev/custom_null", &st) == 0 && (st.st_mode & 07777) == 0600
                  && st.st_uid == 1000 && st.st_gid == 1000,
              "linux.devices mode and owner applied");
    }
    CHECK(stat("/dev/fifo", &st) == 0 && S_ISFIFO(st.st_mode), "linux.devices fifo created");
    CHECK(link_is("/dev/ptmx", "pts/ptmx"), "/dev/ptmx -> pts/ptmx");
    CHECK(link_is("/dev/fd", "/proc/self/fd") && link_is("/dev/stderr", "/proc/self/fd/2"),
          "/dev/fd and /dev/stderr links");
    CHECK(lstat("/dev/core", &st) < 0, "no /dev/core");
    CHECK(stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01777,
          "/dev/shm is a sticky world-writable dir");

    int fd = open("/data/hello", O_RDONLY | O_CLOEXEC);
    char buf[8] = { 0 };
    CHECK(fd >= 0 && read(fd, buf, sizeof buf) == 2 && strcmp(buf, "hi") == 0,
          "relative bind source is the bundle's src");
    if (fd >= 0)
        close(fd);
    CHECK(has_flags("/data", ST_RDONLY | ST_NOSUID), "bind mount /data is ro,nosuid");
    CHECK(open("/data/new", O_CREAT | O_WRONLY | O_CLOEXEC, 0644) < 0 && errno == EROFS,
          "writing to /data fails with EROFS");
    CHECK(stat("/etc/hostfile", &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 2,
          "file bind mount on a created file");

    snprintf(path, sizeof path, "/tmp/%s", escape_name);
    CHECK(fs_is(path, TMPFS_MAGIC), "escaping symlink destination mounted inside the rootfs");
    CHECK(fstatat(host_tmp, escape_name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT,
          "nothing created in the host's /tmp");

    CHECK(fs_is("/sys", SYSFS_MAGIC) && has_flags("/sys", ST_RDONLY), "/sys is a read-only sysfs");
    check_cgroup_mount(in_userns);

    CHECK(fs_is("/secret_dir", TMPFS_MAGIC) && has_flags("/secret_dir", ST_RDONLY)
              && stat("/secret_dir/key", &st) < 0,
          "masked dir is an empty read-only tmpfs");
    CHECK(is_null_device("/secret_file"), "masked file is /dev/null");
    CHECK(has_flags("/ro", ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC),
          "read-only path /ro is ro,nosuid,nodev,noexec");
    CHECK(has_flags("/", ST_RDONLY) && mkdir("/newdir", 0755) < 0 && errno == EROFS,
          "root.readonly: / is read-only");
    /* One "/" and no way to the old root: the rootfs path is not a mount
     * point here, as it would be if the host's tree were still visible. */
    if (root_propagation)
        CHECK(mount_is_shared("/"), "rootfsPropagation shared: / is shared");
    else
        CHECK(!mount_is_shared("/"), "default propagation: / is not shared");
    CHECK(mounts_at("/") == 1 && mounts_at(rootfs) == 0, "the host's mounts are gone");

    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/busybox", "busybox", "true", (char *) NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)
              && WEXITSTATUS(status) == 0,
          "busybox runs in the new root");
}

struct result {
    int run, failed;
};

static void exercise(const struct brig_spec *spec, bool in_userns, bool no_pivot, int result_wr)
{
    brig_error_t err = NULL;
    int host_tmp = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!in_userns && root_propagation == NULL && !brig_path_force_fallback) {
        /* A failing mount first: the message names source, type and destination. */
        struct brig_mount bad = mnt("/bad", "brigfs-nonexistent", "none", NO_OPTS);
        struct brig_spec bad_spec = *spec;
        bad_spec.mounts = &bad;
        bad_spec.n_mounts = 1;
        cleanup_rootfs_plan struct brig_rootfs_plan *bad_plan = NULL;
        CHECK(brig_rootfs_plan_build(&bad_spec, rootfs, no_pivot, &bad_plan, &err) == 0,
              "an unknown filesystem type is the kernel's to refuse, not the plan's");
        CHECK(bad_plan && chdir(bundle) == 0 && brig_rootfs_prepare(bad_plan, &err) < 0,
              "bad mount fails");
        CHECK_STR(err ? err->msg : NULL,
                  "mount `none` (type brigfs-nonexistent) on `/bad`: No such device",
                  "error names the mount");
        brig_error_release(&err);
    }
    cleanup_rootfs_plan struct brig_rootfs_plan *plan = NULL;
    bool ok = brig_rootfs_plan_build(spec, rootfs, no_pivot, &plan, &err) == 0;
    CHECK(ok, "plan");
    ok = ok && chdir(bundle) == 0 && brig_rootfs_prepare(plan, &err) == 0;
    CHECK(ok, in_userns ? "userns: prepare" : "prepare");
    ok = ok && brig_rootfs_pivot(plan, &err) == 0;
    CHECK(ok, no_pivot ? "no_pivot: move + chroot" : "pivot_root");
    ok = ok && brig_rootfs_finish(plan, &err) == 0;
    CHECK(ok, "finish");
    if (err)
        printf("#   %s\n", err->msg);
    if (ok)
        check_inside(in_userns, host_tmp);
    fflush(stdout);
    struct result r = { unit_run, unit_failed };
    _exit(write(result_wr, &r, sizeof r) == sizeof r ? 0 : 3);
}

static bool mounts_under(const char *dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024];
    bool found = false;
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, dir) != NULL;
    if (f)
        fclose(f);
    return found;
}

#define EXIT_LEAKED 4

/* This mount namespace plays a systemd host, where "/" is shared: the
 * container's namespace, a copy of it, starts as its peer, so any mount that
 * propagates back shows up here. Exits EXIT_LEAKED when one did. */
static void run_under_shared_host(bool no_pivot, int result_wr)
{
    if (mount(NULL, "/", NULL, MS_SHARED | MS_REC, NULL) < 0)
        _exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) < 0)
            _exit(2);
        build_and_exercise(false, no_pivot, result_wr);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        _exit(2);
    _exit(mounts_under(bundle) ? EXIT_LEAKED : WEXITSTATUS(status));
}

static void child(bool in_userns, bool no_pivot, int sync_rd, int sync_wr, int result_wr)
{
    /* A user namespace may mount proc only for a pid namespace it owns. */
    int flags = CLONE_NEWNS | (in_userns ? CLONE_NEWUSER | CLONE_NEWPID : 0);
    if (unshare(flags) < 0) {
        perror("unshare");
        _exit(2);
    }
    if (!in_userns)
        run_under_shared_host(no_pivot, result_wr);
    char c = 0; /* the parent writes our id maps */
    if (write(sync_wr, &c, 1) != 1 || read(sync_rd, &c, 1) != 1)
        _exit(2);
    pid_t pid = fork(); /* the first child is pid 1 of the new pid namespace */
    if (pid == 0)
        build_and_exercise(in_userns, no_pivot, result_wr);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        _exit(2);
    _exit(WEXITSTATUS(status));
}

static void write_map(pid_t pid, const char *file)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, file);
    write_file(path, "0 0 4294967295\n");
}

static void run(bool in_userns, bool no_pivot)
{
    int to_parent[2], to_child[2], result[2];
    if (pipe2(to_parent, O_CLOEXEC) < 0 || pipe2(to_child, O_CLOEXEC) < 0
        || pipe2(result, O_CLOEXEC) < 0)
        exit(1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        child(in_userns, no_pivot, to_child[0], to_parent[1], result[1]);
    close(result[1]);
    if (in_userns) {
        char c;
        if (read(to_parent[0], &c, 1) == 1) {
            write_map(pid, "uid_map");
            write_map(pid, "gid_map");
            c = 0;
            if (write(to_child[1], &c, 1) != 1)
                perror("sync");
        }
    }
    struct result r = { 0, 0 };
    int status = 0;
    ssize_t got = read(result[0], &r, sizeof r);
    waitpid(pid, &status, 0);
    if (got == (ssize_t) sizeof r) {
        unit_run = r.run;
        unit_failed = r.failed;
    }
    CHECK(got == (ssize_t) sizeof r, "child reported its results");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) != EXIT_LEAKED,
          "shared host: no container mount propagated back");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited cleanly");
    close(to_parent[0]), close(to_parent[1]), close(to_child[0]), close(to_child[1]);
    close(result[0]);
}

static void check_host_untouched(void)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/%s", escape_name);
    CHECK(access(path, F_OK) < 0, "host: no escape dir in /tmp");
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024];
    bool leaked = false;
    while (f && fgets(line, sizeof line, f))
        leaked |= strstr(line, bundle) != NULL;
    if (f)
        fclose(f);
    CHECK(f != NULL && !leaked, "host: no mount under the bundle propagated back");
}

int main(void)
{
    if (geteuid() != 0) {
        printf("1..0 # SKIP test_rootfs needs root\n");
        return 0;
    }
    if (build_rootfs() < 0) {
        printf("1..0 # SKIP cannot build a test rootfs (busybox?)\n");
        return 0;
    }
    run(false, false);
    check_host_untouched();
    run(true, true);
    check_host_untouched();
    root_propagation = "shared";
    run(false, false);
    check_host_untouched();
    /* Every destination again through the user-space walk. */
    root_propagation = NULL;
    brig_path_force_fallback = true;
    run(false, false);
    check_host_untouched();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", bundle);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", bundle);
    return unit_done();
}
