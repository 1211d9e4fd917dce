#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logfile.h"

static int reopen(struct init_log *log, int extra_flags)
{
    int fd = open(log->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | extra_flags,
                  0644);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -1;
    }
    if (log->fd >= 0)
        close(log->fd);
    log->fd = fd;
    log->size = st.st_size;
    return 0;
}

int init_log_open(struct init_log *log, const char *path, uint64_t maxbytes, unsigned backups)
{
    log->path = path;
    log->maxbytes = maxbytes;
    log->backups = backups;
    log->fd = -1;
    log->size = 0;
    return reopen(log, 0);
}

static int rotate(struct init_log *log)
{
    if (log->backups == 0)
        return reopen(log, O_TRUNC);
    char from[4096], to[4096];
    /* The oldest backup is overwritten by the one before it. */
    for (unsigned i = log->backups; i > 1; i--) {
        snprintf(from, sizeof from, "%s.%u", log->path, i - 1);
        snprintf(to, sizeof to, "%s.%u", log->path, i);
        if (rename(from, to) < 0 && errno != ENOENT)
            return -1;
    }
    snprintf(to, sizeof to, "%s.1", log->path);
    if (rename(log->path, to) < 0 && errno != ENOENT)
        return -1;
    return reopen(log, 0);
}

int init_log_write(struct init_log *log, const char *buf, size_t len)
{
    while (len > 0) {
        if (log->maxbytes && log->size >= log->maxbytes && rotate(log) < 0)
            return -1;
        size_t chunk = len;
        if (log->maxbytes && chunk > log->maxbytes - log->size)
            chunk = log->maxbytes - log->size;
        ssize_t n = write(log->fd, buf, chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= n;
        log->size += n;
    }
    return 0;
}

void init_log_close(struct init_log *log)
{
    if (log->fd >= 0)
        close(log->fd);
    log->fd = -1;
}
