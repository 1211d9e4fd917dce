#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brig.h"
#include "cleanup.h"
#include "cli.h"
#include "spec.h"
#include "utils.h"

static const char usage[] =
    "Usage: brig spec [options]\n\n"
    "Write a default config.json into the bundle; an existing one is kept.\n\n"
    "Options:\n"
    "  -b, --bundle DIR  the bundle (default: the current directory)\n"
    "      --rootless    a config for running without root (user namespace)\n"
    "  -h, --help        print this help\n";

int brig_cmd_spec(int argc, char **argv)
{
    static const struct option opts[] = {
        { "bundle", required_argument, NULL, 'b' },
        { "rootless", no_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *bundle = ".";
    bool rootless = false;
    int c;
    while ((c = getopt_long(argc, argv, "+b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            bundle = optarg;
            break;
        case 'r':
            rootless = true;
            break;
        case 'h':
            return brig_usage(usage);
        default:
            return brig_bad_option(argv);
        }
    }
    if (brig_expect_args(argc, argv, 0, "nothing") != 0)
        return 1;
    brig_error_t err = NULL;
    cleanup_free char *json = NULL, *path = NULL;
    if (asprintf(&path, "%s/config.json", bundle) < 0)
        return brig_fail_msg("spec: out of memory");
    if (brig_spec_default_json(rootless, &json, &err) < 0)
        return brig_fail(&err);
    cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            return brig_fail_msg("spec: `%s` already exists", path);
        return brig_fail_msg("spec: create `%s`: %s", path, strerror(errno));
    }
    if (brig_write_all(fd, json, strlen(json)) < 0) {
        int saved = errno;
        unlink(path);
        return brig_fail_msg("spec: write `%s`: %s", path, strerror(saved));
    }
    return 0;
}
