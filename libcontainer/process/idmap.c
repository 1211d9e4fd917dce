#define _GNU_SOURCE
#include "process/idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "process/namespaces.h"

/* The child only unshares and stops: nothing in it may allocate or lock,
 * as the parent may have threads. It dies with its parent, should the
 * parent die before it reaps it. */
static void hold_userns(pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(1);
    if (unshare(CLONE_NEWUSER) < 0)
        _exit(1);
    raise(SIGSTOP);
    _exit(0);
}

static int reap(pid_t pid)
{
    int status;
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

int brig_userns_for_maps(const struct brig_id_mapping *uids, size_t n_uids,
                         const struct brig_id_mapping *gids, size_t n_gids, brig_error_t *err)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return brig_error_set(err, errno, "id mapping: fork");
    if (pid == 0)
        hold_userns(parent);
    int status;
    pid_t got;
    while ((got = waitpid(pid, &status, WUNTRACED)) < 0 && errno == EINTR)
        ;
    if (got != pid || !WIFSTOPPED(status)) {
        reap(pid);
        return brig_error_set(err, got < 0 ? errno : EPERM,
                              "id mapping: make a user namespace (unshare)");
    }
    /* The maps as a spec's linux section would carry them, written as
     * for a container's init. */
    struct brig_linux l = {
        .uid_mappings = (struct brig_id_mapping *) uids,
        .n_uid_mappings = n_uids,
        .gid_mappings = (struct brig_id_mapping *) gids,
        .n_gid_mappings = n_gids,
    };
    int fd = -1;
    if (brig_ns_write_id_maps(pid, &l, err) == 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/user", pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            brig_error_set(err, errno, "id mapping: open `%s`", path);
    } else {
        brig_error_wrap(err, "id mapping");
    }
    reap(pid);
    return fd;
}

/* The source's file system type, for the message when it can't map ids. */
static const char *fs_name(int fd, char *buf, size_t size)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return "?";
    snprintf(buf, size, "0x%lx", (unsigned long) sf.f_type);
    return buf;
}

int brig_idmap_bind(const char *source, const char *target, int userns_fd, bool readonly,
                    brig_error_t *err)
{
    cleanup_close int tree = (int) syscall(SYS_open_tree, AT_FDCWD, source,
                                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0)
        return brig_error_set(err, errno, "id-mapped bind of `%s`: open_tree", source);
    struct mount_attr attr = {
        .attr_set = MOUNT_ATTR_IDMAP
                    | (readonly ? MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV : 0),
        .userns_fd = (unsigned long long) userns_fd,
    };
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
        int saved = errno;
        char type[32];
        if (brig_idmap_unsupported(saved))
            return brig_error_set(err, saved,
                                  "id-mapped bind of `%s`: the kernel or its file system "
                                  "(type %s) cannot do id-mapped mounts",
                                  source, fs_name(tree, type, sizeof type));
        return brig_error_set(err, saved, "id-mapped bind of `%s`: mount_setattr", source);
    }
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return brig_error_set(err, errno, "id-mapped bind of `%s` on `%s`: move_mount", source,
                              target);
    return 0;
}
