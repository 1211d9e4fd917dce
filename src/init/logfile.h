/* A service's log file, written by brig-init from the service's pipe so
 * that it rotates exactly at its size limit: NAME -> NAME.1 -> NAME.2 ... */
#ifndef BRIG_INIT_LOGFILE_H
#define BRIG_INIT_LOGFILE_H

#include <stddef.h>
#include <stdint.h>

struct init_log {
    const char *path;
    uint64_t maxbytes; /* 0: never rotated */
    unsigned backups;  /* 0: the file is emptied instead of rotated */
    int fd;
    uint64_t size;
};

/* Opens (creates, appends to) the file; -1 with errno set on failure. */
int init_log_open(struct init_log *log, const char *path, uint64_t maxbytes, unsigned backups);

/* Appends BUF, rotating first whenever the file is full; a chunk larger
 * than the room left is split across files. -1 with errno on failure. */
int init_log_write(struct init_log *log, const char *buf, size_t len);

void init_log_close(struct init_log *log);

#endif
