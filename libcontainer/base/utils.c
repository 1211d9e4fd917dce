#define _GNU_SOURCE
#include "base/utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

int brig_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t) w;
    }
    return 0;
}

ssize_t brig_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t) r;
    }
    return (ssize_t) got;
}

static int read_fd(int fd, const char *name, char **out, size_t *len, brig_error_t *err)
{
    size_t cap = 4096, used = 0;
    cleanup_free char *buf = malloc(cap);
    if (buf == NULL)
        return brig_error_set(err, ENOMEM, "read `%s`", name);
    for (;;) {
        if (used + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL)
                return brig_error_set(err, ENOMEM, "read `%s`", name);
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + used, cap - used - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return brig_error_set(err, errno, "read `%s`", name);
        }
        if (r == 0)
            break;
        used += (size_t) r;
    }
    buf[used] = '\0';
    if (len)
        *len = used;
    *out = brig_steal_ptr(buf);
    return 0;
}

int brig_read_file_at(int dirfd, const char *name, char **out, size_t *len, brig_error_t *err)
{
    cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s`", name);
    return read_fd(fd, name, out, len, err);
}

int brig_read_file(const char *path, char **out, size_t *len, brig_error_t *err)
{
    return brig_read_file_at(AT_FDCWD, path, out, len, err);
}

int brig_write_file(const char *path, const char *data, size_t len, brig_error_t *err)
{
    cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s`", path);
    if (brig_write_all(fd, data, len) < 0)
        return brig_error_set(err, errno, "write `%s`", path);
    return 0;
}

/* Creates (with extra open flags) and fills a file; removes it again on a
 * failed write. */
static int write_created(int dirfd, const char *name, int flags, const char *data, size_t len,
                         mode_t mode, brig_error_t *err)
{
    cleanup_close int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | flags, mode);
    if (fd < 0)
        return brig_error_set(err, errno, "create `%s`", name);
    if (brig_write_all(fd, data, len) < 0) {
        int saved = errno;
        unlinkat(dirfd, name, 0);
        return brig_error_set(err, saved, "write `%s`", name);
    }
    return 0;
}

int brig_write_file_atomic_at(int dirfd, const char *name, const char *data, size_t len,
                              mode_t mode, brig_error_t *err)
{
    char tmp[256];
    if (snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= (int) sizeof tmp)
        return brig_error_set(err, ENAMETOOLONG, "write `%s`", name);
    if (write_created(dirfd, tmp, O_TRUNC, data, len, mode, err) < 0)
        return -1;
    /* No fsync: the state dir lives on tmpfs (/run) and dies with the host;
     * rename alone gives readers all-or-nothing. */
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        return brig_error_set(err, saved, "rename `%s` to `%s`", tmp, name);
    }
    return 0;
}

int brig_write_file_new_at(int dirfd, const char *name, const char *data, size_t len, mode_t mode,
                           brig_error_t *err)
{
    return write_created(dirfd, name, O_EXCL, data, len, mode, err);
}

static bool other_mount(int parent_fd, int dfd);

/* A directory right below d that another file system is mounted on: the
 * removal stops before it deletes anything. */
static int check_no_mounts(DIR *d, const char *name, brig_error_t *err)
{
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
            continue;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_close int sub = openat(dirfd(d), de->d_name,
                                       O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0 && other_mount(dirfd(d), sub))
            return brig_error_set(err, EBUSY, "remove `%s/%s`: a file system is mounted there",
                                  name, de->d_name);
    }
    rewinddir(d);
    return 0;
}

static int remove_contents(int dfd, const char *name, brig_error_t *err)
{
    cleanup_dir DIR *d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return brig_error_set(err, errno, "open dir `%s`", name);
    }
    if (check_no_mounts(d, name, err) < 0)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            continue;
        if (errno != EISDIR && errno != EPERM)
            return brig_error_set(err, errno, "remove `%s/%s`", name, de->d_name);
        if (brig_remove_tree_at(dirfd(d), de->d_name, err) < 0)
            return -1;
    }
    return 0;
}

