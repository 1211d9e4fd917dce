/* The proxy's keeper: brig-egress forks the proxy proper and stays as its
 * parent, so that a proxy that dies of a signal (killed, crashed) comes
 * back by itself, and the sandboxes that use it recover without anyone
 * calling brig: the new proxy listens again in every registered sandbox
 * (main.c). A proxy that exits (0 after SIGTERM, 1 for a bad allow-list
 * or a second proxy's lock) ends the keeper with its status. SIGTERM and
 * SIGINT to the keeper go on to the proxy. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 5000
#define STABLE_MS 2000 /* a proxy that ran this long starts again at once */

static volatile sig_atomic_t proxy_pid, stopping;

static void pass_on(int sig)
{
    stopping = 1;
    if (proxy_pid > 0)
        kill((pid_t) proxy_pid, sig);
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long) (ms % 1000) * 1000000 };
    while (nanosleep(&t, &t) < 0 && errno == EINTR && !stopping)
        ;
}

/* The exit status the keeper ends with, for a proxy that ended so; -1
 * when it was killed and goes again. */
static int outcome(int status)
{
    if (stopping)
        return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    /* Stopped before its own handler was in place. */
    if (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT)
        return 0;
    return -1;
}

/* The wait before the next start: none after a proxy that ran a while;
 * doubling, within its bounds, while it dies soon after starting. */
static int next_backoff(int backoff, long long ran_ms)
{
    if (ran_ms >= STABLE_MS)
        return 0;
    if (backoff == 0)
        return BACKOFF_MIN_MS;
    return backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
}

void egress_keep(struct proxy *p)
{
    struct sigaction sa = { .sa_handler = pass_on };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int backoff = 0;
    for (;;) {
        long long started = now_ms();
        pid_t pid = fork();
        if (pid == 0) {
            signal(SIGTERM, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            return;
        }
        if (pid < 0) {
            egress_log(p, "keeper: fork: %s", strerror(errno));
            sleep_ms(BACKOFF_MAX_MS);
            continue;
        }
        proxy_pid = pid;
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        proxy_pid = 0;
        int code = outcome(status);
        if (code >= 0)
            exit(code);
        /* One that dies at once again and again is not hammered. */
        backoff = next_backoff(backoff, now_ms() - started);
        egress_log(p, "keeper: the proxy (pid %d) was killed by signal %d; again in %d ms",
                   (int) pid, WTERMSIG(status), backoff);
        sleep_ms(backoff);
        if (stopping)
            exit(0);
    }
}
