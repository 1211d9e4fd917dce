#include "brig.h"
#include "cli.h"
#include "container/container.h"

static const char usage[] = "Usage: brig start ID\n\n"
                            "Start the process of a created container: releases its blocked init,\n"
                            "then runs the poststart hooks.\n";

int brig_cmd_start(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, usage, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL, warning = NULL;
    if (brig_container_start(brig_globals.root, argv[optind], &warning, &err) < 0)
        return brig_fail(&err);
    brig_warn(&warning);
    return 0;
}
