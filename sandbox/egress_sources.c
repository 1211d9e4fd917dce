/* egress_sources.h: egress.conf or the host's package sources, and the
 * host's networks. */
#define _GNU_SOURCE
#include "sandbox/egress_sources.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

#define SOURCES_MAX 64
#define NPM_OUT_MAX 1024

const char *brig_egress_conf_path(void)
{
    const char *v = getenv("BRIG_EGRESS_CONFIG");
    return v && *v ? v : BRIG_EGRESS_CONF;
}

/* A file's text, or NULL. */
static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len;
    brig_error_t err = NULL;
    if (brig_read_file(path, &text, &len, &err) < 0)
        brig_error_release(&err);
    return text;
}

/* apt's sources: sources.list and every *.list and *.sources beside it. */
static size_t apt_texts(char **texts, size_t max)
{
    size_t n = 0;
    if ((texts[n] = slurp(BRIG_EGRESS_APT_LIST)) != NULL)
        n++;
    cleanup_dir DIR *d = opendir(BRIG_EGRESS_APT_DIR);
    struct dirent *de;
    while (d && n < max && (de = readdir(d)) != NULL) {
        if (!brig_egress_apt_file(de->d_name))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", BRIG_EGRESS_APT_DIR, de->d_name);
        if ((texts[n] = slurp(path)) != NULL)
            n++;
    }
    return n;
}

/* pip's index: $PIP_INDEX_URL and $PIP_EXTRA_INDEX_URL, and its
 * configuration files, system-wide and the user's. */
static char *pip_texts(void)
{
    char *all = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&all, &len);
    if (f == NULL)
        return NULL;
    const char *env[] = { "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL" };
    for (size_t i = 0; i < 2; i++)
        if (getenv(env[i]))
            fprintf(f, "%s\n", getenv(env[i]));
    const char *home = getenv("HOME");
    char paths[4][512] = { "/etc/pip.conf", "/etc/xdg/pip/pip.conf", "", "" };
    if (home) {
        snprintf(paths[2], sizeof paths[2], "%s/.config/pip/pip.conf", home);
        snprintf(paths[3], sizeof paths[3], "%s/.pip/pip.conf", home);
    }
    for (size_t i = 0; i < 4; i++) {
        cleanup_free char *text = paths[i][0] ? slurp(paths[i]) : NULL;
        /* Only the index lines: a pip.conf holds other URLs (find-links). */
        for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
            if (strstr(line, "index-url"))
                fprintf(f, "%s\n", line);
    }
    fclose(f);
    return all;
}

int brig_egress_load_conf(const char *path, struct brig_egress_conf *c, bool *from_sources,
                          brig_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len;
    *from_sources = false;
    if (brig_read_file(path, &text, &len, err) == 0)
        return brig_egress_conf_parse(text, path, c, err);
    if ((*err)->errnum != ENOENT)
        return -1;
    brig_error_release(err);
    *from_sources = true;
    char *apt[SOURCES_MAX];
    size_t n_apt = apt_texts(apt, SOURCES_MAX);
    cleanup_free char *pip = pip_texts();
    int r = brig_egress_conf_from_sources((const char *const *) apt, n_apt, NULL, pip, c, err);
    for (size_t i = 0; i < n_apt; i++)
        free(apt[i]);
    return r;
}

pid_t brig_egress_npm_start(int *out_fd)
{
    int fds[2];
    *out_fd = -1;
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 2);
        execlp("npm", "npm", "config", "get", "registry", (char *) NULL);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    *out_fd = fds[0];
    return pid;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What npm writes until it closes its end or the time is up. */
static size_t npm_read(int fd, char *out, size_t size, int timeout_ms)
{
    size_t len = 0;
    int64_t deadline = now_ms() + timeout_ms;
    while (len < size - 1) {
        int64_t left = deadline - now_ms();
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (left <= 0 || (poll(&p, 1, (int) left) < 0 && errno != EINTR))
            break;
        ssize_t n = read(fd, out + len, size - 1 - len);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
        if (n > 0)
            len += (size_t) n;
    }
    out[len] = '\0';
    return len;
}

int brig_egress_npm_add(struct brig_egress_conf *c, int timeout_ms)
{
    cleanup_close int fd = -1;
    pid_t pid = brig_egress_npm_start(&fd);
    if (pid < 0)
        return 0;
    char out[NPM_OUT_MAX];
    npm_read(fd, out, sizeof out, timeout_ms);
    kill(pid, SIGKILL); /* done, or out of time: either way no more of it */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    out[strcspn(out, "\n")] = '\0';
    size_t before = c->n;
    if (out[0] && brig_egress_conf_add_url(c, out) < 0)
        return -1;
    return c->n > before;
}

/* One interface's address and mask as a network. */
static struct brig_egress_net net_of(const struct ifaddrs *i)
{
    int fam = i->ifa_addr->sa_family;
    struct brig_egress_net net = { .family = fam };
    const unsigned char *a, *m;
    size_t bytes = fam == AF_INET ? 4 : 16;
    if (fam == AF_INET) {
        a = (const unsigned char *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr;
        m = (const unsigned char *) &((struct sockaddr_in *) i->ifa_netmask)->sin_addr;
    } else {
        a = ((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr.s6_addr;
        m = ((struct sockaddr_in6 *) i->ifa_netmask)->sin6_addr.s6_addr;
    }
    memcpy(net.addr, a, bytes);
    for (size_t b = 0; b < bytes; b++)
        net.prefix += __builtin_popcount(m[b]);
    return net;
}

int brig_egress_local_nets(struct brig_egress_net **out, size_t *n)
{
    struct ifaddrs *ifa = NULL;
    *out = NULL;
    *n = 0;
    if (getifaddrs(&ifa) < 0)
        return -1;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_netmask == NULL)
            continue;
        int fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        struct brig_egress_net *bigger = realloc(*out, (*n + 1) * sizeof *bigger);
        if (bigger == NULL)
            break;
        *out = bigger;
        bigger[(*n)++] = net_of(i);
    }
    freeifaddrs(ifa);
    return 0;
}
