#define _GNU_SOURCE
/* CVE-2019-5736: a process that enters a container is, until its execve,
 * the brig binary, and its /proc/PID/exe is a door to that host file. A
 * container whose program is `#!/proc/self/exe` even makes the kernel run
 * brig inside the container, dumpable, at the very moment of our execve;
 * the container then opens /proc/PID/exe, waits for the last brig to exit
 * (no more ETXTBSY) and rewrites the host's runtime through its fd. Being
 * non-dumpable does not close that door. So the commands that put processes
 * into a container first make sure their executable is a file nobody can
 * write: a detached read-only bind mount of brig's own file, which the
 * process is moved onto in place (selfexe_rebind.c), or which it
 * re-executes from where that can't be done; failing both, a memfd copy
 * sealed against writes. What a container can reach through /proc is then
 * that file, and the host's writable one never. */
#include "selfexe/selfexe.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <limits.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

extern char **environ;

#define SELF_EXE_ENV "BRIG_SELF_EXE"
/* "reexec": skip the in-place move (a debugger's breakpoints, set before
 * it, would be lost with the old text). */
#define SELF_EXE_MODE_ENV "BRIG_SELFEXE"

#define SEALS_NEEDED (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

bool brig_selfexe_is_sealed(void)
{
    cleanup_close int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & SEALS_NEEDED) == SEALS_NEEDED;
}

/* A binary on a read-only mount can't be rewritten through /proc/PID/exe
 * either (EROFS), so the move or the re-exec is skipped there: installing
 * brig on a read-only file system is the fast way to start. A memfd lives
 * on the kernel's internal tmpfs (or hugetlbfs), so only there can the
 * file be a sealed copy: elsewhere the seals aren't looked for. */
static bool selfexe_needs_guard(void)
{
    struct statfs st;
    if (statfs("/proc/self/exe", &st) < 0)
        return !brig_selfexe_is_sealed();
    if (st.f_flags & ST_RDONLY)
        return false;
    if (st.f_type == TMPFS_MAGIC || st.f_type == HUGETLBFS_MAGIC)
        return !brig_selfexe_is_sealed();
    return true;
}

