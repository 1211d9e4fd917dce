#define _GNU_SOURCE
/* containerd-shim-brig-v2: containerd runs it with `start` (launch the
 * daemon, print its socket address), with `delete` (clean up after a shim
 * that died), and the daemon is this binary again with no action word,
 * serving the task API on fd 3. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "sandbox/sandbox.h"
#include "base/cleanup.h"
#include "cgroup/cgroup.h"
#include "selfexe/selfexe.h"
#include "container/container.h"
#include "base/error.h"
#include "loop.h"
#include "publish.h"
#include "service.h"
#include "base/sha256.h"
#include "spec/spec.h"
#include "task.pb-c.h"
#include "ttrpc.h"
#include "types.pb-c.h"

#ifndef BRIG_VERSION
#define BRIG_VERSION PACKAGE_VERSION
#endif

#define SOCKET_DIR "/run/containerd/s"
#define RUNTIME_ROOT "/run/containerd/brig"
#define GROUP_ANNOTATION "io.containerd.brig.v2.group"
#define SANDBOX_ANNOTATION "io.kubernetes.cri.sandbox-id"

struct flags {
    const char *namespace, *address, *publish_binary, *id, *bundle, *socket;
    bool debug, version, info;
    const char *action;
};

static void logf_(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(const char *level, const char *fmt, ...)
{
    char when[64];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    dprintf(2, "time=\"%s\" level=%s msg=\"%s\" runtime=io.containerd.brig.v2\n", when, level, msg);
}

/* Go's flag syntax: -name value, -name=value, --name; booleans alone or
 * =true/=false. Unknown flags are skipped with a warning, since containerd
 * adds flags over time. */
static int parse_flags(int argc, char **argv, struct flags *f)
{
    static const struct {
        const char *name;
        size_t off;
        bool boolean;
    } table[] = {
        { "namespace", offsetof(struct flags, namespace), false },
        { "address", offsetof(struct flags, address), false },
        { "publish-binary", offsetof(struct flags, publish_binary), false },
        { "id", offsetof(struct flags, id), false },
        { "bundle", offsetof(struct flags, bundle), false },
        { "socket", offsetof(struct flags, socket), false },
        { "debug-socket", (size_t) -1, false },
        { "debug", offsetof(struct flags, debug), true },
        { "v", offsetof(struct flags, version), true },
        { "info", offsetof(struct flags, info), true },
    };
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *name = argv[i] + 1 + (argv[i][1] == '-');
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t) (eq - name) : strlen(name);
        size_t k = 0;
        for (; k < sizeof(table) / sizeof(table[0]); k++)
            if (strlen(table[k].name) == nlen && strncmp(table[k].name, name, nlen) == 0)
                break;
        if (k == sizeof(table) / sizeof(table[0])) {
            /* An unknown flag's value can't be told from the action, except
             * that the action is the last argument. */
            if (!eq && i + 2 < argc && argv[i + 1][0] != '-')
                i++;
            logf_("warning", "ignoring unknown flag %s", argv[i]);
            continue;
        }
        if (table[k].boolean) {
            *(bool *) ((char *) f + table[k].off) = !eq || strcmp(eq + 1, "true") == 0
                                                    || strcmp(eq + 1, "1") == 0;
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc) {
                fprintf(stderr, "flag needs an argument: -%.*s\n", (int) nlen, name);
                return -1;
            }
            value = argv[++i];
        }
        if (table[k].off != (size_t) -1)
            *(const char **) ((char *) f + table[k].off) = value;
    }
    if (i < argc)
        f->action = argv[i++];
    if (i < argc) {
        fprintf(stderr, "unexpected argument `%s` after the action\n", argv[i]);
        return -1;
    }
    return 0;
}

/* The shims of containers grouped in one pod share one socket. */
static const char *group_key(const char *id, struct brig_spec *spec)
{
    const char *group = brig_spec_annotation(spec, GROUP_ANNOTATION);
    const char *sandbox = brig_spec_annotation(spec, SANDBOX_ANNOTATION);
    return group ? group : sandbox ? sandbox : id;
}

