/* brig-egress [--config FILE] [--dir DIR] [--log FILE|-]
 *
 * The host's proxy for sandboxes on the packages-only network (man
 * brig-egress): one per host (a lock in DIR), started by brig on demand or
 * by the systemd unit in contrib/. It reads its allow-list, listens again
 * in every registered sandbox that still runs, then serves until SIGTERM.
 * A bad allow-list is one line on stderr and in the log, and exit 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "egress.h"
#include "sandbox/egress_sources.h"

#define LOG_DEFAULT "/var/log/brig/egress.log"

struct options {
    const char *config, *dir, *log;
};

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "dir", required_argument, NULL, 'd' },
        { "log", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    *o = (struct options){ brig_egress_conf_path(), brig_egress_dir(),
                           env_or("BRIG_EGRESS_LOG", LOG_DEFAULT) };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            o->config = optarg;
            break;
        case 'd':
            o->dir = optarg;
            break;
        case 'l':
            o->log = optarg;
            break;
        case 'h':
            printf("Usage: brig-egress [--config FILE] [--dir DIR] [--log FILE|-]\n");
            exit(0);
        default:
            return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

static FILE *open_log(const char *path)
{
    if (strcmp(path, "-") == 0)
        return stderr;
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash && slash != dir) {
        *slash = '\0';
        char *up = strrchr(dir, '/');
        if (up && up != dir) {
            *up = '\0';
            mkdir(dir, 0755);
            *up = '/';
        }
        mkdir(dir, 0755);
    }
    free(dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    return fd < 0 ? NULL : fdopen(fd, "a");
}

/* The lock, then the control socket: a second proxy stops at the lock. */
static int open_control(struct proxy *p, int *lock_fd)
{
    mkdir(p->dir, 0700);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", p->dir, BRIG_EGRESS_LOCK);
    *lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*lock_fd < 0 || flock(*lock_fd, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "brig-egress: %s: %s\n", path,
                errno == EWOULDBLOCK ? "another brig-egress runs" : strerror(errno));
        return -1;
    }
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    snprintf(path, sizeof path, "%s/%s", p->dir, BRIG_EGRESS_CONTROL);
    if (strlen(path) >= sizeof sun.sun_path) {
        fprintf(stderr, "brig-egress: %s: too long a path for a socket\n", path);
        return -1;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    unlink(sun.sun_path);
    p->control_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->control_fd < 0 || bind(p->control_fd, (struct sockaddr *) &sun, sizeof sun) < 0
        || chmod(sun.sun_path, 0600) < 0 || listen(p->control_fd, 64) < 0) {
        fprintf(stderr, "brig-egress: %s: %s\n", sun.sun_path, strerror(errno));
        return -1;
    }
    return 0;
}

