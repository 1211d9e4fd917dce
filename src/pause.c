#include "brig.h"
#include "cli.h"
#include "container/container.h"

static const char pause_usage[] =
    "Usage: brig pause ID\n\n"
    "Freeze every process of a running container (cgroup.freeze); `brig state`\n"
    "then reports it as paused until `brig resume ID`.\n";

static const char resume_usage[] = "Usage: brig resume ID\n\n"
                                   "Thaw the processes of a paused container.\n";

static int freeze_command(int argc, char **argv, const char *usage,
                          int (*fn)(const char *, const char *, brig_error_t *))
{
    int done = brig_parse_plain(argc, argv, usage, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL;
    if (fn(brig_globals.root, argv[optind], &err) < 0)
        return brig_fail(&err);
    return 0;
}

int brig_cmd_pause(int argc, char **argv)
{
    return freeze_command(argc, argv, pause_usage, brig_container_pause);
}

int brig_cmd_resume(int argc, char **argv)
{
    return freeze_command(argc, argv, resume_usage, brig_container_resume);
}
