#define _GNU_SOURCE
/*
 * bench-floor: what the kernel itself costs for the containers of
 * tests/bench/, with no runtime around it.
 *
 *   bench-floor run CGROUP_PARENT ROOTFS   # like `run` of /bin/true
 *   bench-floor exec CGROUP_ROOT PID       # like `exec` of /bin/true into PID
 *
 * `run` does what brig's default spec asks of the kernel and nothing more: a
 * fresh cgroup under CGROUP_PARENT, clone3 into it with the same namespaces,
 * loopback up in the new network namespace (as every runtime brings it up),
 * the same mounts (proc, /dev tmpfs with its device nodes, devpts, shm,
 * mqueue, sysfs, cgroup2, the masked and read-only paths, a read-only root),
 * the hostname, pivot_root, execve of /bin/true, wait, and rmdir of the
 * cgroup. `exec` joins PID's namespaces and cgroup (CGROUP_ROOT is the
 * cgroup2 mount), forks into them, execs /bin/true and waits. No parsing, no
 * state, no checks: the smallest program that does the same work. Exits 0
 * when /bin/true did, 1 with a message otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "bench-floor: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static void mnt(const char *src, const char *dst, const char *type, unsigned long flags,
                const char *data)
{
    if (mount(src, dst, type, flags, data) < 0)
        die(dst);
}

/* Masked and read-only paths that this kernel does not have are skipped, as
 * runtimes do. */
static void mnt_if_present(const char *src, const char *dst, const char *type, unsigned long flags,
                           const char *data)
{
    if (mount(src, dst, type, flags, data) < 0 && errno != ENOENT)
        die(dst);
}

static pid_t clone_into(unsigned long long flags, int cgroup_fd)
{
    struct clone_args args = {
        .flags = flags | CLONE_INTO_CGROUP,
        .exit_signal = SIGCHLD,
        .cgroup = (unsigned long long) cgroup_fd,
    };
    return (pid_t) syscall(SYS_clone3, &args, sizeof(args));
}

static int wait_true(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) < 0)
        die("waitpid");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static void loopback_up(void)
{
    struct ifreq ifr = { .ifr_name = "lo" };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        die("lo");
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        die("lo up");
    close(fd);
}

