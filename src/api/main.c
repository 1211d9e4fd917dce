#define _GNU_SOURCE
/* brig-api: `brig serve` runs it. Options, the listening socket (a unix
 * socket of mode 0600, or TCP with a token), and the daemon until
 * SIGTERM or SIGINT. Nothing is kept in memory that matters: sandboxes
 * and sessions are found on disk at every request, so a restarted
 * server carries on where the last one stopped. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.h"
#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/locate.h"
#include "sandbox/sandbox.h"
#include "selfexe/selfexe.h"

#define DEFAULT_LISTEN "unix:/run/brig/api.sock"
#define DEFAULT_ROOT "/run/brig"
#define MAX_CONNECTIONS 1024

static const char usage[] =
    "Usage: brig serve [options]\n\n"
    "Serve the sandbox API (HTTP/1.1 and JSON, docs/api.md) until SIGTERM.\n\n"
    "Options:\n"
    "      --listen unix:PATH     a unix socket, mode 0600 (default " DEFAULT_LISTEN ")\n"
    "      --listen tcp:ADDR:PORT TCP, which needs --token-file\n"
    "      --token-file FILE      every request must carry Authorization: Bearer TOKEN,\n"
    "                             TOKEN being the file's first line\n"
    "      --root DIR             the state root of the sandboxes' containers\n"
    "      --rootfs DIR           the tree of the sandboxes it creates (default\n"
    "                             /var/lib/brig/rootfs)\n"
    "  -h, --help                 print this help\n";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("brig serve: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int read_token(const char *path)
{
    cleanup_free char *text = NULL;
    size_t len;
    brig_error_t err = NULL;
    if (brig_read_file(path, &text, &len, &err) < 0) {
        int r = fail("--token-file: %s", err->msg);
        brig_error_release(&err);
        return r;
    }
    text[strcspn(text, "\r\n")] = '\0';
    if (strlen(text) < 16)
        return fail("--token-file `%s`: the token must have at least 16 characters", path);
    api_config.token = strdup(text);
    api_config.token_len = strlen(text);
    return api_config.token ? 0 : fail("out of memory");
}

/* A unix socket at path: a stale one (nobody answers) is replaced, a live
 * one refused. */
static int listen_unix(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        return fail("--listen: `%s` is too long for a unix socket", path), -1;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail("socket: %s", strerror(errno)), -1;
    if (connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0) {
        close(fd);
        return fail("--listen: a server already answers at `%s`", path), -1;
    }
    unlink(path);
    cleanup_free char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755);
    }
    mode_t old = umask(0177);
    int r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
    umask(old);
    if (r < 0 || listen(fd, 128) < 0) {
        int saved = errno;
        close(fd);
        return fail("--listen `unix:%s`: %s", path, strerror(saved)), -1;
    }
    return fd;
}

static int listen_tcp(const char *spec)
{
    cleanup_free char *copy = strdup(spec);
    char *host = copy, *colon = copy ? strrchr(copy, ':') : NULL;
    if (colon == NULL)
        return fail("--listen `tcp:%s`: ADDR:PORT wanted", spec), -1;
    *colon = '\0';
    if (host[0] == '[' && colon[-1] == ']') {
        host++;
        colon[-1] = '\0';
    }
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
    int e = getaddrinfo(*host ? host : NULL, colon + 1, &hints, &res);
    if (e != 0)
        return fail("--listen `tcp:%s`: %s", spec, gai_strerror(e)), -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return fail("--listen `tcp:%s`: %s", spec, strerror(saved)), -1;
    }
    freeaddrinfo(res);
    return fd;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    fputs("brig serve: ", stderr);
    vfprintf(stderr, fmt, ap);
}

static int serve(int fd, const char *unix_path)
{
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD
                             | MHD_USE_ERROR_LOG,
                         0, NULL, NULL, api_access, NULL, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
                         MHD_OPTION_UNESCAPE_CALLBACK, api_unescape, NULL, MHD_OPTION_LISTEN_SOCKET,
                         fd, MHD_OPTION_NOTIFY_COMPLETED, api_completed, NULL,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned) MAX_CONNECTIONS, MHD_OPTION_END);
    if (d == NULL)
        return fail("could not start the HTTP server");
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    int sig = 0;
    sigwait(&stop, &sig);
    /* Execs and sessions outlive us (their workers and holders are
     * processes of their own); waiting for every connection would wait
     * for the longest exec. */
    if (unix_path)
        unlink(unix_path);
    _exit(0);
}

/* A job (worker.c): the sandbox layer's handlers, this program's file
 * kept out of the containers' reach, then the work. */
static int job(int argc, char **argv)
{
    brig_handlers_register(brig_sandbox_handlers);
    brig_error_t err = NULL;
    if (brig_selfexe_protect(argv, &err) < 0) {
        int r = fail("%s", err->msg);
        brig_error_release(&err);
        return r;
    }
    return api_job_main(argc, argv);
}

int main(int argc, char **argv)
{
    /* Found while this program still runs from where it lies. */
    brig_sandbox_pin_helpers();
    if (argc > 2 && strcmp(argv[1], "--job") == 0)
        return job(argc, argv);
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "token-file", required_argument, NULL, 't' },
        { "root", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *listen_on = DEFAULT_LISTEN, *token_file = NULL;
    api_config.root = DEFAULT_ROOT;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            listen_on = optarg;
            break;
        case 't':
            token_file = optarg;
            break;
        case 'r':
            api_config.root = optarg;
            break;
        case 'f':
            api_config.rootfs = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return fail("unknown option (see `brig serve --help`)");
        }
    }
    if (optind < argc)
        return fail("unexpected argument `%s`", argv[optind]);
    bool is_unix = strncmp(listen_on, "unix:", 5) == 0;
    if (!is_unix && strncmp(listen_on, "tcp:", 4) != 0)
        return fail("--listen `%s`: unix:PATH or tcp:ADDR:PORT", listen_on);
    if (!is_unix && token_file == NULL)
        return fail("--listen tcp: needs --token-file (whoever reaches the port could run "
                    "code in every sandbox)");
    if (token_file && read_token(token_file))
        return 1;
    struct stat st;
    if (api_config.rootfs && (stat(api_config.rootfs, &st) < 0 || !S_ISDIR(st.st_mode)))
        return fail("--rootfs `%s`: not a directory", api_config.rootfs);
    /* Processes started here enter sandboxes: they must not reach this
     * program's file (see brig-security(7)). */
    brig_error_t err = NULL;
    if (brig_selfexe_protect(argv, &err) < 0) {
        int r = fail("%s", err->msg);
        brig_error_release(&err);
        return r;
    }
    brig_handlers_register(brig_sandbox_handlers);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, NULL);
    signal(SIGPIPE, SIG_IGN);
    int fd = is_unix ? listen_unix(listen_on + 5) : listen_tcp(listen_on + 4);
    if (fd < 0)
        return 1;
    return serve(fd, is_unix ? listen_on + 5 : NULL);
}
