#define _GNU_SOURCE
#include <getopt.h>
#include <stdbool.h>

#include "brig.h"
#include "cli.h"
#include "sandbox/manage.h"
#include "sandbox_cmd.h"

/* `brig sandbox checkpoint` and `restore`: their flags. The sandbox knows
 * the rest (its bundle, and an image dir beside its data: manage.h), so
 * neither needs more than the id. */

static const char checkpoint_usage[] =
    "Usage: brig sandbox checkpoint [options] ID\n\n"
    "Checkpoint the sandbox with criu: its processes and memory go to the\n"
    "image dir, its /mnt/data stays where it is. The sandbox's processes are\n"
    "then gone (its data and bundle are kept for `restore`) unless\n"
    "--leave-running.\n\n"
    "Options:\n"
    "      --image-path DIR   the images (default: checkpoint/ in the sandbox's dir)\n"
    "      --leave-running    keep the sandbox running after the dump\n"
    "  -h, --help             print this help\n";

static const char restore_usage[] =
    "Usage: brig sandbox restore [options] ID\n\n"
    "Bring a checkpointed sandbox back, detached: its processes and memory\n"
    "from the images, its /mnt/data, limits, user, seccomp filter and\n"
    "brig-init as they were.\n\n"
    "Options:\n"
    "      --image-path DIR   the images (default: checkpoint/ in the sandbox's dir)\n"
    "  -h, --help             print this help\n";

enum { OPT_IMAGE_PATH = 800, OPT_LEAVE_RUNNING };

/* Parses the flags and the id. -1 to go on, else the exit status. */
static int parse(int argc, char **argv, const char *usage, bool checkpoint, const char **image_path,
                 bool *leave_running)
{
    static const struct option opts[] = {
        { "image-path", required_argument, NULL, OPT_IMAGE_PATH },
        { "leave-running", no_argument, NULL, OPT_LEAVE_RUNNING },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(usage);
        if (c == OPT_IMAGE_PATH)
            *image_path = optarg;
        else if (c == OPT_LEAVE_RUNNING && checkpoint)
            *leave_running = true;
        else
            return brig_bad_option(argv);
    }
    return brig_parse_args(argc, argv, 1, 1, "sandbox id");
}

int sandbox_cmd_checkpoint(int argc, char **argv)
{
    const char *image_path = NULL;
    bool leave_running = false;
    int done = parse(argc, argv, checkpoint_usage, true, &image_path, &leave_running);
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL;
    if (brig_sandbox_checkpoint(brig_globals.root, argv[optind], image_path, leave_running, &err)
        < 0)
        return brig_fail(&err);
    return 0;
}

int sandbox_cmd_restore(int argc, char **argv)
{
    const char *image_path = NULL;
    int done = parse(argc, argv, restore_usage, false, &image_path, NULL);
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL, warning = NULL;
    if (brig_sandbox_restore(brig_globals.root, argv[optind], image_path, brig_globals.no_cgroup,
                             NULL, &warning, &err)
        < 0)
        return brig_fail(&err);
    brig_warn(&warning);
    return 0;
}
