/* The in-place move onto a read-only clone of our own file: afterwards
 * /proc/self/exe is a file on a read-only mount, and the process is the
 * same process (code, initialised and relocated data, the heap). Each case
 * runs in a child, since the move changes the process for good. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "selfexe/selfexe.h"
#include "unit.h"

struct mount_attr_arg {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* Initialised data, and a pointer the loader relocates (it lands in the
 * RELRO part of the writable segment in a PIE). */
static int counter = 41;
static const char *const greeting = "still here";

static int readonly_clone_fd(void)
{
    int tree = (int) syscall(SYS_open_tree, AT_FDCWD, "/proc/self/exe", 1 /* CLONE */ | O_CLOEXEC);
    if (tree < 0)
        return -1;
    struct mount_attr_arg attr = { .attr_set = 1 /* RDONLY */ };
    if (syscall(SYS_mount_setattr, tree, "", 0x1000 /* AT_EMPTY_PATH */, &attr, sizeof attr) < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", tree);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Exit status bits, one per property, so the parent can name what broke. */
enum {
    MOVED = 1,
    EXE_READONLY = 2,
    DATA_KEPT = 4,
    HEAP_KEPT = 8,
    NO_WRITE = 16,
    RELRO_KEPT = 32,
};

static int relro_is_readonly(void)
{
    /* Writing to the relocated pointer must still fault: probe it in a
     * grandchild. */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* not a sanitizer's report */
        *(const char *volatile *) &greeting = NULL;
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static int moved_child(void)
{
    char *heap = strdup("heap before");
    int fd = readonly_clone_fd();
    brig_error_t err = NULL;
    if (fd < 0 || brig_selfexe_rebind(fd, &err) < 0) {
        if (err)
            printf("# %s\n", err->msg);
        return 0;
    }
    close(fd);
    int bits = MOVED;
    struct statvfs st;
    if (statvfs("/proc/self/exe", &st) == 0 && (st.f_flag & ST_RDONLY))
        bits |= EXE_READONLY;
    counter++;
    if (counter == 42 && strcmp(greeting, "still here") == 0)
        bits |= DATA_KEPT;
    if (strcmp(heap, "heap before") == 0)
        bits |= HEAP_KEPT;
    free(heap);
    int w = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
    if (w < 0 && (errno == EROFS || errno == ETXTBSY))
        bits |= NO_WRITE;
    if (relro_is_readonly())
        bits |= RELRO_KEPT;
    return bits;
}

/* Lines of /proc/self/mountinfo that name `dir`. */
static int mounts_under(const char *dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL)
        return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, dir) != NULL;
    fclose(f);
    return n;
}

/* The per-host read-only view (selfexe_cache.c), in a directory of the
 * test's own. */
static void test_cache(void)
{
    char dir[] = "/tmp/brig-selfexe-cache-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    struct stat self, st;
    struct statvfs vfs;
    stat("/proc/self/exe", &self);

    /* A stale entry: a read-only bind of a file that is then deleted, as
     * an older brig's is once it has been replaced. */
    char dead_src[PATH_MAX], dead[PATH_MAX];
    snprintf(dead_src, sizeof dead_src, "%s.old-brig", dir);
    snprintf(dead, sizeof dead, "%s/1-2", dir);
    int made = open(dead_src, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
    int target = open(dead, O_WRONLY | O_CREAT | O_CLOEXEC, 0400);
    bool stale_ready = made >= 0 && target >= 0 && write(made, "old", 3) == 3
                       && mount(dead_src, dead, NULL, MS_BIND, NULL) == 0 && unlink(dead_src) == 0;
    if (made >= 0)
        close(made);
    if (target >= 0)
        close(target);
    CHECK(stale_ready, "cache: a stale entry to clean up");

    int fd = brig_selfexe_cached_readonly(dir);
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == self.st_ino && st.st_dev == self.st_dev
              && fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY),
          "cache: the first call makes a read-only view of our own file");
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    CHECK(fd >= 0 && open(path, O_WRONLY | O_CLOEXEC) < 0 && (errno == EROFS || errno == ETXTBSY),
          "cache: the view can't be opened for writing");
    if (fd >= 0)
        close(fd);
    CHECK(access(dead, F_OK) < 0 && mounts_under(dead) == 0,
          "cache: the entry of a deleted file is unmounted and removed");
    int before = mounts_under(dir);
    fd = brig_selfexe_cached_readonly(dir);
    CHECK(fd >= 0 && before == 1 && mounts_under(dir) == 1,
          "cache: the second call opens the same view, mounting nothing");
    if (fd >= 0)
        close(fd);

    /* Our entry's name, taken by something that isn't our file. */
    char entry[PATH_MAX];
    snprintf(entry, sizeof entry, "%s/%llx-%llx", dir, (unsigned long long) self.st_dev,
             (unsigned long long) self.st_ino);
    umount2(entry, MNT_DETACH);
    int other = open(entry, O_WRONLY | O_TRUNC | O_CLOEXEC);
    bool replaced = other >= 0 && write(other, "not brig", 8) == 8;
    if (other >= 0)
        close(other);
    fd = brig_selfexe_cached_readonly(dir);
    CHECK(replaced && fd < 0 && mounts_under(dir) == 0,
          "cache: a file that isn't ours in the entry's place is left alone, and not used");
    if (fd >= 0)
        close(fd);
    unlink(entry);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "re-executed") == 0)
        return 4; /* the guard re-executed instead of moving in place */
    char before[PATH_MAX];
    CHECK(brig_selfexe_path(before, sizeof before) == 0, "our path is known before the move");

    struct statvfs st;
    int on_readonly = statvfs("/proc/self/exe", &st) == 0 && (st.f_flag & ST_RDONLY);
    CHECK(!on_readonly,
          "the test binary starts on a writable mount (else the move proves nothing)");

    pid_t pid = fork();
    if (pid == 0)
        _exit(moved_child());
    int status;
    waitpid(pid, &status, 0);
    int bits = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (!WIFEXITED(status))
        printf("# the moved child died of signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    CHECK(bits & MOVED, "the process moves onto the read-only clone");
    CHECK(bits & EXE_READONLY, "/proc/self/exe is then on a read-only mount");
    CHECK(bits & DATA_KEPT, "initialised and relocated data survive the move");
    CHECK(bits & HEAP_KEPT, "the heap survives the move");
    CHECK(bits & NO_WRITE, "/proc/self/exe can't be opened for writing");
    CHECK(bits & RELRO_KEPT, "relocated read-only data stays read-only");

    /* The whole guard, as brig's commands call it: returns in place (no
     * re-exec: argv would start this test over), and the path of the file
     * we came from is still known. */
    pid = fork();
    if (pid == 0) {
        brig_error_t err = NULL;
        char *again[] = { argv[0], "re-executed", NULL };
        if (brig_selfexe_protect(again, &err) < 0)
            _exit(1);
        char after[PATH_MAX];
        if (brig_selfexe_path(after, sizeof after) < 0 || strcmp(after, before) != 0)
            _exit(2);
        if (statvfs("/proc/self/exe", &st) < 0 || !(st.f_flag & ST_RDONLY))
            _exit(3);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        printf("# brig_selfexe_protect's child exited %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "brig_selfexe_protect guards in place and keeps our path");
    test_cache();

    /* The deferred guard (create, run): nothing moves until asked; a child
     * moves itself onto the view, the caller stays; finish moves the
     * caller. */
    pid = fork();
    if (pid == 0) {
        brig_error_t err = NULL;
        char *again[] = { argv[0], "re-executed", NULL };
        if (brig_selfexe_defer(again, &err) < 0 || brig_selfexe_deferred_fd() < 0)
            _exit(1);
        if (statvfs("/proc/self/exe", &st) < 0 || (st.f_flag & ST_RDONLY))
            _exit(2); /* moved too early */
        pid_t init = fork();
        if (init == 0) {
            brig_error_t e = NULL;
            _exit(brig_selfexe_rebind(brig_selfexe_deferred_fd(), &e) == 0
                          && statvfs("/proc/self/exe", &st) == 0 && (st.f_flag & ST_RDONLY)
                      ? 0
                      : 1);
        }
        int s2;
        if (waitpid(init, &s2, 0) != init || !WIFEXITED(s2) || WEXITSTATUS(s2) != 0)
            _exit(3);
        if (statvfs("/proc/self/exe", &st) < 0 || (st.f_flag & ST_RDONLY))
            _exit(4); /* the child's move is the child's alone */
        char after[PATH_MAX];
        if (brig_selfexe_finish(&err) < 0 || brig_selfexe_deferred_fd() >= 0
            || statvfs("/proc/self/exe", &st) < 0 || !(st.f_flag & ST_RDONLY))
            _exit(5);
        if (brig_selfexe_path(after, sizeof after) < 0 || strcmp(after, before) != 0)
            _exit(6);
        _exit(brig_selfexe_finish(&err) == 0 ? 0 : 7); /* a second finish: nothing to do */
    }
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        printf("# the deferred guard's child exited %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "brig_selfexe_defer leaves the move to a child or to brig_selfexe_finish");
    return unit_done();
}
