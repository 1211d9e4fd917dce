#define _GNU_SOURCE
/* Waiting for a container's process in the foreground (run, exec):
 * signals forwarded to it, its terminal relayed, an optional time limit. */
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "process/terminal.h"
#include "base/utils.h"

void brig_forwarded_signals(sigset_t *set)
{
    sigfillset(set);
    sigdelset(set, SIGSEGV);
    sigdelset(set, SIGBUS);
    sigdelset(set, SIGILL);
    sigdelset(set, SIGFPE);
}

static int exit_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 255;
}

/* Reaps every child that is done; returns true once `init` is among them. */
static bool reap(pid_t init, int *status)
{
    bool done = false;
    int w;
    pid_t pid;
    while ((pid = waitpid(-1, &w, WNOHANG)) > 0) {
        if (pid == init) {
            *status = exit_status(w);
            done = true;
        }
    }
    return done;
}

/* Copies what is readable on `from` to `to`; false at EOF or error (EIO
 * is how a pty master says every slave fd is closed). */
static bool pump(int from, int to)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0)
        return false;
    return brig_write_all(to, buf, (size_t) n) == 0;
}

/* Our stdin ended: type the terminal's end-of-file character, so a program
 * reading the pty sees EOF as it would at a keyboard. */
static void send_eof(int master)
{
    struct termios t;
    char eof = tcgetattr(master, &t) == 0 ? (char) t.c_cc[VEOF] : 4;
    brig_write_all(master, &eof, 1);
}

/* Waits for the init, forwarding every signal brig receives to it and,
 * with a terminal, relaying between our stdio and the pty master. */
int brig_wait_forwarding(int sfd, pid_t init, int master, int timeout_ms, bool *timed_out)
{
    int status = 255;
    bool stdin_open = master >= 0, master_open = master >= 0, done = reap(init, &status);
    struct timespec deadline;
    brig_deadline_in(&deadline, timeout_ms);
    bool killed = false;
    while (!done) {
        struct pollfd p[3] = {
            { .fd = sfd, .events = POLLIN },
            { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
            { .fd = master_open ? master : -1, .events = POLLIN },
        };
        int wait_ms = timeout_ms > 0 && !killed ? brig_ms_until(&deadline) : -1;
        int ready = poll(p, 3, wait_ms);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            return 255;
        }
        if (ready == 0 && wait_ms >= 0) {
            /* Time is up: the whole process group goes, children included. */
            kill(-init, SIGKILL);
            kill(init, SIGKILL);
            killed = true;
            if (timed_out)
                *timed_out = true;
            continue;
        }
        if (p[1].revents && !(stdin_open = pump(STDIN_FILENO, master)))
            send_eof(master);
        if (p[2].revents)
            master_open = pump(master, STDOUT_FILENO);
        if (!(p[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t) sizeof si)
            continue;
        if (si.ssi_signo == SIGCHLD)
            done = reap(init, &status);
        else if (si.ssi_signo == SIGWINCH && master >= 0)
            brig_terminal_copy_size(STDIN_FILENO, master);
        else
            kill(init, (int) si.ssi_signo);
    }
    /* What the process wrote just before it exited is still in the pty. */
    if (master_open) {
        fcntl(master, F_SETFL, O_NONBLOCK);
        while (pump(master, STDOUT_FILENO)) {
            struct pollfd p = { .fd = master, .events = POLLIN };
            if (poll(&p, 1, 0) <= 0)
                break;
        }
    }
    return status;
}

int brig_wait_foreground(pid_t pid, int master, int timeout_ms, bool *timed_out)
{
    sigset_t forwarded;
    brig_forwarded_signals(&forwarded);
    int sfd = signalfd(-1, &forwarded, SFD_CLOEXEC);
    if (sfd < 0)
        return brig_fail_msg("signalfd: %s", strerror(errno));
    struct termios saved;
    bool raw = false;
    if (master >= 0 && isatty(STDIN_FILENO)) {
        brig_error_t err = NULL;
        brig_terminal_copy_size(STDIN_FILENO, master);
        raw = brig_terminal_make_raw(STDIN_FILENO, &saved, &err) == 0;
        brig_error_release(&err);
    }
    bool out = false;
    int status = brig_wait_forwarding(sfd, pid, master, timeout_ms, &out);
    if (raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    close(sfd);
    if (timed_out)
        *timed_out = out;
    return out ? 124 : status;
}
