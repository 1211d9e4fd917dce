/* The allow-list the proxy runs with: egress.conf when there is one, else
 * the host's own package sources (sandbox/egress_sources.h), npm's
 * registry among them once npm answers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "sandbox/egress_sources.h"

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

/* npm is started and left to run: it takes a while to start (seconds on a
 * slow machine), and the proxy answers meanwhile. */
int egress_npm_watch(struct proxy *p)
{
    p->npm_pid = brig_egress_npm_start(&p->npm_fd);
    if (p->npm_pid < 0)
        return 0;
    p->npm_tag = (struct ep){ EP_NPM, NULL };
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &p->npm_tag };
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->npm_fd, &ev);
}

int egress_load_conf(const char *path, struct brig_egress_conf *c, char *source, size_t size,
                     brig_error_t *err)
{
    bool from_sources;
    if (brig_egress_load_conf(path, c, &from_sources, err) < 0)
        return -1;
    if (from_sources)
        snprintf(source, size,
                 "the host's package sources (apt, pip, and npm's once it answers; no %s)", path);
    else
        snprintf(source, size, "%s", path);
    return 0;
}
