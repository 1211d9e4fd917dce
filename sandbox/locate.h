/* The sandbox's helper programs (brig-init, brig-egress, brig-fetch,
 * brig-unpack, ...) and files found as an installed brig, a build tree
 * and a test run each want them. */
#ifndef BRIG_SANDBOX_LOCATE_H
#define BRIG_SANDBOX_LOCATE_H

#include <stddef.h>

#include "base/error.h"

/* One of brig's helper programs by name (brig-init, brig-egress,
 * brig-fetch, brig-reaper, brig-api, brig-unpack): its $BRIG_INIT,
 * $BRIG_EGRESS, ..., the build tree's, or the installed one. */
int brig_sandbox_locate_helper(const char *name, char **out, brig_error_t *err);

/* Each helper found now and named in its variable where none is set, for
 * a program about to lose sight of its build tree (brig_selfexe_protect
 * moves it onto a view of its own file) and for what it starts. */
void brig_sandbox_pin_helpers(void);

/* The helper `name` run to its end with argv (argv[0] its name): stdin
 * /dev/null, stdout out_fd, no other fd of ours; the first line of its
 * stderr in `line`, its wait status in *status (127: it could not be
 * executed). It is killed if the calling thread ends first. -1 only
 * when it could not be started or waited for. */
int brig_sandbox_run_helper(const char *name, char *const *argv, int out_fd, char *line,
                            size_t size, int *status, brig_error_t *err);

#endif
