#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/netlink.h"
#include "unit.h"

/* Flags of "lo" as the kernel reports them; -1 on error. */
static int lo_flags(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
    close(fd);
    return r < 0 ? -1 : (unsigned short) ifr.ifr_flags;
}

static int loopback_in_new_netns(void)
{
    if (unshare(CLONE_NEWNET) < 0)
        return 10;
    int before = lo_flags();
    if (before < 0)
        return 11;
    if (before & IFF_UP)
        return 12; /* a fresh namespace starts with lo down */
    brig_error_t err = NULL;
    if (brig_netlink_loopback_up(&err) < 0) {
        printf("#   %s\n", err->msg);
        return 13;
    }
    int after = lo_flags();
    if (after < 0 || !(after & IFF_UP))
        return 14;
    /* Idempotent: asking again is not an error. */
    if (brig_netlink_loopback_up(&err) < 0)
        return 15;
    return 0;
}

/* Without CAP_NET_ADMIN the kernel refuses; the error must carry errno. */
static int loopback_unprivileged(void)
{
    if (unshare(CLONE_NEWNET) < 0)
        return 20;
    if (setresuid(65534, 65534, 65534) < 0)
        return 21;
    brig_error_t err = NULL;
    if (brig_netlink_loopback_up(&err) == 0)
        return 22;
    if (err->errnum != EPERM || strstr(err->msg, "`lo`") == NULL) {
        printf("#   %s\n", err->msg);
        return 23;
    }
    return 0;
}

static int in_child(int (*fn)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int r = fn();
        fflush(stdout);
        _exit(r);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("# skip: needs root for a network namespace\n");
        CHECK(1, "skipped");
        return unit_done();
    }
    int r = in_child(loopback_in_new_netns);
    CHECK(r == 0, "lo is down in a new netns and up after brig_netlink_loopback_up");
    if (r != 0)
        printf("#   child step %d\n", r);
    r = in_child(loopback_unprivileged);
    CHECK(r == 0, "an unprivileged caller gets an EPERM error that names lo");
    if (r != 0)
        printf("#   child step %d\n", r);
    return unit_done();
}
