/* Name lookups off the event loop: a job per connection, taken by one of
 * a few threads that call getaddrinfo, and handed back through a pipe as
 * a pointer. Only the loop's thread touches a connection: a connection
 * that closes while its lookup runs just forgets the job, which the loop
 * frees when it comes back. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"

#define RESOLVER_THREADS 4

struct resolve_job {
    struct conn *c; /* NULL: its connection is gone (the loop's thread only) */
    bool cancelled; /* the same, for the workers (under the lock) */
    char host[BRIG_EGRESS_HOST_MAX + 1];
    char port[8];
    int rc;
    struct addrinfo *res;
    struct resolve_job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static struct resolve_job *queue_head, *queue_tail;
static int pipe_w = -1;

static void *worker(void *arg)
{
    (void) arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (queue_head == NULL)
            pthread_cond_wait(&ready, &lock);
        struct resolve_job *j = queue_head;
        queue_head = j->next;
        if (queue_head == NULL)
            queue_tail = NULL;
        bool cancelled = j->cancelled;
        pthread_mutex_unlock(&lock);
        /* A lookup nobody waits for any more is not made. */
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        j->rc = cancelled ? EAI_CANCELED : getaddrinfo(j->host, j->port, &hints, &j->res);
        /* A pointer is written whole into a pipe (PIPE_BUF). */
        while (write(pipe_w, &j, sizeof j) < 0 && errno == EINTR)
            ;
    }
    return NULL;
}

int egress_resolver_start(int *notify_fd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    pipe_w = fds[1];
    for (int i = 0; i < RESOLVER_THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return -1;
        pthread_detach(t);
    }
    *notify_fd = fds[0];
    return 0;
}

int egress_resolve(struct conn *c, const char *host, int port)
{
    struct resolve_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return -1;
    j->c = c;
    snprintf(j->host, sizeof j->host, "%s", host);
    snprintf(j->port, sizeof j->port, "%d", port);
    c->job = j;
    pthread_mutex_lock(&lock);
    if (queue_tail)
        queue_tail->next = j;
    else
        queue_head = j;
    queue_tail = j;
    pthread_cond_signal(&ready);
    pthread_mutex_unlock(&lock);
    return 0;
}

void egress_resolve_cancel(struct conn *c)
{
    if (c->job) {
        c->job->c = NULL;
        pthread_mutex_lock(&lock);
        c->job->cancelled = true;
        pthread_mutex_unlock(&lock);
    }
    c->job = NULL;
}

void egress_resolver_drain(struct proxy *p)
{
    struct resolve_job *j;
    while (read(p->resolved_fd, &j, sizeof j) == (ssize_t) sizeof j) {
        struct conn *c = j->c;
        if (c == NULL) {
            if (j->rc == 0)
                freeaddrinfo(j->res);
        } else {
            c->job = NULL;
            egress_conn_resolved(p, c, j->rc, j->rc == 0 ? j->res : NULL);
        }
        free(j);
    }
}
