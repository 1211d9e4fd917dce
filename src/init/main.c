#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "children.h"
#include "base/cleanup.h"
#include "config.h"
#include "conf.h"
#include "exec_port.h"
#include "supervise.h"

#define DEFAULT_CONFIG "/etc/brig/init.conf"

static const char usage[] =
    "Usage: brig-init [--config FILE] [--grace SECONDS] [--exec-port] [--] [COMMAND [ARG...]]\n";

static const char help[] =
    "A small init for brig sandboxes: reaps zombies, forwards SIGTERM, SIGINT and\n"
    "SIGHUP (and SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH to COMMAND alone), runs\n"
    "the services of its configuration ([program:NAME] sections) with restarts\n"
    "and rotated logs.\n"
    "\n"
    "With COMMAND it runs it as the main program and exits with its status\n"
    "(128+N when killed by signal N) once the services are stopped. Without\n"
    "COMMAND it stays up until SIGTERM or SIGINT, then stops the services and\n"
    "exits 0.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE    services to run (default " DEFAULT_CONFIG " if it exists)\n"
    "  -g, --grace SECONDS  how long services may take to stop before SIGKILL (default 10)\n"
    "      --exec-port      start processes the host asks for on fd 3 (brig sandbox exec)\n"
    "  -h, --help           this help\n"
    "  -V, --version        print the version\n"
    "\n"
    "See brig-init(8).\n";

struct init {
    struct init_config cfg;
    struct service *svcs;
    size_t n_svcs;
    int64_t grace_ms;
    pid_t main_pid; /* 0: none, or exited */
    int main_status;
    int have_main;
    int stopping;
    int64_t deadline_ms; /* when stopping: SIGKILL for what is left */
    int killed;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_grace(const char *s, int64_t *ms)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(d) || d < 0 || d > 86400)
        return -1;
    *ms = (int64_t) (d * 1000);
    return 0;
}

static pid_t start_main(char **argv)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Its own group, in the terminal's foreground when there is one, so a
     * ^C reaches it once and not again through our forwarding. */
    setpgid(0, 0);
    if (isatty(STDIN_FILENO)) {
        signal(SIGTTOU, SIG_IGN);
        tcsetpgrp(STDIN_FILENO, getpid());
    }
    init_reset_signals();
    execvp(argv[0], argv);
    int e = errno;
    fprintf(stderr, "brig-init: exec %s: %s\n", argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Adopted processes: everything but the main program and the services. */
static size_t signal_adopted(const struct init *in, int sig)
{
    cleanup_free pid_t *skip = calloc(1 + in->n_svcs, sizeof *skip);
    size_t n = 0;
    if (!skip)
        return 0;
    if (in->main_pid > 0)
        skip[n++] = in->main_pid;
    for (size_t i = 0; i < in->n_svcs; i++)
        if (in->svcs[i].pid > 0)
            skip[n++] = in->svcs[i].pid;
    return init_signal_adopted(skip, n, sig);
}

static void begin_stop(struct init *in, int64_t now)
{
    if (in->stopping)
        return;
    in->stopping = 1;
    in->deadline_ms = now + in->grace_ms;
    exec_port_close();
    for (size_t i = 0; i < in->n_svcs; i++) {
        struct service *svc = &in->svcs[i];
        if (svc->pid > 0)
            service_signal(svc, svc->prog->stopsignal);
        else
            svc->state = SERVICE_STOPPED;
    }
    signal_adopted(in, SIGTERM);
}

/* Signals for the main program alone, as a shell or tini would pass
 * them on (a stop signal of the image's own, SIGQUIT, reloads, window
 * sizes); the services are not told. */
static bool passed_on(int sig)
{
    return sig == SIGQUIT || sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGWINCH;
}

static void forward(struct init *in, int sig, int64_t now)
{
    if (in->main_pid > 0)
        kill(in->main_pid, sig);
    if (passed_on(sig))
        return;
    if (sig == SIGHUP) {
        for (size_t i = 0; i < in->n_svcs; i++)
            service_signal(&in->svcs[i], sig);
        return;
    }
    /* TERM and INT: the whole sandbox stops. */
    if (in->stopping) {
        for (size_t i = 0; i < in->n_svcs; i++)
            service_signal(&in->svcs[i], in->svcs[i].prog->stopsignal);
    }
    begin_stop(in, now);
}

static void reap(struct init *in, int64_t now)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (exec_port_reaped(pid, status))
            continue;
        if (pid == in->main_pid) {
            in->main_pid = 0;
            in->main_status = status;
            begin_stop(in, now);
            continue;
        }
        for (size_t i = 0; i < in->n_svcs; i++) {
            if (in->svcs[i].pid == pid) {
                service_exited(&in->svcs[i], status, in->stopping, now);
                break;
            }
        }
        /* Anything else is an orphan we adopted: reaped, nothing more. */
    }
}