/* Whether dfd is on another mount than its parent: a tree removal never
 * goes into a file system mounted inside it (a data image left mounted,
 * say), whose files are not the tree's to delete. The mount id where the
 * kernel tells it (a bind mount of the same file system has its own), else
 * the device. */
static bool other_mount(int parent_fd, int dfd)
{
    struct statx a, b;
    if (statx(parent_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &a) == 0
        && statx(dfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &b) == 0 && (a.stx_mask & STATX_MNT_ID)
        && (b.stx_mask & STATX_MNT_ID))
        return a.stx_mnt_id != b.stx_mnt_id;
    struct stat x, y;
    return fstat(parent_fd, &x) == 0 && fstat(dfd, &y) == 0 && x.st_dev != y.st_dev;
}

int brig_remove_tree_at(int dirfd, const char *name, brig_error_t *err)
{
    int dfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT)
            return 0;
        return brig_error_set(err, errno, "open `%s`", name);
    }
    if (other_mount(dirfd, dfd)) {
        close(dfd);
        return brig_error_set(err, EBUSY, "remove `%s`: a file system is mounted there", name);
    }
    if (remove_contents(dfd, name, err) < 0)
        return -1;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "remove `%s`", name);
    return 0;
}

int brig_process_stat(pid_t pid, char *state, unsigned long long *start, brig_error_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    cleanup_free char *stat = NULL;
    if (brig_read_file(path, &stat, NULL, err) < 0)
        return -1;
    /* The command name (field 2) may hold spaces and parens: skip past the
     * last ')' before counting fields. */
    char *p = strrchr(stat, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0')
        return brig_error_set(err, EINVAL, "parse `%s`", path);
    p++;
    if (state)
        *state = p[1];
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return brig_error_set(err, EINVAL, "parse `%s`", path);
    }
    *start = strtoull(p + 1, NULL, 10);
    return 0;
}

int brig_process_start_time(pid_t pid, unsigned long long *out, brig_error_t *err)
{
    return brig_process_stat(pid, NULL, out, err);
}

int brig_write_pid_file(const char *path, pid_t pid, brig_error_t *err)
{
    cleanup_free char *dir_copy = strdup(path), *base_copy = strdup(path);
    if (!dir_copy || !base_copy)
        return brig_error_set(err, ENOMEM, "pid file");
    cleanup_close int dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return brig_error_set(err, errno, "pid file `%s`", path);
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", pid);
    if (brig_write_file_atomic_at(dfd, basename(base_copy), buf, (size_t) n, 0644, err) < 0)
        return brig_error_wrap(err, "pid file `%s`", path);
    return 0;
}

int brig_passwd_lookup(const char *path, uid_t uid, char *name, size_t name_size, char *home,
                       size_t home_size)
{
    char line[1024];
    cleanup_file FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f)) {
        char *fields[7] = { 0 }, *s = line;
        int n = 0;
        for (char *tok; n < 7 && (tok = strsep(&s, ":\n")); n++)
            fields[n] = tok;
        char *end = NULL;
        if (n < 6 || *fields[2] == '\0')
            continue;
        unsigned long entry_uid = strtoul(fields[2], &end, 10);
        if (*end != '\0' || entry_uid != (unsigned long) uid)
            continue;
        if (name)
            snprintf(name, name_size, "%s", fields[0]);
        if (home)
            snprintf(home, home_size, "%s", fields[5]);
        return 0;
    }
    return -1;
}

int brig_each_line(const char *text, int (*fn)(char *line, unsigned lineno, void *ctx), void *ctx)
{
    if (text == NULL)
        return 0;
    char *copy = strdup(text);
    if (copy == NULL)
        return -1;
    unsigned lineno = 0;
    int r = 0;
    for (char *l = copy; l && r == 0;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        if (*l)
            r = fn(l, lineno, ctx);
        l = nl ? nl + 1 : NULL;
    }
    free(copy);
    return r;
}

