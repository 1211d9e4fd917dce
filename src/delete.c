#include "brig.h"
#include "cli.h"
#include "container/container.h"

static const char usage[] =
    "Usage: brig delete [options] ID\n\n"
    "Remove a stopped (or created) container: its state, its processes and\n"
    "everything the runtime set up for it; then run the poststop hooks.\n\n"
    "Options:\n"
    "  -f, --force  kill a running container first; a missing one is not an error\n"
    "  -h, --help   print this help\n";

int brig_cmd_delete(int argc, char **argv)
{
    static const struct option opts[] = {
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    bool force = false;
    int c;
    while ((c = getopt_long(argc, argv, "+fh", opts, NULL)) != -1) {
        if (c == 'f')
            force = true;
        else
            return c == 'h' ? brig_usage(usage) : brig_bad_option(argv);
    }
    int done = brig_parse_args(argc, argv, 1, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL, warning = NULL;
    if (brig_container_delete(brig_globals.root, argv[optind], force, &warning, &err) < 0) {
        /* A live container: the flag that would have deleted it. */
        if (err->errnum == BRIG_E_STATE && !force) {
            int status = brig_fail_msg("%s (use --force)", err->msg);
            brig_error_release(&err);
            return status;
        }
        return brig_fail(&err);
    }
    brig_warn(&warning);
    return 0;
}
