#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brig.h"
#include "container/checkpoint.h"
#include "base/cleanup.h"
#include "cli.h"
#include "sandbox_cmd.h"

/* `brig sandbox checkpoint` and `restore`: brig checkpoint and restore with
 * what the sandbox already knows (its bundle, and an image dir beside its
 * data), so neither needs more than the id. */

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

/* Parses the flags and the id; *images defaults to DIR/checkpoint. -1 to
 * go on, else the exit status. */
static int parse(int argc, char **argv, const char *usage, bool checkpoint, char **dir,
                 char **images, bool *leave_running)
{
    static const struct option opts[] = {
        { "image-path", required_argument, NULL, OPT_IMAGE_PATH },
        { "leave-running", no_argument, NULL, OPT_LEAVE_RUNNING },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *image_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(usage);
        if (c == OPT_IMAGE_PATH)
            image_path = optarg;
        else if (c == OPT_LEAVE_RUNNING && checkpoint)
            *leave_running = true;
        else
            return brig_bad_option(argv);
    }
    if (brig_expect_args(argc, argv, 1, "sandbox id") != 0)
        return 1;
    if (sandbox_dir(argv[optind], dir) != 0)
        return 1;
    if (image_path ? (*images = strdup(image_path)) == NULL
                   : asprintf(images, "%s/checkpoint", *dir) < 0)
        return brig_fail_msg("sandbox: out of memory");
    return -1;
}

int sandbox_cmd_checkpoint(int argc, char **argv)
{
    cleanup_free char *dir = NULL, *images = NULL;
    bool leave_running = false;
    int done = parse(argc, argv, checkpoint_usage, true, &dir, &images, &leave_running);
    if (done >= 0)
        return done;
    struct brig_checkpoint_options o = {
        .root = brig_globals.root,
        .id = argv[optind],
        .criu.image_path = images,
        .leave_running = leave_running,
    };
    brig_error_t err = NULL;
    if (brig_container_checkpoint(&o, &err) < 0)
        return brig_fail(&err);
    return 0;
}

int sandbox_cmd_restore(int argc, char **argv)
{
    cleanup_free char *dir = NULL, *images = NULL, *bundle = NULL;
    int done = parse(argc, argv, restore_usage, false, &dir, &images, NULL);
    if (done >= 0)
        return done;
    if (asprintf(&bundle, "%s/bundle", dir) < 0)
        return brig_fail_msg("sandbox restore: out of memory");
    struct brig_restore_options o = {
        .root = brig_globals.root,
        .id = argv[optind],
        .bundle = bundle,
        .no_cgroup = brig_globals.no_cgroup,
        .criu.image_path = images,
    };
    brig_error_t err = NULL;
    pid_t init;
    if (brig_container_restore(&o, &init, &err) < 0)
        return brig_fail(&err);
    return 0;
}