static void container_init(const char *rootfs)
{
    static const struct {
        const char *path;
        unsigned major, minor;
    } devices[] = { { "dev/null", 1, 3 },   { "dev/zero", 1, 5 },    { "dev/full", 1, 7 },
                    { "dev/random", 1, 8 }, { "dev/urandom", 1, 9 }, { "dev/tty", 5, 0 } };
    static const char *const masked_dirs[] = { "proc/acpi", "proc/asound", "proc/scsi",
                                               "sys/firmware", "sys/devices/virtual/powercap" };
    static const char *const masked_files[] = { "proc/kcore",         "proc/keys",
                                                "proc/latency_stats", "proc/timer_list",
                                                "proc/timer_stats",   "proc/sched_debug" };
    static const char *const readonly[] = { "proc/bus", "proc/fs", "proc/irq", "proc/sys",
                                            "proc/sysrq-trigger" };
    const unsigned long ro = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

    loopback_up();
    mnt(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
    mnt(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL);
    if (chdir(rootfs) < 0)
        die(rootfs);
    mnt("proc", "proc", "proc", 0, NULL);
    mnt("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k");
    mkdir("dev/pts", 0755);
    mnt("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
        "newinstance,ptmxmode=0666,mode=0620,gid=5");
    mkdir("dev/shm", 0755);
    mnt("shm", "dev/shm", "tmpfs", MS_NOSUID | MS_NOEXEC | MS_NODEV, "mode=1777,size=65536k");
    mkdir("dev/mqueue", 0755);
    mnt("mqueue", "dev/mqueue", "mqueue", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL);
    mnt("sysfs", "sys", "sysfs", MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY, NULL);
    mnt("cgroup2", "sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY, NULL);
    for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
        if (mknod(devices[i].path, S_IFCHR | 0666, makedev(devices[i].major, devices[i].minor)) < 0)
            die(devices[i].path);
    symlink("/proc/self/fd", "dev/fd");
    symlink("/proc/self/fd/0", "dev/stdin");
    symlink("/proc/self/fd/1", "dev/stdout");
    symlink("/proc/self/fd/2", "dev/stderr");
    symlink("pts/ptmx", "dev/ptmx");
    if (sethostname("brig", 4) < 0)
        die("sethostname");
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        die("pivot_root");
    mnt(NULL, ".", NULL, MS_REC | MS_SLAVE, NULL);
    if (umount2(".", MNT_DETACH) < 0)
        die("umount old root");
    for (size_t i = 0; i < sizeof(readonly) / sizeof(readonly[0]); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/%s", readonly[i]);
        if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) == 0)
            mnt(NULL, path, NULL, ro, NULL);
        else if (errno != ENOENT)
            die(path);
    }
    for (size_t i = 0; i < sizeof(masked_dirs) / sizeof(masked_dirs[0]); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/%s", masked_dirs[i]);
        mnt_if_present("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    }
    for (size_t i = 0; i < sizeof(masked_files) / sizeof(masked_files[0]); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/%s", masked_files[i]);
        mnt_if_present("/dev/null", path, NULL, MS_BIND, NULL);
    }
    mnt(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
    char *const argv[] = { "/bin/true", NULL };
    execve(argv[0], argv, (char *const[]){ "PATH=/bin", NULL });
    die("execve /bin/true");
}

static int floor_run(const char *cgroup_parent, const char *rootfs)
{
    char cgroup[4096];
    snprintf(cgroup, sizeof(cgroup), "%s/bench-floor-%d", cgroup_parent, (int) getpid());
    if (mkdir(cgroup, 0755) < 0)
        die(cgroup);
    int cgroup_fd = open(cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cgroup_fd < 0)
        die(cgroup);
    pid_t pid = clone_into(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
                               | CLONE_NEWCGROUP,
                           cgroup_fd);
    if (pid < 0)
        die("clone3");
    if (pid == 0)
        container_init(rootfs);
    int rc = wait_true(pid);
    if (rmdir(cgroup) < 0)
        die(cgroup);
    return rc;
}

static int floor_exec(const char *cgroup_root, const char *target)
{
    static const char *const kinds[] = { "cgroup", "ipc", "uts", "net", "pid", "mnt" };
    char path[4096], line[4096];
    int fds[6];

    for (size_t i = 0; i < 6; i++) {
        snprintf(path, sizeof(path), "/proc/%s/ns/%s", target, kinds[i]);
        if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            die(path);
    }
    snprintf(path, sizeof(path), "/proc/%s/cgroup", target);
    FILE *f = fopen(path, "re");
    if (f == NULL || fgets(line, sizeof(line), f) == NULL)
        die(path);
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    const char *rel = strstr(line, "::");
    snprintf(path, sizeof(path), "%s%s", cgroup_root, rel ? rel + 2 : "");
    int cgroup_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cgroup_fd < 0)
        die(path);
    for (size_t i = 0; i < 6; i++)
        if (setns(fds[i], 0) < 0)
            die(kinds[i]);
    pid_t pid = clone_into(0, cgroup_fd);
    if (pid < 0)
        die("clone3");
    if (pid == 0) {
        if (chdir("/") < 0)
            die("chdir");
        char *const argv[] = { "/bin/true", NULL };
        execve(argv[0], argv, (char *const[]){ "PATH=/bin", NULL });
        die("execve /bin/true");
    }
    return wait_true(pid);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "run") == 0)
        return floor_run(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "exec") == 0)
        return floor_exec(argv[2], argv[3]);
    fprintf(stderr, "usage: bench-floor run CGROUP_PARENT ROOTFS | exec CGROUP_ROOT PID\n");
    return 2;
}