static int memfd_for_exec(void)
{
    /* Kernels ≥ 6.3 want MFD_EXEC said out loud (vm.memfd_noexec); older
     * ones refuse the unknown flag and are executable by default. */
    int fd = (int) syscall(SYS_memfd_create, "brig", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (fd < 0 && errno == EINVAL)
        fd = (int) syscall(SYS_memfd_create, "brig", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    return fd;
}

static int copy_self(int to, brig_error_t *err)
{
    cleanup_close int from = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (from < 0 || fstat(from, &st) < 0)
        return brig_error_set(err, errno, "open `/proc/self/exe`");
    off_t left = st.st_size;
    while (left > 0) {
        ssize_t n = sendfile(to, from, NULL, (size_t) left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return brig_error_set(err, n < 0 ? errno : EIO, "copy the brig executable");
        left -= n;
    }
    return 0;
}

/* Without <linux/mount.h>, which clashes with glibc's <sys/mount.h>. */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
struct selfexe_mount_attr {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* A detached, read-only bind mount of our own file (open_tree and
 * mount_setattr, Linux 5.12): executing through it guards the host file
 * like the sealed copy does (writes get EROFS), without copying a byte
 * into memory that each long-lived process (the shim) would then hold.
 * Needs CAP_SYS_ADMIN; -1 when it can't be had. */
static int readonly_clone_of_self(void)
{
    int fd = (int) syscall(SYS_open_tree, AT_FDCWD, "/proc/self/exe",
                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (fd < 0)
        return -1;
    struct selfexe_mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
    if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The installed file's path, for the files that sit beside it in a build
 * tree: once /proc/self/exe names a detached mount or a memfd, it no
 * longer says. */
static char selfexe_original[PATH_MAX];

int brig_selfexe_path(char *buf, size_t size)
{
    const char *known = selfexe_original[0] ? selfexe_original : getenv(SELF_EXE_ENV);
    if (known && *known && strlen(known) < size) {
        strcpy(buf, known);
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

/* Moves this very process onto the read-only clone: reopened for reading
 * (an O_PATH fd can be neither mapped nor made the exe). */
static int rebind_onto(int tree, brig_error_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", tree);
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "reopen the read-only clone of brig");
    return brig_selfexe_rebind(fd, err);
}

/* The read-only view that brig_selfexe_defer() opened and nobody has
 * moved onto yet. */
static int deferred_fd = -1;

/* BRIG_SELFEXE=reexec: no move in place. */
static bool reexec_asked(void)
{
    const char *mode = getenv(SELF_EXE_MODE_ENV);
    return mode && strcmp(mode, "reexec") == 0;
}

/* Once moved, /proc/self/exe no longer says where we came from. */
static void remember_original(void)
{
    ssize_t n = readlink("/proc/self/exe", selfexe_original, sizeof selfexe_original - 1);
    selfexe_original[n > 0 ? n : 0] = '\0';
}

/* Whether the kernel will let this process point /proc/self/exe elsewhere
 * (selfexe_rebind.c): CAP_SYS_RESOURCE for the plain request, or
 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE for the map request. */
static bool may_set_exe_file(void)
{
    struct __user_cap_header_struct head = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &head, data) < 0)
        return false;
    uint64_t eff = data[0].effective | (uint64_t) data[1].effective << 32;
    return eff
           & ((1ULL << CAP_SYS_RESOURCE) | (1ULL << CAP_SYS_ADMIN)
              | (1ULL << CAP_CHECKPOINT_RESTORE));
}

static int guard_now(char **argv, int cached, brig_error_t *err);

int brig_selfexe_defer(char **argv, brig_error_t *err)
{
    if (!selfexe_needs_guard())
        return 0;
    int cached = reexec_asked() ? -1 : brig_selfexe_cached_readonly(BRIG_SELFEXE_CACHE_DIR);
    if (cached >= 0 && may_set_exe_file()) {
        deferred_fd = cached;
        return 0;
    }
    int r = guard_now(argv, cached, err);
    if (cached >= 0)
        close(cached);
    return r;
}

int brig_selfexe_deferred_fd(void)
{
    return deferred_fd;
}

int brig_selfexe_finish(brig_error_t *err)
{
    if (deferred_fd < 0)
        return 0;
    remember_original();
    int r = brig_selfexe_rebind(deferred_fd, err);
    close(deferred_fd);
    deferred_fd = -1;
    return r < 0 ? brig_error_wrap(err, "guard brig's executable") : 0;
}

int brig_selfexe_protect(char **argv, brig_error_t *err)
{
    if (!selfexe_needs_guard())
        return 0;
    cleanup_close int cached = reexec_asked()
                                   ? -1
                                   : brig_selfexe_cached_readonly(BRIG_SELFEXE_CACHE_DIR);
    return guard_now(argv, cached, err);
}

/* The guard, at once: onto `cached` (the read-only view an earlier brig of
 * this file left, selfexe_cache.c; -1 when there is none), which costs no
 * mount of our own, else onto a detached clone, else by re-executing. */
static int guard_now(char **argv, int cached, brig_error_t *err)
{
    remember_original();
    bool reexec_only = reexec_asked();
    if (cached >= 0 && !reexec_only) {
        brig_error_t ignored = NULL;
        if (brig_selfexe_rebind(cached, &ignored) == 0)
            return 0;
        brig_error_release(&ignored);
    }
    cleanup_close int ro = readonly_clone_of_self();
    if (ro >= 0 && !reexec_only) {
        brig_error_t ignored = NULL;
        if (rebind_onto(ro, &ignored) == 0)
            return 0;
        brig_error_release(&ignored); /* re-executing does the same job */
    }
    if (selfexe_original[0])
        setenv(SELF_EXE_ENV, selfexe_original, 1);
    if (ro >= 0)
        syscall(SYS_execveat, ro, "", argv, environ, AT_EMPTY_PATH);
    /* Fall back to the sealed copy. */
    cleanup_close int fd = memfd_for_exec();
    if (fd < 0)
        return brig_error_set(err, errno, "memfd_create for a sealed copy of brig");
    if (copy_self(fd, err) < 0)
        return -1;
    if (fcntl(fd, F_ADD_SEALS, SEALS_NEEDED) < 0)
        return brig_error_set(err, errno, "seal the copy of brig");
    /* A close-on-exec fd is fine for an ELF binary: the kernel has it open
     * by the time the fd table is cleaned. */
    syscall(SYS_execveat, fd, "", argv, environ, AT_EMPTY_PATH);
    return brig_error_set(err, errno, "execute the sealed copy of brig");
}
