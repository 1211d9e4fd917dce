#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "cli.h"
#include "sandbox/transfer.h"
#include "sandbox_cmd.h"

static const char cp_usage[] =
    "Usage: brig sandbox cp FILE ID:PATH\n"
    "       brig sandbox cp ID:PATH FILE\n\n"
    "Copy a file into the sandbox's /mnt/data or out of it. PATH is inside\n"
    "/mnt/data (absolute, or relative to it); a PATH or FILE that is a\n"
    "directory (or ends in /) receives the file under its own name. Symlinks\n"
    "in the sandbox resolve inside /mnt/data and never out of it. Files\n"
    "copied in belong to the sandbox user.\n";

/* "ID:PATH" → the id and the path relative to /mnt/data: 1; 0 when `arg`
 * names no sandbox (no colon, or a `/` before it: a host path); -1 after
 * reporting a PATH out of reach. */
static int split_remote(const char *arg, char **id, char **rel)
{
    const char *colon = strchr(arg, ':');
    if (colon == NULL || colon == arg || memchr(arg, '/', (size_t) (colon - arg)))
        return 0;
    brig_error_t err = NULL;
    if (brig_sandbox_data_relpath(colon + 1, rel, &err) < 0)
        return brig_error_wrap(&err, "sandbox cp: `%s`", arg), -brig_fail(&err);
    *id = strndup(arg, (size_t) (colon - arg));
    return *id ? 1 : -brig_fail_msg("sandbox cp: out of memory");
}

int sandbox_cmd_cp(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, cp_usage, 2, "source and destination");
    if (done != BRIG_CLI_GO_ON)
        return done;
    const char *src = argv[optind], *dst = argv[optind + 1];
    cleanup_free char *src_id = NULL, *src_rel = NULL, *dst_id = NULL, *dst_rel = NULL;
    int src_remote = split_remote(src, &src_id, &src_rel);
    int dst_remote = split_remote(dst, &dst_id, &dst_rel);
    if (src_remote < 0 || dst_remote < 0)
        return 1;
    if (src_remote == dst_remote)
        return brig_fail_msg("sandbox cp: exactly one of `%s` and `%s` must be ID:PATH", src, dst);
    brig_error_t err = NULL;
    int r = dst_remote ? brig_sandbox_copy_in(src, dst_id, dst_rel, &err)
                       : brig_sandbox_copy_out(src_id, src_rel, dst, &err);
    return r < 0 ? brig_fail(&err) : 0;
}
