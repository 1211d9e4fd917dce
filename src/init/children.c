#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "children.h"

int init_has_children(void)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* The parent pid from /proc/PID/stat; the command name may hold blanks and
 * parentheses, so the fields are read after its last ')'. */
static pid_t parent_of(const char *pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    cleanup_file FILE *f = fopen(path, "re");
    if (!f || !fgets(buf, sizeof buf, f))
        return -1;
    char *paren = strrchr(buf, ')');
    char state;
    int ppid;
    if (!paren || sscanf(paren + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return ppid;
}

size_t init_signal_adopted(const pid_t *skip, size_t n_skip, int sig)
{
    size_t n = 0;
    cleanup_dir DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    pid_t self = getpid();
    struct dirent *d;
    while ((d = readdir(proc))) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9' || parent_of(d->d_name) != self)
            continue;
        pid_t pid = (pid_t) strtol(d->d_name, NULL, 10);
        int skipped = 0;
        for (size_t i = 0; i < n_skip; i++)
            skipped |= skip[i] == pid;
        if (!skipped && kill(pid, sig) == 0)
            n++;
    }
    return n;
}
