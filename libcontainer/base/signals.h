/* Signal names as kill(1) and runc accept them. */
#ifndef BRIG_SIGNALS_H
#define BRIG_SIGNALS_H

#include "base/error.h"

/* "TERM", "SIGTERM", "sigterm", "15", "RTMIN+2" → the number. */
int brig_signal_parse(const char *text, int *out, brig_error_t *err);

#endif
