/* `brig sandbox`: the commands shared between its files. */
#ifndef BRIG_SANDBOX_CMD_H
#define BRIG_SANDBOX_CMD_H

#include "base/error.h"

/* Where sandboxes keep their bundle and data: $BRIG_SANDBOX_DIR or
 * /var/lib/brig/sandboxes. */
const char *sandbox_home(void);
/* The dir of one sandbox; fails (printing) on an id that can't be a name. */
int sandbox_dir(const char *id, char **out);
/* Everything of the sandbox gone; a missing part is not an error. */
int sandbox_remove(const char *id, brig_error_t *err);

int sandbox_cmd_create(int argc, char **argv);
int sandbox_cmd_exec(int argc, char **argv);
int sandbox_cmd_cp(int argc, char **argv);
int sandbox_cmd_checkpoint(int argc, char **argv);
int sandbox_cmd_restore(int argc, char **argv);

#endif