static void kill_everything(struct init *in)
{
    if (in->main_pid > 0) {
        fprintf(stderr, "brig-init: grace period over, killing the main program\n");
        kill(-in->main_pid, SIGKILL);
        kill(in->main_pid, SIGKILL);
    }
    for (size_t i = 0; i < in->n_svcs; i++) {
        if (in->svcs[i].pid > 0) {
            fprintf(stderr, "brig-init: %s: grace period over, killing it\n",
                    in->svcs[i].prog->name);
            service_signal(&in->svcs[i], SIGKILL);
        }
    }
    size_t left = signal_adopted(in, SIGKILL);
    if (left)
        fprintf(stderr, "brig-init: grace period over, killing %zu leftover process%s\n", left,
                left == 1 ? "" : "es");
    in->killed = 1;
}

/* poll()'s timeout: the nearest restart or the end of the grace period. */
static int next_timeout(const struct init *in, int64_t now)
{
    int64_t next = -1;
    if (in->stopping && !in->killed)
        next = in->deadline_ms;
    for (size_t i = 0; i < in->n_svcs; i++)
        if (!in->stopping && in->svcs[i].state == SERVICE_BACKOFF
            && (next < 0 || in->svcs[i].restart_at_ms < next))
            next = in->svcs[i].restart_at_ms;
    if (next < 0)
        return -1;
    return next <= now ? 0 : (int) (next - now);
}

static void run_timers(struct init *in, int64_t now)
{
    if (in->stopping) {
        if (!in->killed && now >= in->deadline_ms)
            kill_everything(in);
        return;
    }
    for (size_t i = 0; i < in->n_svcs; i++)
        if (in->svcs[i].state == SERVICE_BACKOFF && now >= in->svcs[i].restart_at_ms)
            service_start(&in->svcs[i], now);
}

/* What is still in the services' pipes when they are gone; a descendant
 * that keeps a pipe open can't hold brig-init up. */
static void drain_pipes(struct init *in)
{
    for (size_t i = 0; i < in->n_svcs; i++) {
        struct service *svc = &in->svcs[i];
        int fds[2] = { svc->out_pipe, svc->err_pipe };
        for (int j = 0; j < 2; j++) {
            if (fds[j] < 0)
                continue;
            fcntl(fds[j], F_SETFL, O_NONBLOCK);
            while (svc->out_pipe == fds[j] || svc->err_pipe == fds[j]) {
                struct pollfd p = { .fd = fds[j], .events = POLLIN };
                if (poll(&p, 1, 0) <= 0)
                    break;
                service_pump(svc, fds[j]);
            }
        }
    }
}

static int event_loop(struct init *in, int sfd)
{
    size_t room = 1 + 2 * in->n_svcs + exec_port_max_pollfds();
    struct pollfd *fds = calloc(room, sizeof *fds);
    struct service **owner = calloc(room, sizeof *owner);
    if (!fds || !owner) {
        fprintf(stderr, "brig-init: out of memory\n");
        return -1;
    }
    for (;;) {
        int64_t now = now_ms();
        reap(in, now);
        run_timers(in, now);
        /* Stopped means no child at all: a service's leader can go while
         * what it spawned lingers, and those come to us. */
        if (in->stopping && !init_has_children())
            break;
        if (in->killed)
            signal_adopted(in, SIGKILL);

        size_t n = 0;
        fds[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
        for (size_t i = 0; i < in->n_svcs; i++) {
            int pipes[2] = { in->svcs[i].out_pipe, in->svcs[i].err_pipe };
            for (int j = 0; j < 2; j++) {
                if (pipes[j] < 0)
                    continue;
                owner[n] = &in->svcs[i];
                fds[n++] = (struct pollfd){ .fd = pipes[j], .events = POLLIN };
            }
        }
        size_t n_pipes = n;
        n += exec_port_pollfds(fds + n);
        int r = poll(fds, n, next_timeout(in, now));
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "brig-init: poll: %s\n", strerror(errno));
            break;
        }
        for (size_t i = 1; r > 0 && i < n_pipes; i++)
            if (fds[i].revents)
                service_pump(owner[i], fds[i].fd);
        if (r > 0)
            exec_port_handle(fds + n_pipes, n - n_pipes);
        if (r > 0 && fds[0].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == sizeof si) {
                if (si.ssi_signo != SIGCHLD)
                    forward(in, (int) si.ssi_signo, now_ms());
            }
        }
    }
    drain_pipes(in);
    free(fds);
    free(owner);
    return 0;
}

