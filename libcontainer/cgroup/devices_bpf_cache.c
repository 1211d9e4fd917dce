#define _GNU_SOURCE
/* Device programs, loaded once per host and pinned in bpffs.
 *
 * The verifier is the dearest part of a container's cgroup set-up (about
 * half a millisecond for the default rules), and thousands of containers ask
 * for the very same program. So a loaded program is pinned under
 * /sys/fs/bpf/brig as devices-<SHA-256 of its instructions>, and the next
 * container with the same rules attaches that pinned program instead of
 * loading its own. A pinned program can't be changed, and its name is its
 * content, so reusing one is the same as loading it again.
 *
 * The pins are trusted only from a directory owned by us and writable by
 * nobody else, on a real bpffs, and only if the object there is a device
 * program; anything else there is ignored and the program is loaded as if
 * there were no cache. Where /sys/fs/bpf is not a bpffs, nothing is cached.
 * The cache costs one small program per distinct set of device rules until
 * reboot, or until someone removes the pins.
 *
 * It sits between the attach step (devices_bpf_attach.c), which asks it
 * for a program, and the loader (devices_bpf_load.c), which it calls on a
 * miss. */
#include "cgroup/devices_bpf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sha256.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

/* The pin directory, created if its parent is a bpffs; -1 when there is
 * no trustworthy one. */
static int open_pin_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        cleanup_free char *parent = strdup(dir);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        struct statfs pfs;
        if (slash == NULL || slash == parent)
            return -1;
        *slash = '\0';
        if (statfs(parent, &pfs) < 0 || pfs.f_type != BPF_FS_MAGIC)
            return -1;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return -1;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    struct statfs fs;
    struct stat st;
    if (fstatfs(fd, &fs) < 0 || fs.f_type != BPF_FS_MAGIC || fstat(fd, &st) < 0
        || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The pinned object is a device program (and not a map, say). */
static bool is_device_program(int fd)
{
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    if (strcmp(target, "anon_inode:bpf-prog") != 0)
        return false;
    struct bpf_prog_info info;
    return brig_ebpf_program_info(fd, &info) == 0 && info.type == BPF_PROG_TYPE_CGROUP_DEVICE;
}

int brig_ebpf_devices_program(const char *pin_dir, const struct bpf_insn *insns, size_t len,
                              brig_error_t *err)
{
    cleanup_close int dir_fd = pin_dir ? open_pin_dir(pin_dir) : -1;
    if (dir_fd < 0)
        return brig_ebpf_devices_load(insns, len, err);
    char hash[65], path[128];
    brig_sha256_hex(insns, len * sizeof *insns, hash);
    snprintf(path, sizeof path, "/proc/self/fd/%d/devices-%.32s", dir_fd, hash);

    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.pathname = (uint64_t) (uintptr_t) path;
    int fd = brig_bpf(BPF_OBJ_GET, &attr);
    if (fd >= 0) {
        if (is_device_program(fd))
            return fd;
        close(fd);
    }
    fd = brig_ebpf_devices_load(insns, len, err);
    if (fd < 0)
        return -1;
    /* Two runtimes may race to pin the same program: either pin will do,
     * and a failure to pin only means the next container loads again. */
    memset(&attr, 0, sizeof attr);
    attr.pathname = (uint64_t) (uintptr_t) path;
    attr.bpf_fd = (uint32_t) fd;
    (void) brig_bpf(BPF_OBJ_PIN, &attr);
    return fd;
}
