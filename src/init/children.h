/* brig-init's children as the kernel sees them: what it adopted (it is PID 1
 * or a child subreaper) as well as what it started. */
#ifndef BRIG_INIT_CHILDREN_H
#define BRIG_INIT_CHILDREN_H

#include <stddef.h>
#include <sys/types.h>

/* 1 while any child is alive (or a zombie not yet reaped), 0 when none. */
int init_has_children(void);

/* Sends SIG to every child of brig-init except those in SKIP (the main
 * program and the services, which are signalled as process groups);
 * returns how many were signalled. */
size_t init_signal_adopted(const pid_t *skip, size_t n_skip, int sig);

#endif
