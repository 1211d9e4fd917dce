/* brig-egress: the host's one HTTP forward proxy for every sandbox on the
 * packages-only network (man brig-egress). One thread runs an epoll loop
 * over: the control socket, a listening socket in each registered
 * sandbox's network namespace, each connection's two ends, a one-second
 * timer and the resolver's answers; name lookups run on a few threads of
 * their own (resolve.c) so that a slow DNS server stalls nobody else. */
#ifndef BRIG_EGRESS_DAEMON_H
#define BRIG_EGRESS_DAEMON_H

#include <limits.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "sandbox/egress.h"
#include "sandbox/egress_client.h"

#define EGRESS_BUF 65536

enum ep_kind { EP_CONTROL, EP_LISTEN, EP_CLIENT, EP_UPSTREAM, EP_TIMER, EP_RESOLVED, EP_NPM };

/* What an epoll event points at. */
struct ep {
    enum ep_kind kind;
    void *ptr;
};

struct sandbox {
    struct ep tag;
    char key[BRIG_EGRESS_KEY_LEN + 1];
    char id[256];
    pid_t pid;
    unsigned long long start;
    int listen_fd;
    int n_conns;
    bool dead; /* removed: freed once the current batch of events is done */
    struct sandbox *next;
};

enum conn_state { C_HEAD, C_RESOLVE, C_CONNECT, C_RELAY };

struct buf {
    char *data; /* EGRESS_BUF bytes, from the relay on */
    size_t off, len;
};

struct resolve_job;

struct conn {
    struct ep ctag, utag;
    int cfd, ufd;
    struct sandbox *sb;
    enum conn_state st;
    char head[BRIG_EGRESS_HEAD_MAX];
    size_t head_len;
    struct brig_egress_request req;
    bool private_ok;
    struct resolve_job *job;
    struct addrinfo *ai, *next_ai;
    struct buf up, down; /* up: sandbox to destination */
    bool c_eof, u_eof;
    bool c_hup, u_hup;       /* hung up: nothing more can be written there */
    bool c_parked, u_parked; /* hung up, no room to read: out of the loop for now */
    bool c_shut, u_shut;     /* told that no more comes (shutdown SHUT_WR) */
    bool one_request;        /* plain HTTP: the request went with the head */
    unsigned long long bytes_up, bytes_down;
    struct timespec started;
    time_t last;
    time_t attempt; /* when the current address was tried */
    struct conn *prev, *next;
    bool dead; /* closed: freed once the current batch of events is done */
};

struct proxy {
    int epfd, control_fd, timer_fd, resolved_fd, host_netns;
    int reserve_fd; /* kept for refusing a connection when out of fds */
    struct ep control_tag, timer_tag, resolved_tag;
    struct brig_egress_conf conf;
    char conf_source[PATH_MAX];
    struct brig_egress_net *local;
    size_t n_local;
    FILE *log;
    char dir[PATH_MAX];
    struct sandbox *sandboxes;
    struct conn *conns;
    /* Closed in this batch of events, whose later events may still name
     * them: freed after it (egress_reap). */
    struct conn *dead_conns;
    struct sandbox *dead_sandboxes;
    unsigned ticks;
    /* npm's registry, asked of npm after the start (sources.c) */
    struct ep npm_tag;
    int npm_fd;
    pid_t npm_pid;
    char npm_out[1024];
    size_t npm_len;
};

/* sandboxes.c: the registry and the listeners */
int egress_sandbox_add(struct proxy *p, const char *key, char *why, size_t why_size);
void egress_sandbox_del(struct proxy *p, const char *key);
void egress_sandboxes_scan(struct proxy *p);
void egress_sandboxes_check(struct proxy *p);

/* conn.c: one connection from accept to close */
void egress_accept(struct proxy *p, struct sandbox *sb);
void egress_conn_event(struct proxy *p, struct conn *c, bool client_side, unsigned events);
void egress_conn_resolved(struct proxy *p, struct conn *c, int rc, struct addrinfo *ai);
void egress_conn_close(struct proxy *p, struct conn *c, const char *verdict, const char *reason);
void egress_conns_tick(struct proxy *p, time_t now);
time_t egress_now(void); /* seconds, monotonic */
void egress_reap(struct proxy *p);

/* resolve.c: getaddrinfo on worker threads; answers come back on a pipe */
int egress_resolver_start(int *notify_fd);
int egress_resolve(struct conn *c, const char *host, int port);
void egress_resolver_drain(struct proxy *p);
void egress_resolve_cancel(struct conn *c);

/* sources.c: the allow-list: egress.conf, or the host's package sources */
int egress_load_conf(const char *path, struct brig_egress_conf *c, char *source, size_t size,
                     brig_error_t *err);
int egress_npm_watch(struct proxy *p);
void egress_npm_done(struct proxy *p);

/* log.c */
void egress_log(struct proxy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Forks the proxy and returns in it; the caller stays its keeper, which
 * forks it again whenever it dies of a signal, and exits with its status
 * when it exits. */
void egress_keep(struct proxy *p);

#endif