/* containerd's name for the socket: the hash of address/namespace/key,
 * joined as a cleaned path. */
static int socket_path(const char *address, const char *ns, const char *key, char *out, size_t size)
{
    char joined[PATH_MAX * 2];
    int n = snprintf(joined, sizeof(joined), "%s/%s/%s", address, ns, key);
    if (n < 0 || (size_t) n >= sizeof(joined))
        return -1;
    char *w = joined;
    for (const char *r = joined; *r; r++)
        if (!(*r == '/' && w > joined && w[-1] == '/'))
            *w++ = *r;
    if (w > joined + 1 && w[-1] == '/')
        w--;
    *w = '\0';
    char hex[65];
    brig_sha256_hex(joined, strlen(joined), hex);
    n = snprintf(out, size, SOCKET_DIR "/%s", hex);
    return n < 0 || (size_t) n >= size ? -1 : 0;
}

static int listen_unix(const char *path, brig_error_t *err)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path))
        return brig_error_set(err, ENAMETOOLONG, "socket `%s`", path);
    strcpy(sa.sun_path, path);
    cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return brig_error_set(err, errno, "socket");
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        return brig_error_set(err, errno, "bind `%s`", path);
    if (chmod(path, 0600) < 0 || listen(fd, 128) < 0)
        return brig_error_set(err, errno, "listen on `%s`", path);
    return brig_steal_fd(fd);
}

static bool socket_alive(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path))
        return false;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
}

/* The address file in the bundle is how containerd finds the shim again
 * after a restart; written whole or not at all. */
static int write_address(const char *address, brig_error_t *err)
{
    cleanup_close int fd = open("address.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return brig_error_set(err, errno, "create `address.tmp`");
    size_t len = strlen(address);
    if (write(fd, address, len) != (ssize_t) len)
        return brig_error_set(err, errno, "write `address.tmp`");
    if (rename("address.tmp", "address") < 0)
        return brig_error_set(err, errno, "rename `address.tmp` to `address`");
    return 0;
}

/* The daemon gets containerd's OOM score plus one, so the kernel picks it
 * before containerd. */
static void adjust_oom_score(pid_t pid)
{
    char buf[32] = { 0 }, path[64];
    snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", getppid());
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
        return;
    int score = atoi(buf);
    if (score >= 1000)
        return;
    snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", pid);
    cleanup_close int wfd = open(path, O_WRONLY | O_CLOEXEC);
    if (wfd >= 0)
        dprintf(wfd, "%d", score + 1);
}

static int do_start(const struct flags *f)
{
    brig_error_t err = NULL;
    struct brig_spec *spec = NULL;
    if (brig_spec_load("config.json", &spec, &err) < 0)
        brig_error_release(&err);
    char path[256];
    int rc = socket_path(f->address, f->namespace, group_key(f->id, spec), path, sizeof(path));
    brig_spec_free(spec);
    if (rc < 0) {
        fprintf(stderr, "socket path for `%s` too long\n", f->id);
        return 1;
    }
    char address[sizeof(path) + 8];
    snprintf(address, sizeof(address), "unix://%s", path);
    if (mkdir("/run/containerd", 0711) < 0 && errno != EEXIST) {
        fprintf(stderr, "mkdir `/run/containerd`: %s\n", strerror(errno));
        return 1;
    }
    if (mkdir(SOCKET_DIR, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "mkdir `%s`: %s\n", SOCKET_DIR, strerror(errno));
        return 1;
    }
    int fd = listen_unix(path, &err);
    if (fd < 0 && err->errnum == EADDRINUSE) {
        if (socket_alive(path)) {
            /* A shim already serves this group: containerd reuses it. */
            brig_error_release(&err);
            if (write_address(address, &err) < 0)
                goto fail;
            printf("%s\n", address);
            return 0;
        }
        brig_error_release(&err);
        unlink(path);
        fd = listen_unix(path, &err);
    }
    if (fd < 0)
        goto fail;
    if (write_address(address, &err) < 0) {
        unlink(path);
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        brig_error_set(&err, errno, "fork");
        unlink(path);
        goto fail;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDWR);
        /* dup2 onto itself would keep close-on-exec. */
        if (null < 0 || (fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(fd, 3)) < 0 || dup2(null, 0) < 0
            || dup2(null, 1) < 0 || dup2(null, 2) < 0)
            _exit(1);
        const char *argv[10];
        int n = 0;
        argv[n++] = "containerd-shim-brig-v2";
        argv[n++] = "-namespace";
        argv[n++] = f->namespace;
        argv[n++] = "-id";
        argv[n++] = f->id;
        argv[n++] = "-address";
        argv[n++] = f->address;
        if (f->debug)
            argv[n++] = "-debug";
        argv[n] = NULL;
        execv("/proc/self/exe", (char **) argv);
        _exit(127);
    }
    close(fd);
    adjust_oom_score(pid);
    printf("%s\n", address);
    return 0;
fail:
    fprintf(stderr, "start shim for `%s`: %s\n", f->id, err->msg);
    brig_error_release(&err);
    return 1;
}

