/* The allow-list the proxy runs with: egress.conf when there is one, else
 * the host's own package sources as apt, npm and pip are configured here;
 * and the networks the host is on, which no sandbox may reach. */
#define _GNU_SOURCE
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
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "egress.h"

#define SOURCES_MAX 64

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

/* `npm config get registry`, as the host's npm is configured, started
 * and left to run: npm takes a while to start (seconds on a slow
 * machine), and the proxy answers meanwhile. Its output comes back on
 * *out_fd (egress_npm_done); -1 where npm can't be run. */
static pid_t npm_start(int *out_fd)
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

void egress_npm_done(struct proxy *p)
{
    ssize_t n;
    while ((n = read(p->npm_fd, p->npm_out + p->npm_len, sizeof p->npm_out - 1 - p->npm_len)) > 0)
        p->npm_len += (size_t) n;
    if (n < 0 && errno == EAGAIN && p->npm_len < sizeof p->npm_out - 1)
        return;
    epoll_ctl(p->epfd, EPOLL_CTL_DEL, p->npm_fd, NULL);
    close(p->npm_fd);
    p->npm_fd = -1;
    waitpid(p->npm_pid, NULL, 0);
    p->npm_out[p->npm_len] = '\0';
    char *nl = strchr(p->npm_out, '\n');
    if (nl)
        *nl = '\0';
    size_t before = p->conf.n;
    if (p->npm_out[0] && brig_egress_conf_add_url(&p->conf, p->npm_out) == 0 && p->conf.n > before)
        egress_log(p, "allow %s:%d (npm's registry)", p->conf.rules[before].host,
                   p->conf.rules[before].port);
}

int egress_npm_watch(struct proxy *p)
{
    p->npm_pid = npm_start(&p->npm_fd);
    if (p->npm_pid < 0)
        return 0;
    p->npm_tag = (struct ep){ EP_NPM, NULL };
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &p->npm_tag };
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->npm_fd, &ev);
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

int egress_load_conf(const char *path, struct brig_egress_conf *c, char *source, size_t size,
                     brig_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len;
    if (brig_read_file(path, &text, &len, err) == 0) {
        snprintf(source, size, "%s", path);
        return brig_egress_conf_parse(text, path, c, err);
    }
    if ((*err)->errnum != ENOENT)
        return -1;
    brig_error_release(err);
    char *apt[SOURCES_MAX];
    size_t n_apt = apt_texts(apt, SOURCES_MAX);
    cleanup_free char *pip = pip_texts();
    /* npm's registry comes later (egress_npm_watch). */
    int r = brig_egress_conf_from_sources((const char *const *) apt, n_apt, NULL, pip, c, err);
    for (size_t i = 0; i < n_apt; i++)
        free(apt[i]);
    snprintf(source, size,
             "the host's package sources (apt, pip, and npm's once it answers; no %s)", path);
    return r;
}

int egress_local_nets(struct brig_egress_net **out, size_t *n)
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
        struct brig_egress_net *bigger = realloc(*out, (*n + 1) * sizeof *bigger);
        if (bigger == NULL)
            break;
        *out = bigger;
        bigger[(*n)++] = net;
    }
    freeifaddrs(ifa);
    return 0;
}
