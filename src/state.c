#include <stdio.h>
#include <stdlib.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "container/container.h"

static const char usage[] =
    "Usage: brig state ID\n\n"
    "Print the state of a container as the runtime spec's JSON state object.\n";

int brig_cmd_state(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, usage, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL;
    cleanup_state struct brig_state *st = NULL;
    enum brig_status status;
    cleanup_free char *json = NULL;
    if (brig_container_state(brig_globals.root, argv[optind], &st, &status, &err) < 0
        || brig_state_to_json(st, status, true, &json, &err) < 0)
        return brig_fail(&err);
    printf("%s\n", json);
    return 0;
}
