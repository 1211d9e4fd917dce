/* The sandboxes the proxy serves: one registry file each (egress_client.h)
 * and one listening socket in each one's network namespace, made from
 * inside it (setns of this thread alone, and back), so that nothing but
 * the proxy holds it and no network device or rule is needed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "egress.h"

static bool valid_key(const char *key)
{
    if (strlen(key) != BRIG_EGRESS_KEY_LEN)
        return false;
    for (const char *k = key; *k; k++)
        if (!((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'f')))
            return false;
    return true;
}

/* The registry file: state dir, id, pid, start time. */
static int read_entry(struct proxy *p, const char *key, struct sandbox *sb, char *why, size_t size)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s/%s", p->dir, BRIG_EGRESS_REGISTRY, key);
    cleanup_free char *text = NULL;
    size_t len;
    brig_error_t err = NULL;
    if (brig_read_file(path, &text, &len, &err) < 0) {
        snprintf(why, size, "%s", err->msg);
        brig_error_release(&err);
        return -1;
    }
    char *save = NULL;
    char *dir = strtok_r(text, "\n", &save), *id = strtok_r(NULL, "\n", &save);
    char *pid = strtok_r(NULL, "\n", &save), *start = strtok_r(NULL, "\n", &save);
    if (!dir || !id || !pid || !start || strlen(id) >= sizeof sb->id) {
        snprintf(why, size, "registry entry %s is malformed", key);
        return -1;
    }
    snprintf(sb->key, sizeof sb->key, "%s", key);
    snprintf(sb->id, sizeof sb->id, "%s", id);
    sb->pid = (pid_t) strtol(pid, NULL, 10);
    sb->start = strtoull(start, NULL, 10);
    return 0;
}

/* Whether the init the entry names is still that process. */
static bool entry_alive(const struct sandbox *sb)
{
    unsigned long long start = 0;
    brig_error_t err = NULL;
    bool alive = sb->pid > 0 && brig_process_start_time(sb->pid, &start, &err) == 0
                 && start == sb->start;
    brig_error_release(&err);
    return alive;
}

/* 127.0.0.1:3128 in the init's network namespace. */
static int listen_in(struct proxy *p, const struct sandbox *sb, char *why, size_t size)
{
    char ns[64];
    snprintf(ns, sizeof ns, "/proc/%d/ns/net", sb->pid);
    cleanup_close int nsfd = open(ns, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || !entry_alive(sb)) {
        snprintf(why, size, "sandbox `%s`: its init (pid %d) is gone", sb->id, sb->pid);
        return -1;
    }
    if (setns(nsfd, CLONE_NEWNET) < 0) {
        snprintf(why, size, "sandbox `%s`: enter its network namespace: %s", sb->id,
                 strerror(errno));
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int saved = errno;
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(BRIG_EGRESS_PORT) };
    inet_pton(AF_INET, BRIG_EGRESS_ADDR, &sin.sin_addr);
    int one = 1;
    if (fd >= 0
        && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0
            || bind(fd, (struct sockaddr *) &sin, sizeof sin) < 0 || listen(fd, 256) < 0)) {
        saved = errno;
        close(fd);
        fd = -1;
    }
    /* Back home: every other socket this thread makes is the host's. */
    if (setns(p->host_netns, CLONE_NEWNET) < 0)
        abort();
    if (fd < 0)
        snprintf(why, size, "sandbox `%s`: listen on %s:%d: %s", sb->id, BRIG_EGRESS_ADDR,
                 BRIG_EGRESS_PORT, strerror(saved));
    return fd;
}

static struct sandbox *find(struct proxy *p, const char *key)
{
    for (struct sandbox *sb = p->sandboxes; sb; sb = sb->next)
        if (strcmp(sb->key, key) == 0)
            return sb;
    return NULL;
}

int egress_sandbox_add(struct proxy *p, const char *key, char *why, size_t size)
{
    if (!valid_key(key)) {
        snprintf(why, size, "not a registry key: `%s`", key);
        return -1;
    }
    struct sandbox fresh = { 0 };
    if (read_entry(p, key, &fresh, why, size) < 0)
        return -1;
    struct sandbox *old = find(p, key);
    if (old && old->pid == fresh.pid && old->start == fresh.start)
        return 0; /* listening already */
    if (old)
        egress_sandbox_del(p, key);
    int fd = listen_in(p, &fresh, why, size);
    if (fd < 0)
        return -1;
    struct sandbox *sb = malloc(sizeof *sb);
    if (sb == NULL) {
        close(fd);
        snprintf(why, size, "out of memory");
        return -1;
    }
    *sb = fresh;
    sb->listen_fd = fd;
    sb->tag = (struct ep){ EP_LISTEN, sb };
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &sb->tag };
    if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        snprintf(why, size, "epoll: %s", strerror(errno));
        close(fd);
        free(sb);
        return -1;
    }
    sb->next = p->sandboxes;
    p->sandboxes = sb;
    egress_log(p, "sandbox=%s listening pid=%d", sb->id, sb->pid);
    return 0;
}

void egress_sandbox_del(struct proxy *p, const char *key)
{
    for (struct sandbox **at = &p->sandboxes; *at; at = &(*at)->next) {
        struct sandbox *sb = *at;
        if (strcmp(sb->key, key) != 0)
            continue;
        for (struct conn *c = p->conns, *next; c; c = next) {
            next = c->next;
            if (c->sb == sb)
                egress_conn_close(p, c, "closed", "the sandbox went away");
        }
        close(sb->listen_fd);
        *at = sb->next;
        egress_log(p, "sandbox=%s gone", sb->id);
        sb->dead = true;
        sb->next = p->dead_sandboxes;
        p->dead_sandboxes = sb;
        return;
    }
}

/* At start: every registered sandbox that still runs gets its listener;
 * the entries of those gone are removed. */
void egress_sandboxes_scan(struct proxy *p)
{
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/%s", p->dir, BRIG_EGRESS_REGISTRY);
    cleanup_dir DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (!valid_key(de->d_name))
            continue;
        char why[512];
        struct sandbox probe = { 0 };
        if (read_entry(p, de->d_name, &probe, why, sizeof why) == 0 && !entry_alive(&probe)) {
            unlinkat(dirfd(d), de->d_name, 0);
            continue;
        }
        if (egress_sandbox_add(p, de->d_name, why, sizeof why) < 0)
            egress_log(p, "registry %s: %s", de->d_name, why);
    }
}

/* Now and then: a sandbox whose init died without a word (its runtime
 * killed) lets its network namespace go once its listener does. */
void egress_sandboxes_check(struct proxy *p)
{
    for (struct sandbox *sb = p->sandboxes, *next; sb; sb = next) {
        next = sb->next;
        if (!entry_alive(sb)) {
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/%s/%s", p->dir, BRIG_EGRESS_REGISTRY, sb->key);
            unlink(path);
            egress_sandbox_del(p, sb->key);
        }
    }
}
