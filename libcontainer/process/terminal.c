#define _GNU_SOURCE
#include "process/terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "process/sync.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

int brig_terminal_setup_init(const struct brig_process *p, int sync_fd, brig_error_t *err)
{
    /* /dev/ptmx of the container: the pty belongs to its devpts instance,
     * so nothing of the host's pts is reachable through it. */
    cleanup_close int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        return brig_error_set(err, errno, "open /dev/ptmx");
    if (unlockpt(master) < 0)
        return brig_error_set(err, errno, "unlock pty");
    /* TIOCGPTPEER opens the slave through the master, never through a
     * path under /dev/pts that the container could have replaced. */
    cleanup_close int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0)
        return brig_error_set(err, errno, "open pty slave");
    if (p->has_console_size) {
        struct winsize ws = { .ws_row = (unsigned short) p->console_height,
                              .ws_col = (unsigned short) p->console_width };
        if (ioctl(slave, TIOCSWINSZ, &ws) < 0)
            return brig_error_set(err, errno, "set console size");
    }
    struct termios t;
    if (p->terminal_raw_newlines) {
        if (tcgetattr(slave, &t) < 0)
            return brig_error_set(err, errno, "read the terminal's output mode");
        t.c_oflag &= ~(tcflag_t) ONLCR;
        if (tcsetattr(slave, TCSANOW, &t) < 0)
            return brig_error_set(err, errno, "set the terminal's output mode");
    }
    /* The process's own, in the group devpts gives it (tty, gid=5), as
     * runc leaves it: write(1) and wall reach it through that group. */
    if (fchown(slave, p->user.uid, (gid_t) -1) < 0 && errno != EINVAL)
        return brig_error_set(err, errno, "chown pty slave");
    if (brig_sync_send_fd(sync_fd, BRIG_SYNC_PTY_MASTER, master, err) < 0)
        return -1;
    for (int fd = 0; fd < 3; fd++)
        if (dup2(slave, fd) < 0)
            return brig_error_set(err, errno, "pty slave as fd %d", fd);
    if (ioctl(0, TIOCSCTTY, 0) < 0)
        return brig_error_set(err, errno, "set controlling terminal");
    return 0;
}

int brig_terminal_send_to_socket(const char *path, int master, brig_error_t *err)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof addr.sun_path)
        return brig_error_set(err, ENAMETOOLONG, "console socket `%s`", path);
    strcpy(addr.sun_path, path);
    cleanup_close int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return brig_error_set(err, errno, "console socket");
    if (connect(s, (struct sockaddr *) &addr, sizeof addr) < 0)
        return brig_error_set(err, errno, "connect to console socket `%s`", path);
    static const char name[] = "/dev/ptmx";
    if (brig_fd_send(s, name, sizeof name - 1, master) < 0)
        return brig_error_set(err, errno, "send pty master to `%s`", path);
    return 0;
}

int brig_terminal_make_raw(int fd, struct termios *saved, brig_error_t *err)
{
    if (tcgetattr(fd, saved) < 0)
        return brig_error_set(err, errno, "read terminal settings");
    struct termios raw = *saved;
    cfmakeraw(&raw);
    if (tcsetattr(fd, TCSANOW, &raw) < 0)
        return brig_error_set(err, errno, "set raw mode");
    return 0;
}

void brig_terminal_copy_size(int from, int to)
{
    struct winsize ws;
    if (ioctl(from, TIOCGWINSZ, &ws) == 0)
        ioctl(to, TIOCSWINSZ, &ws);
}
