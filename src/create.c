#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "brig.h"
#include "cli.h"
#include "container.h"
#include "create_flags.h"

static const char usage[] =
    "Usage: brig create [options] ID\n\n"
    "Create a container from a bundle. Its init is left blocked right before\n"
    "exec until `brig start ID`.\n\n"
    "Options:\n"
    CREATE_FLAGS_HELP
    "  -h, --help               print this help\n";

int brig_cmd_create(int argc, char **argv)
{
    struct brig_create_options o = { .root = brig_globals.root, .no_cgroup = brig_globals.no_cgroup };
    struct create_flags extra = { 0 };
    int c;
    while ((c = getopt_long(argc, argv, "+b:h", create_flag_options, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(usage);
        int r = create_flag_apply(c, &o, &extra);
        if (r != 0)
            return r < 0 ? brig_bad_option(argv) : r;
    }
    if (brig_expect_args(argc, argv, 1, "container id") != 0)
        return 1;
    o.id = argv[optind];
    o.console_socket = extra.console_socket;
    brig_error_t err = NULL;
    pid_t pid;
    if (brig_container_create(&o, &pid, &err) < 0)
        return brig_fail(&err);
    return 0;
}
