#include "brig.h"
#include "cli.h"
#include "container.h"

static const char usage[] =
    "Usage: brig start ID\n\n"
    "Start the process of a created container: releases its blocked init,\n"
    "then runs the poststart hooks.\n";

int brig_cmd_start(int argc, char **argv)
{
    static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
        return c == 'h' ? brig_usage(usage) : brig_bad_option(argv);
    if (brig_expect_args(argc, argv, 1, "container id") != 0)
        return 1;
    brig_error_t err = NULL, warning = NULL;
    if (brig_container_start(brig_globals.root, argv[optind], &warning, &err) < 0)
        return brig_fail(&err);
    brig_warn(&warning);
    return 0;
}
