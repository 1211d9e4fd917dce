/* One line per event in the proxy's log (man brig-egress, LOG), each
 * written whole with the time in front. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "egress.h"

void egress_log(struct proxy *p, const char *fmt, ...)
{
    if (p->log == NULL)
        return;
    char line[2048], stamp[32];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    int n = snprintf(line, sizeof line, "%s.%03ldZ ", stamp, now.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t) n, fmt, ap);
    va_end(ap);
    fprintf(p->log, "%s\n", line);
    fflush(p->log);
}