static int load_services(struct init *in, const char *config, int explicit)
{
    char err[1024];
    if (!explicit && access(config, F_OK) < 0)
        return 0;
    if (init_config_load(config, &in->cfg, err, sizeof err) < 0) {
        fprintf(stderr, "brig-init: %s\n", err);
        return -1;
    }
    in->svcs = calloc(in->cfg.n_programs ? in->cfg.n_programs : 1, sizeof *in->svcs);
    if (!in->svcs) {
        fprintf(stderr, "brig-init: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < in->cfg.n_programs; i++) {
        if (service_prepare(&in->svcs[i], &in->cfg.programs[i], err, sizeof err) < 0) {
            fprintf(stderr, "brig-init: %s: %s\n", config, err);
            in->n_svcs = i + 1;
            return -1;
        }
        in->n_svcs = i + 1;
    }
    return 0;
}

static int exit_code(const struct init *in)
{
    if (!in->have_main)
        return 0;
    if (WIFSIGNALED(in->main_status))
        return 128 + WTERMSIG(in->main_status);
    return WEXITSTATUS(in->main_status);
}

/* SIGCHLD and the stop signals as a signalfd; and, outside a pid
 * namespace, orphans of the sandbox come to us rather than to the host's
 * init, so they are reaped here too. -1 after a message. */
static int take_signals(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig == SIGCHLD || sig == SIGTERM || sig == SIGINT || sig == SIGHUP || passed_on(sig))
            sigaddset(&mask, sig);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
        fprintf(stderr, "brig-init: sigprocmask: %s\n", strerror(errno));
        return -1;
    }
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        fprintf(stderr, "brig-init: signalfd: %s\n", strerror(errno));
        return -1;
    }
    if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        fprintf(stderr, "brig-init: PR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
        close(sfd);
        return -1;
    }
    return sfd;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' }, { "grace", required_argument, NULL, 'g' },
        { "exec-port", no_argument, NULL, 'P' },    { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },      { 0 },
    };
    struct init in = { .grace_ms = 10000 };
    const char *config = DEFAULT_CONFIG;
    int explicit_config = 0, exec_port = 0, c;

    /* '+': options end at COMMAND, whose own options are its business. */
    while ((c = getopt_long(argc, argv, "+c:g:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            explicit_config = 1;
            break;
        case 'g':
            if (parse_grace(optarg, &in.grace_ms) < 0) {
                fprintf(stderr, "brig-init: --grace: `%s` is not a number of seconds\n", optarg);
                return 2;
            }
            break;
        case 'P':
            exec_port = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            fputs(help, stdout);
            return 0;
        case 'V':
            printf("brig-init version %s\n", PACKAGE_VERSION);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }

    int status = 2;
    /* First, while fd 3 is free for the host's end. */
    if (exec_port && exec_port_open() < 0)
        goto out;
    if (load_services(&in, config, explicit_config) < 0)
        goto out;

    int sfd = take_signals();
    if (sfd < 0)
        goto out;

    int64_t now = now_ms();
    for (size_t i = 0; i < in.n_svcs; i++)
        service_start(&in.svcs[i], now);
    if (optind < argc) {
        in.have_main = 1;
        in.main_pid = start_main(argv + optind);
        if (in.main_pid < 0) {
            fprintf(stderr, "brig-init: fork: %s\n", strerror(errno));
            in.main_pid = 0;
            in.main_status = 127 << 8;
            begin_stop(&in, now);
        }
    }
    status = event_loop(&in, sfd) < 0 ? 1 : exit_code(&in);
    close(sfd);
out:
    for (size_t i = 0; i < in.n_svcs; i++)
        service_release(&in.svcs[i]);
    free(in.svcs);
    init_config_free(&in.cfg);
    return status;
}
