#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "brig.h"
#include "cli.h"
#include "container.h"
#include "create_flags.h"
#include "terminal.h"
#include "utils.h"

static const char usage[] =
    "Usage: brig run [options] ID\n\n"
    "Create and start a container, wait for its process and delete it.\n"
    "Exits with the process's status (128+N when signal N killed it).\n"
    "Signals sent to brig are forwarded to the container's process.\n\n"
    "Options:\n"
    CREATE_FLAGS_HELP
    "  -d, --detach             return once started; don't wait or delete\n"
    "      --keep               don't delete the container after it exits\n"
    "      --no-subreaper       don't adopt the container's orphans\n"
    "  -h, --help               print this help\n";

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
static int wait_forwarding(int sfd, pid_t init, int master)
{
    int status = 255;
    bool stdin_open = master >= 0, master_open = master >= 0, done = reap(init, &status);
    while (!done) {
        struct pollfd p[3] = {
            { .fd = sfd, .events = POLLIN },
            { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
            { .fd = master_open ? master : -1, .events = POLLIN },
        };
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 255;
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

int brig_cmd_run(int argc, char **argv)
{
    struct brig_create_options o;
    struct create_flags extra;
    int done = create_flags_parse(argc, argv, "+b:dh", usage, &o, &extra);
    if (done >= 0)
        return done;
    int master = -1;
    /* In the foreground without a console socket, brig itself is the
     * terminal's other end. */
    if (!extra.detach && !extra.console_socket)
        o.pty_master = &master;

    /* Signals are blocked before the container exists (its init unblocks
     * them for itself), so none is lost between create and the wait. */
    sigset_t forwarded, old;
    sigfillset(&forwarded);
    sigdelset(&forwarded, SIGSEGV);
    sigdelset(&forwarded, SIGBUS);
    sigdelset(&forwarded, SIGILL);
    sigdelset(&forwarded, SIGFPE);
    if (!extra.detach)
        sigprocmask(SIG_BLOCK, &forwarded, &old);
    if (!extra.detach && !extra.no_subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 1);

    brig_error_t err = NULL, warning = NULL;
    pid_t init;
    if (brig_container_create(&o, &init, &err) < 0)
        return brig_fail(&err);
    if (brig_container_start(o.root, o.id, &warning, &err) < 0) {
        brig_error_t ignored = NULL;
        brig_container_delete(o.root, o.id, true, &ignored, &ignored);
        brig_error_release(&ignored);
        return brig_fail(&err);
    }
    brig_warn(&warning);
    if (extra.detach)
        return 0;

    int sfd = signalfd(-1, &forwarded, SFD_CLOEXEC);
    if (sfd < 0)
        return brig_fail_msg("run: signalfd: %m");
    struct termios saved;
    bool raw = false;
    if (master >= 0 && isatty(STDIN_FILENO)) {
        brig_terminal_copy_size(STDIN_FILENO, master);
        raw = brig_terminal_make_raw(STDIN_FILENO, &saved, &warning) == 0;
        brig_error_release(&warning);
    }
    int status = wait_forwarding(sfd, init, master);
    if (raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (master >= 0)
        close(master);
    close(sfd);
    /* The container's status is what run reports, even when the clean-up
     * after it went wrong: that is said on stderr. */
    if (!extra.keep && brig_container_delete(o.root, o.id, true, &warning, &err) < 0)
        brig_warn(&err);
    brig_warn(&warning);
    return status;
}
