/* `brig sandbox download ID URL PATH`: the flags read, the download done
 * by the sandbox layer (sandbox/download.h), the file it made printed. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "base/utils.h"
#include "sandbox/download.h"
#include "sandbox/profile.h"
#include "sandbox_cmd.h"

static const char download_usage[] =
    "Usage: brig sandbox download [options] ID URL PATH\n\n"
    "Fetch URL on the host's side into the sandbox's /mnt/data at PATH, owned\n"
    "by the sandbox user; a PATH that is a directory (or ends in /) receives\n"
    "the URL's file name. Prints the file as the sandbox sees it and its size.\n"
    "http:// and https:// only, to hosts that egress.conf's `allow` or\n"
    "`download` entries name (without the file, the host's package sources),\n"
    "at public addresses unless `allow-private`; up to 5 redirects, each\n"
    "checked the same way. The file appears whole or not at all.\n\n"
    "Options:\n"
    "      --max-size SIZE   refuse a larger file (default: egress.conf's\n"
    "                        download-max-size, else 1G; K, M, G, T suffixes)\n"
    "      --timeout DUR     for the whole download (default 10m; 30s, 2m)\n"
    "  -h, --help            print this help\n";

enum { OPT_MAX_SIZE = 700, OPT_TIMEOUT };

static int parse_flags(int argc, char **argv, struct brig_sandbox_download_options *o)
{
    static const struct option opts[] = {
        { "max-size", required_argument, NULL, OPT_MAX_SIZE },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    int64_t size;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_MAX_SIZE:
            if (brig_profile_parse_size(optarg, &size) < 0)
                return brig_fail_msg("sandbox download: invalid --max-size `%s`", optarg);
            o->max_size = (uint64_t) size;
            break;
        case OPT_TIMEOUT:
            if (brig_parse_duration_ms(optarg, &o->timeout_ms) < 0)
                return brig_fail_msg("sandbox download: invalid --timeout `%s`", optarg);
            break;
        case 'h':
            return brig_usage(download_usage);
        default:
            return brig_bad_option(argv);
        }
    }
    return brig_parse_args(argc, argv, 3, 3, "sandbox id, URL and path");
}

int sandbox_cmd_download(int argc, char **argv)
{
    struct brig_sandbox_download_options o = { 0 };
    int done = parse_flags(argc, argv, &o);
    if (done != BRIG_CLI_GO_ON)
        return done;
    const char *id = argv[optind], *url = argv[optind + 1], *path = argv[optind + 2];
    char *final_path = NULL;
    uint64_t bytes = 0;
    brig_error_t err = NULL;
    if (brig_sandbox_download(id, url, path, &o, &final_path, &bytes, &err) < 0)
        return brig_fail(&err);
    printf("%s %" PRIu64 " bytes\n", final_path, bytes);
    free(final_path);
    return 0;
}
