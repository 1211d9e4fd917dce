#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "brig.h"
#include "cli.h"
#include "container/container.h"
#include "create_flags.h"

static const char usage[] =
    "Usage: brig create [options] ID\n\n"
    "Create a container from a bundle. Its init is left blocked right before\n"
    "exec until `brig start ID`.\n\n"
    "Options:\n" CREATE_FLAGS_HELP "  -h, --help               print this help\n";

int brig_cmd_create(int argc, char **argv)
{
    struct brig_create_options o;
    struct create_flags extra;
    int done = create_flags_parse(argc, argv, "+b:h", usage, &o, &extra);
    if (done != BRIG_CLI_GO_ON)
        return done;
    if (extra.detach || extra.keep || extra.no_subreaper || o.terminal)
        return brig_fail_msg(
            "create: --detach, --keep, --no-subreaper and --tty are options of run");
    struct create_bundle cb;
    int r = create_prepare(&o, &extra, &cb);
    brig_error_t err = NULL;
    pid_t pid;
    if (r == BRIG_CLI_GO_ON)
        r = brig_container_create(&o, &pid, &err) < 0 ? brig_fail(&err) : 0;
    create_bundle_clear(&cb);
    return r;
}
