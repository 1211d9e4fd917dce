/* process.terminal: a pty from the container's own devpts instance. The
 * init keeps the slave as its controlling terminal and stdio; the master
 * goes to the runtime, which hands it to --console-socket or relays it. */
#ifndef BRIG_TERMINAL_H
#define BRIG_TERMINAL_H

#include <stdbool.h>
#include <termios.h>

#include "base/error.h"
#include "spec/spec.h"

/* Init side, after pivot_root: opens the pty, sends the master over
 * sync_fd, makes the slave fds 0-2 and the controlling terminal. */
int brig_terminal_setup_init(const struct brig_process *process, int sync_fd, brig_error_t *err);

/* Sends the master to the unix socket at `path` with SCM_RIGHTS, the way
 * podman's conmon and containerd's shims expect it. */
int brig_terminal_send_to_socket(const char *path, int master, brig_error_t *err);

/* Puts a terminal in raw mode, saving the old settings for restore. */
int brig_terminal_make_raw(int fd, struct termios *saved, brig_error_t *err);

/* Copies the window size of `from` (a terminal) to `to` (the pty master). */
void brig_terminal_copy_size(int from, int to);

#endif
