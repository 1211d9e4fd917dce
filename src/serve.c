#define _GNU_SOURCE
/* `brig serve`: the sandbox API. Its server, brig-api, is a program of
 * its own (libmicrohttpd can't be linked into a static brig); brig runs
 * it in its place with the flags as given and the state root it uses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "sandbox/locate.h"

int brig_cmd_serve(int argc, char **argv)
{
    cleanup_free char *prog = NULL;
    brig_error_t err = NULL;
    if (brig_sandbox_locate_helper("brig-api", &prog, &err) < 0)
        return brig_error_wrap(&err, "serve"), brig_fail(&err);
    /* brig-api ROOT-FLAG ARGS... NULL */
    cleanup_free char **args = calloc((size_t) argc + 4, sizeof *args);
    if (args == NULL)
        return brig_fail_msg("serve: out of memory");
    size_t n = 0;
    args[n++] = (char *) "brig-api";
    args[n++] = (char *) "--root";
    args[n++] = (char *) brig_globals.root;
    for (int i = 1; i < argc; i++)
        args[n++] = argv[i];
    execv(prog, args);
    return brig_fail_msg("serve: run `%s`: %s", prog, strerror(errno));
}
