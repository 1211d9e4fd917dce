#define _GNU_SOURCE
#include "brig.h"
#include "cli.h"
#include "criu_flags.h"

static const char usage[] =
    "Usage: brig checkpoint [options] ID\n\n"
    "Checkpoint a running container with criu: its processes, memory, open\n"
    "files and namespaces go to the image directory. The container is then\n"
    "gone (as after delete) unless --leave-running or --pre-dump.\n\n"
    "Options:\n" CRIU_FLAGS_HELP
    "      --leave-running      keep the container running after the dump\n"
    "      --pre-dump           dump memory only, for a later dump with --parent-path\n"
    "      --parent-path DIR    a previous pre-dump, relative to the image path\n"
    "  -h, --help               print this help\n";

int brig_cmd_checkpoint(int argc, char **argv)
{
    struct criu_flags f;
    int done = criu_flags_parse(argc, argv, false, usage, &f);
    if (done != BRIG_CLI_GO_ON)
        return done;
    struct brig_checkpoint_options o = {
        .root = brig_globals.root,
        .id = f.id,
        .criu = f.criu,
        .parent_path = f.parent_path,
        .leave_running = f.leave_running,
        .pre_dump = f.pre_dump,
    };
    brig_error_t err = NULL;
    if (brig_container_checkpoint(&o, &err) < 0)
        return brig_fail(&err);
    return 0;
}
