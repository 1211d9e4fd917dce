/* The sandbox layer's host daemons (brig-egress, brig-reaper) started by
 * whichever brig needs one first, detached from it for good. */
#ifndef BRIG_SANDBOX_DAEMON_H
#define BRIG_SANDBOX_DAEMON_H

#include <stdbool.h>

#include "base/error.h"

/* Runs `path` with argv (NULL-terminated) in a session of its own, with
 * stdio on /dev/null, no other fd of ours, no blocked signal (brig blocks
 * some around its children) and only the variables of our environment
 * that passed_on accepts: a daemon for the whole host must not carry one
 * caller's settings for its life. The middle child exits at once and is
 * waited for, so the daemon is nobody's child. Returns once it is forked,
 * not once it runs. `what` starts the errors ("egress proxy"). */
int brig_sandbox_daemon_spawn(const char *what, const char *path, char *const argv[],
                              bool (*passed_on)(const char *var), brig_error_t *err);

#endif
