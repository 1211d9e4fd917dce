/* Signal names as kill(1) and runc accept them. */
#ifndef BRIG_SIGNALS_H
#define BRIG_SIGNALS_H

#include "base/error.h"

/* "TERM", "SIGTERM", "sigterm", "15", "RTMIN+2" → the number; "0" is 0
 * (no signal: kill(2)'s check that a process is there). */
int brig_signal_parse(const char *text, int *out, brig_error_t *err);

/* Every signal's disposition back to its default, the two libc keeps for
 * itself (32 and 33, which sigaction refuses) included: what a process
 * handed on inherits of an ignored signal otherwise stays ignored in all
 * it starts. */
void brig_signals_default_all(void);

#endif
