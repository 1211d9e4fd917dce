/* `brig sandbox reap`: one pass of the reaper in the foreground, and the
 * reaper started again when limits remain (after a reboot, or a reaper
 * that was killed). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "sandbox/lifetime.h"
#include "sandbox/reaper.h"
#include "sandbox_cmd.h"

static const char reap_usage[] =
    "Usage: brig sandbox reap\n\n"
    "Remove every sandbox whose --ttl or --idle-timeout passed, one line for\n"
    "each, then start brig-reaper(8) when a sandbox has a limit still to\n"
    "come. brig-reaper does this by itself; after a reboot, or to see it\n"
    "done now, this does it at once.\n";

static void report(const struct brig_sandbox_reaped *r, void *ctx)
{
    int *failed = ctx;
    char limit[16];
    if (r->why == NULL || r->failure) {
        fprintf(stderr, "sandbox reap: `%s`: %s\n", r->id, r->failure);
        (*failed)++;
        return;
    }
    brig_sandbox_span(r->limit_ms, limit, sizeof limit);
    printf("removed %s (%s %s)\n", r->id, r->why, limit);
}

int sandbox_cmd_reap(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, reap_usage, 0, "");
    if (done != BRIG_CLI_GO_ON)
        return done;
    struct brig_sandbox_reap_result res;
    brig_error_t err = NULL;
    int failed = 0;
    if (brig_sandbox_reap(report, &failed, &res, &err) < 0)
        return brig_error_wrap(&err, "sandbox reap"), brig_fail(&err);
    fflush(stdout);
    if (res.left > 0 && brig_sandbox_reaper_ensure(&err) < 0)
        return brig_error_wrap(&err, "sandbox reap"), brig_fail(&err);
    return failed ? 1 : 0;
}