static uint32_t read_pid_file(const char *path)
{
    char buf[32] = { 0 };
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
        return 0;
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? (uint32_t) pid : 0;
}

/* After a shim died: whatever is left of the container goes, and
 * containerd gets the exit to report (137, as for a SIGKILL). */
static int do_delete(const struct flags *f)
{
    const char *bundle = f->bundle ? f->bundle : ".";
    char root[PATH_MAX], path[PATH_MAX];
    snprintf(root, sizeof(root), RUNTIME_ROOT "/%s", f->namespace);
    brig_error_t err = NULL, warning = NULL;
    if (brig_container_delete(root, f->id, true, &warning, &err) < 0) {
        fprintf(stderr, "delete `%s`: %s\n", f->id, err->msg);
        brig_error_release(&err);
    }
    brig_error_release(&warning);
    snprintf(path, sizeof(path), "%s/rootfs", bundle);
    for (int i = 0; i < 64 && umount2(path, MNT_DETACH) == 0; i++)
        ;
    snprintf(path, sizeof(path), "%s/init.pid", bundle);
    Shimpb__DeleteResponse resp = SHIMPB__DELETE_RESPONSE__INIT;
    Shimpb__Timestamp at = SHIMPB__TIMESTAMP__INIT;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    at.seconds = now.tv_sec;
    at.nanos = now.tv_nsec;
    resp.pid = read_pid_file(path);
    resp.exit_status = 128 + SIGKILL;
    resp.exited_at = &at;
    uint8_t buf[64];
    size_t len = shimpb__delete_response__pack(&resp, buf);
    if (fwrite(buf, 1, len, stdout) != len)
        return 1;
    return 0;
}

/* Containers get cgroups of their own wherever the host has any: v2,
 * hybrid and v1 layouts alike (a limit that can't be applied then fails
 * the create, never dropped). */
static bool cgroups_mounted(void)
{
    return brig_cgroup_layout() != BRIG_CGROUP_LAYOUT_NONE;
}

static void on_signal(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    struct signalfd_siginfo si;
    if (read(fd, &si, sizeof(si)) == sizeof(si))
        shim_loop_stop(loop);
}

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/* The daemon: serves the task API on fd 3 (or -socket) until Shutdown or
 * SIGTERM. */
/* The socket to serve on: fd 3 from containerd, or a new one at
 * f->socket; its path into sock. -1 after a log line. */
static int open_socket(const struct flags *f, char *sock)
{
    brig_error_t err = NULL;
    int lfd = 3;
    if (f->socket) {
        unlink(f->socket);
        lfd = listen_unix(f->socket, &err);
        if (lfd < 0) {
            logf_("error", "%s", err->msg);
            brig_error_release(&err);
            return -1;
        }
    }
    struct sockaddr_un sa;
    socklen_t salen = sizeof(sa);
    if (getsockname(lfd, (struct sockaddr *) &sa, &salen) < 0 || sa.sun_family != AF_UNIX) {
        logf_("error", "fd %d is not the shim's socket", lfd);
        return -1;
    }
    memcpy(sock, sa.sun_path, salen - offsetof(struct sockaddr_un, sun_path));
    return lfd;
}

