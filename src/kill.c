#include <signal.h>

#include "brig.h"
#include "cli.h"
#include "container/container.h"
#include "base/signals.h"

static const char usage[] =
    "Usage: brig kill [options] ID [SIGNAL]\n\n"
    "Send SIGNAL (default SIGTERM) to the container's init. SIGNAL is a name\n"
    "with or without SIG (TERM, SIGKILL, RTMIN+1) or a number.\n\n"
    "Options:\n"
    "  -a, --all    signal every process of the container\n"
    "  -h, --help   print this help\n";

int brig_cmd_kill(int argc, char **argv)
{
    static const struct option opts[] = {
        { "all", no_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    bool all = false;
    int c;
    while ((c = getopt_long(argc, argv, "+ah", opts, NULL)) != -1) {
        if (c == 'a')
            all = true;
        else
            return c == 'h' ? brig_usage(usage) : brig_bad_option(argv);
    }
    int done = brig_parse_args(argc, argv, 1, 2, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL;
    int sig = SIGTERM;
    if (argc - optind == 2 && brig_signal_parse(argv[optind + 1], &sig, &err) < 0)
        return brig_fail(&err);
    if (brig_container_kill(brig_globals.root, argv[optind], sig, all, &err) < 0)
        return brig_fail(&err);
    return 0;
}
