#define _GNU_SOURCE
/* brig_process_take_stdio: the fds a caller hands create or exec become
 * the new process's 0, 1 and 2, also when some of them are numbered 0-2
 * themselves, and they survive execve. Each case runs in a child, which
 * reports what it found through its exit status. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/process.h"
#include "unit.h"

static bool same_file(int a, int b)
{
    struct stat x, y;
    return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

/* Runs take_stdio({want[0], want[1], want[2]}) in a child; its exit
 * status has bit i set when fd i is not the file want[i] was before, or
 * is close-on-exec; 64 when the call failed. */
static int in_child(const int want[3], const int refs[3])
{
    pid_t pid = fork();
    if (pid == 0) {
        brig_error_t err = NULL;
        if (brig_process_take_stdio(want, &err) < 0)
            _exit(64);
        int bad = 0;
        for (int i = 0; i < 3; i++)
            if (!same_file(i, refs[i]) || (fcntl(i, F_GETFD) & FD_CLOEXEC))
                bad |= 1 << i;
        _exit(bad);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int main(void)
{
    int a[2], b[2];
    if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
        return 1;
    /* refs: fds that stay open in the parent, to compare the child's with. */
    const int plain[3] = { a[0], b[1], b[1] };
    CHECK(in_child(plain, plain) == 0, "three fds above 2 become 0, 1, 2, without close-on-exec");
    int out_copy = dup(1), err_copy = dup(2);
    /* 2 and 1 swapped, 0 from a pipe: a naive dup2 in order would lose one. */
    const int swapped[3] = { a[0], 2, 1 };
    const int swapped_refs[3] = { a[0], err_copy, out_copy };
    CHECK(in_child(swapped, swapped_refs) == 0, "given fds numbered 0-2 are not overwritten");
    const int closed[3] = { a[0], 999, b[1] };
    CHECK(in_child(closed, plain) == 64, "a closed fd is an error");
    close(out_copy);
    close(err_copy);
    return unit_done();
}