static int do_serve(const struct flags *f)
{
    int log = open("log", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (log >= 0) {
        dup2(log, 2);
        close(log);
    }
    brig_error_t err = NULL;
    char sock[sizeof(((struct sockaddr_un *) 0)->sun_path) + 1] = { 0 };
    int lfd = open_socket(f, sock);
    if (lfd < 0)
        return 1;

    char root[PATH_MAX];
    snprintf(root, sizeof(root), RUNTIME_ROOT "/%s", f->namespace);
    if (mkdir_p(root, 0711) < 0) {
        logf_("error", "mkdir `%s`: %s", root, strerror(errno));
        return 1;
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

    struct shim_loop *loop = NULL;
    struct ttrpc_server *srv = NULL;
    struct shim_publisher *pub = NULL;
    struct shim_service *svc = NULL;
    int rc = 1;
    if (shim_loop_new(&loop, &err) < 0 || ttrpc_server_new(loop, &srv, &err) < 0
        || shim_publisher_new(loop, getenv("TTRPC_ADDRESS"), f->namespace, &pub, &err) < 0)
        goto out;
    struct shim_service_opts so = {
        .loop = loop,
        .server = srv,
        .publisher = pub,
        .ns = f->namespace,
        .runtime_root = root,
        .cgroups = cgroups_mounted(),
        .debug = f->debug,
    };
    if (shim_service_new(&so, &svc, &err) < 0 || ttrpc_server_listen(srv, lfd, &err) < 0)
        goto out;
    if (sfd >= 0 && shim_loop_add(loop, sfd, EPOLLIN, on_signal, NULL, &err) < 0)
        goto out;
    if (f->debug)
        logf_("debug", "serving on %s", sock);
    if (shim_loop_run(loop, &err) < 0)
        goto out;
    rc = 0;
out:
    if (err) {
        logf_("error", "%s", err->msg);
        brig_error_release(&err);
    }
    if (srv)
        ttrpc_server_flush(srv, 1000);
    if (pub)
        shim_publisher_flush(pub, 5000);
    unlink(sock);
    shim_service_free(svc);
    ttrpc_server_free(srv);
    shim_publisher_free(pub);
    shim_loop_free(loop);
    return rc;
}

int main(int argc, char **argv)
{
    struct flags f = { 0 };
    /* A brig-sandbox container's exec and delete find its handler by name. */
    brig_handlers_register(brig_sandbox_handlers);
    if (parse_flags(argc, argv, &f) < 0)
        return 1;
    if (f.version) {
        printf("containerd-shim-brig-v2:\n  Version: %s\n", BRIG_VERSION);
        return 0;
    }
    if (f.info) {
        fprintf(stderr, "-info is not supported\n");
        return 1;
    }
    if (!f.namespace || !*f.namespace) {
        fprintf(stderr, "shim namespace cannot be empty\n");
        return 1;
    }
    if (f.action && strcmp(f.action, "start") != 0 && strcmp(f.action, "delete") != 0) {
        fprintf(stderr, "unknown action `%s` (want start or delete)\n", f.action);
        return 1;
    }
    if ((!f.id || !*f.id) && f.action) {
        fprintf(stderr, "shim id cannot be empty\n");
        return 1;
    }
    if (!f.action) {
        /* The daemon forks every process that enters a container: it runs
         * from a sealed copy of itself, so they can't reach its file
         * (see brig-security(7)). */
        brig_error_t err = NULL;
        if (brig_selfexe_protect(argv, &err) < 0) {
            fprintf(stderr, "%s\n", err->msg);
            brig_error_release(&err);
            return 1;
        }
        return do_serve(&f);
    }
    if (strcmp(f.action, "delete") == 0)
        return do_delete(&f);
    if (!f.address || !*f.address) {
        fprintf(stderr, "shim address cannot be empty\n");
        return 1;
    }
    return do_start(&f);
}