void brig_deadline_in(struct timespec *t, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long) (ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

int brig_ms_until(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long) (t->tv_sec - now.tv_sec) * 1000
                   + (t->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? (ms > 0x7fffffff ? 0x7fffffff : (int) ms) : 0;
}

int brig_parse_duration_ms(const char *text, int *out)
{
    static const struct {
        const char *suffix;
        double ms;
    } units[] = { { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 } };
    char *end;
    double v = strtod(text, &end);
    if (end == text || !(v >= 0) || text[0] == '-' || text[0] == '+')
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        double ms = v * units[i].ms;
        /* 24 days: an int holds 24.8 days of milliseconds. */
        if (ms < 1 || ms > 24.0 * 86400000)
            return -1;
        *out = (int) ms;
        return 0;
    }
    return -1;
}

static void close_range_or_each(unsigned int lo, unsigned int hi)
{
    if (lo > hi || syscall(SYS_close_range, lo, hi, 0) == 0)
        return;
    /* Kernels before 5.9: only what is open, not the whole range. */
    int fds[1024];
    size_t n = 0;
    cleanup_dir DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    while (d && n < sizeof fds / sizeof fds[0] && (de = readdir(d))) {
        int fd = atoi(de->d_name);
        if (de->d_name[0] != '.' && fd != dirfd(d) && (unsigned) fd >= lo && (unsigned) fd <= hi)
            fds[n++] = fd;
    }
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

void brig_close_fds_except(int first, const int *keep, size_t n)
{
    int sorted[16];
    size_t m = 0;
    for (size_t i = 0; i < n && m < sizeof sorted / sizeof sorted[0]; i++) {
        if (keep[i] < first)
            continue;
        size_t j = m++;
        for (; j > 0 && sorted[j - 1] > keep[i]; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = keep[i];
    }
    unsigned int lo = (unsigned) first;
    for (size_t i = 0; i < m; i++) {
        if ((unsigned) sorted[i] > lo)
            close_range_or_each(lo, (unsigned) sorted[i] - 1);
        if ((unsigned) sorted[i] >= lo)
            lo = (unsigned) sorted[i] + 1;
    }
    close_range_or_each(lo, ~0U);
}

/* dir/name when it is executable; NULL otherwise (or out of memory). */
static char *executable_in(const char *dir, const char *name)
{
    char *p;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        return NULL;
    if (access(p, X_OK) == 0)
        return p;
    free(p);
    return NULL;
}

char *brig_find_program(const char *name, const char *const *also)
{
    const char *path = getenv("PATH");
    cleanup_free char *dirs = strdup(path && *path ? path : "/usr/bin:/bin");
    char *save = NULL, *found = NULL;
    for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !found;
         d = strtok_r(NULL, ":", &save))
        found = executable_in(d, name);
    for (size_t i = 0; also && also[i] && !found; i++)
        found = executable_in(also[i], name);
    return found;
}

bool brig_is_executable_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return false;
    if (!S_ISREG(st.st_mode)) {
        errno = EACCES;
        return false;
    }
    return access(path, X_OK) == 0;
}

int brig_exec_failure(const char *path, int e, brig_error_t *err)
{
    const char *words = e == ENOENT    ? "no such file or directory"
                        : e == EACCES  ? "permission denied"
                        : e == ENOTDIR ? "not a directory"
                                       : NULL;
    if (words == NULL)
        return brig_error_set(err, e, "exec `%s`", path);
    return brig_error_kind(err, e, "exec `%s`: %s", path, words);
}

bool brig_find_in_path(const char *name, const char *path, char *out, size_t size)
{
    const char *p = path ? path : BRIG_DEFAULT_PATH;
    for (;;) {
        size_t len = strcspn(p, ":");
        if (len > 0 && snprintf(out, size, "%.*s/%s", (int) len, p, name) < (int) size
            && brig_is_executable_file(out))
            return true;
        if (p[len] == '\0')
            return false;
        p += len + 1;
    }
}