static void control(struct proxy *p)
{
    int fd;
    while ((fd = accept4(p->control_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
        struct timeval tv = { .tv_sec = 1 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char msg[128], why[600] = "ok";
        ssize_t n = recv(fd, msg, sizeof msg - 1, 0);
        msg[n > 0 ? n : 0] = '\0';
        char reply[640] = "ok";
        if (strncmp(msg, "add ", 4) == 0) {
            if (egress_sandbox_add(p, msg + 4, why, sizeof why) < 0)
                snprintf(reply, sizeof reply, "error: %s", why);
        } else if (strncmp(msg, "del ", 4) == 0) {
            egress_sandbox_del(p, msg + 4);
        } else if (strcmp(msg, "ping") != 0) {
            snprintf(reply, sizeof reply, "error: unknown request");
        }
        send(fd, reply, strlen(reply), MSG_NOSIGNAL);
        close(fd);
    }
}

static void dispatch(struct proxy *p, struct ep *tag, unsigned events)
{
    switch (tag->kind) {
    case EP_CONTROL:
        control(p);
        break;
    case EP_LISTEN:
        if (!((struct sandbox *) tag->ptr)->dead)
            egress_accept(p, tag->ptr);
        break;
    case EP_CLIENT:
    case EP_UPSTREAM:
        egress_conn_event(p, tag->ptr, tag->kind == EP_CLIENT, events);
        break;
    case EP_TIMER: {
        unsigned long long ticks;
        if (read(p->timer_fd, &ticks, sizeof ticks) < 0) {
            /* spurious: nothing to do */
        }
        egress_conns_tick(p, egress_now());
        if (++p->ticks % 5 == 0) {
            egress_sandboxes_check(p);
            /* A listener that failed to come back is tried again; an
             * interface added since is one of the host's networks too. */
            egress_sandboxes_scan(p);
            free(p->local);
            if (brig_egress_local_nets(&p->local, &p->n_local) < 0)
                egress_log(p, "the host's networks: %s", strerror(errno));
        }
        break;
    }
    case EP_RESOLVED:
        egress_resolver_drain(p);
        break;
    case EP_NPM:
        egress_npm_done(p);
        break;
    }
}

static int setup_loop(struct proxy *p)
{
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    p->host_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (p->epfd < 0 || p->timer_fd < 0 || p->host_netns < 0
        || egress_resolver_start(&p->resolved_fd) < 0)
        return -1;
    struct itimerspec one_second = { { 1, 0 }, { 1, 0 } };
    timerfd_settime(p->timer_fd, 0, &one_second, NULL);
    p->control_tag = (struct ep){ EP_CONTROL, NULL };
    p->timer_tag = (struct ep){ EP_TIMER, NULL };
    p->resolved_tag = (struct ep){ EP_RESOLVED, NULL };
    struct {
        int fd;
        struct ep *tag;
    } fds[] = { { p->control_fd, &p->control_tag },
                { p->timer_fd, &p->timer_tag },
                { p->resolved_fd, &p->resolved_tag } };
    for (size_t i = 0; i < 3; i++) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = fds[i].tag };
        if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fds[i].fd, &ev) < 0)
            return -1;
    }
    return 0;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void) sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse_args(argc, argv, &o) < 0) {
        fprintf(stderr,
                "brig-egress: usage: brig-egress [--config FILE] [--dir DIR] [--log FILE|-]\n");
        return 2;
    }
    static struct proxy p;
    snprintf(p.dir, sizeof p.dir, "%s", o.dir);
    /* Whoever started us may have blocked signals (brig does, around its
     * children): a daemon takes them all as they come. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_IGN);
    p.log = open_log(o.log);
    if (p.log == NULL) {
        fprintf(stderr, "brig-egress: log `%s`: %s\n", o.log, strerror(errno));
        return 1;
    }
    /* From here on, this is the proxy; its parent keeps it (keeper.c). */
    egress_keep(&p);
    struct sigaction sa = { .sa_handler = on_term };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    brig_error_t err = NULL;
    if (egress_load_conf(o.config, &p.conf, p.conf_source, sizeof p.conf_source, &err) < 0) {
        fprintf(stderr, "brig-egress: %s\n", err->msg);
        egress_log(&p, "stopped: %s", err->msg);
        return 1;
    }
    int lock_fd = -1;
    if (open_control(&p, &lock_fd) < 0 || setup_loop(&p) < 0) {
        egress_log(&p, "stopped: cannot set up in %s: %s", p.dir, strerror(errno));
        return 1;
    }
    brig_egress_local_nets(&p.local, &p.n_local);
    /* As many fds as allowed: two a connection. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    p.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    egress_log(&p, "started pid=%d allow-list=%zu rules from %s", getpid(), p.conf.n,
               p.conf_source);
    for (size_t i = 0; i < p.conf.n; i++)
        egress_log(&p, "allow %s%s%s:%d", p.conf.rules[i].private_ok ? "(private) " : "",
                   p.conf.rules[i].host, "", p.conf.rules[i].port);
    if (strncmp(p.conf_source, "the host's", 10) == 0 && egress_npm_watch(&p) < 0)
        egress_log(&p, "npm's registry: not asked: %s", strerror(errno));
    egress_sandboxes_scan(&p);
    struct epoll_event events[64];
    while (!stop) {
        int n = epoll_wait(p.epfd, events, 64, -1);
        for (int i = 0; i < n; i++)
            dispatch(&p, events[i].data.ptr, events[i].events);
        egress_reap(&p);
    }
    egress_log(&p, "stopped by signal");
    /* Everything let go (the registry stays: the next proxy listens in the
     * same sandboxes). */
    while (p.conns)
        egress_conn_close(&p, p.conns, "closed", "the proxy stopped");
    while (p.sandboxes)
        egress_sandbox_del(&p, p.sandboxes->key);
    egress_reap(&p);
    brig_egress_conf_free(&p.conf);
    free(p.local);
    if (p.log != stderr)
        fclose(p.log);
    return 0;
}
