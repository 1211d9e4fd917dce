#define _GNU_SOURCE
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "brig.h"
#include "cli.h"
#include "container/container.h"
#include "criu_flags.h"
#include "wait.h"

static const char usage[] =
    "Usage: brig restore [options] ID\n\n"
    "Restore a container from a checkpoint, under ID (the checkpointed id or\n"
    "a new one), with the bundle's config.json for its cgroup, limits and\n"
    "mounts. Without --detach, waits for the container like run and exits\n"
    "with its status.\n\n"
    "Options:\n" CRIU_FLAGS_HELP
    "  -b, --bundle DIR         the bundle (default: the current directory)\n"
    "  -d, --detach             return once restored; don't wait or delete\n"
    "      --pid-file FILE      write the restored init's pid to FILE\n"
    "      --no-subreaper       don't adopt the container's orphans\n"
    "      --no-pivot           accepted for runc compatibility (criu pivots)\n"
    "  -h, --help               print this help\n";

int brig_cmd_restore(int argc, char **argv)
{
    struct criu_flags f;
    int done = criu_flags_parse(argc, argv, true, usage, &f);
    if (done != BRIG_CLI_GO_ON)
        return done;
    struct brig_restore_options o = {
        .root = brig_globals.root,
        .id = f.id,
        .bundle = f.bundle,
        .pid_file = f.pid_file,
        .no_cgroup = brig_globals.no_cgroup,
        .systemd_cgroup = brig_globals.systemd_cgroup,
        .criu = f.criu,
    };
    /* As run does: signals held from before the container exists. */
    sigset_t forwarded;
    brig_forwarded_signals(&forwarded);
    if (!f.detach)
        sigprocmask(SIG_BLOCK, &forwarded, NULL);
    if (!f.detach && !f.no_subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    brig_error_t err = NULL, warning = NULL;
    pid_t init;
    if (brig_container_restore(&o, &init, &err) < 0)
        return brig_fail(&err);
    if (f.detach)
        return 0;
    int sfd = signalfd(-1, &forwarded, SFD_CLOEXEC);
    if (sfd < 0)
        return brig_fail_msg("restore: signalfd: %m");
    int status = brig_wait_forwarding(sfd, init, -1, 0, NULL);
    close(sfd);
    if (brig_container_delete(o.root, o.id, true, &warning, &err) < 0)
        brig_warn(&err);
    brig_warn(&warning);
    return status;
}
