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
#include "container/container.h"
#include "create_flags.h"
#include "wait.h"
#include "process/terminal.h"
#include "base/utils.h"

static const char usage[] =
    "Usage: brig run [options] ID\n\n"
    "Create and start a container, wait for its process and delete it.\n"
    "Exits with the process's status (128+N when signal N killed it).\n"
    "Signals sent to brig are forwarded to the container's process.\n\n"
    "Options:\n" CREATE_FLAGS_HELP
    "  -d, --detach             return once started; don't wait or delete\n"
    "  -t, --tty                give the process a terminal (as process.terminal)\n"
    "      --keep               don't delete the container after it exits\n"
    "      --no-subreaper       don't adopt the container's orphans\n"
    "  -h, --help               print this help\n";

int brig_cmd_run(int argc, char **argv)
{
    struct brig_create_options o;
    struct create_flags extra;
    int done = create_flags_parse(argc, argv, "+b:dth", usage, &o, &extra);
    if (done != BRIG_CLI_GO_ON)
        return done;
    int master = -1;
    /* In the foreground without a console socket, brig itself is the
     * terminal's other end. */
    if (!extra.detach && !extra.console_socket)
        o.pty_master = &master;

    /* Signals are blocked before the container exists (its init unblocks
     * them for itself), so none is lost between create and the wait. */
    sigset_t forwarded, old;
    brig_forwarded_signals(&forwarded);
    if (!extra.detach)
        sigprocmask(SIG_BLOCK, &forwarded, &old);
    if (!extra.detach && !extra.no_subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 1);

    struct create_bundle cb;
    brig_error_t err = NULL, warning = NULL;
    pid_t init;
    bool created = false;
    int prepared = create_prepare(&o, &extra, &cb);
    int made = prepared == BRIG_CLI_GO_ON
                   ? brig_container_create_started(&o, &init, &created, &warning, &err)
                   : -1;
    create_bundle_clear(&cb);
    if (prepared != BRIG_CLI_GO_ON)
        return prepared;
    if (made < 0) {
        /* A container that was created but failed to start goes too. */
        brig_error_t ignored = NULL;
        if (created)
            brig_container_delete(o.root, o.id, true, &ignored, &ignored);
        brig_error_release(&ignored);
        brig_error_release(&warning);
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
    int status = brig_wait_forwarding(sfd, init, master, 0, NULL);
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
