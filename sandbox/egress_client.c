#define _GNU_SOURCE
#include "sandbox/egress_client.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sha256.h"
#include "base/utils.h"
#include "sandbox/daemon.h"
#include "sandbox/egress.h"
#include "sandbox/locate.h"

#define CALL_TIMEOUT_S 10
#define START_WAIT_MS 30000 /* a slow machine (the test VM) starts it in seconds */

const char *brig_egress_dir(void)
{
    const char *env = getenv(BRIG_EGRESS_DIR_ENV);
    return env && *env ? env : BRIG_EGRESS_DIR_DEFAULT;
}

bool brig_egress_configured(void)
{
    const char *conf = getenv("BRIG_EGRESS_CONFIG");
    if (access(conf && *conf ? conf : BRIG_EGRESS_CONF, F_OK) == 0)
        return true;
    if (access(BRIG_EGRESS_APT_LIST, F_OK) == 0)
        return true;
    cleanup_dir DIR *d = opendir(BRIG_EGRESS_APT_DIR);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (brig_egress_apt_file(de->d_name))
            return true;
    return false;
}

int brig_egress_check_conf(brig_error_t *err)
{
    const char *env = getenv("BRIG_EGRESS_CONFIG");
    const char *path = env && *env ? env : BRIG_EGRESS_CONF;
    cleanup_free char *text = NULL;
    size_t len;
    if (brig_read_file(path, &text, &len, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return brig_error_wrap(err, "egress allow-list");
        brig_error_release(err);
        return 0;
    }
    struct brig_egress_conf c;
    if (brig_egress_conf_parse(text, path, &c, err) < 0)
        return -1;
    brig_egress_conf_free(&c);
    return 0;
}

void brig_egress_key(const char *state_dir, char key[BRIG_EGRESS_KEY_LEN + 1])
{
    char hash[65];
    brig_sha256_hex(state_dir, strlen(state_dir), hash);
    memcpy(key, hash, BRIG_EGRESS_KEY_LEN);
    key[BRIG_EGRESS_KEY_LEN] = '\0';
}

static int control_connect(brig_error_t *err)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int n = snprintf(sun.sun_path, sizeof sun.sun_path, "%s/%s", brig_egress_dir(),
                     BRIG_EGRESS_CONTROL);
    if (n < 0 || (size_t) n >= sizeof sun.sun_path)
        return brig_error_set(err, ENAMETOOLONG, "egress proxy: `%s`", brig_egress_dir());
    cleanup_close int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return brig_error_set(err, errno, "egress proxy: socket");
    struct timeval tv = { .tv_sec = CALL_TIMEOUT_S };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *) &sun, sizeof sun) < 0)
        return brig_error_set(err, errno, "egress proxy: connect `%s`", sun.sun_path);
    return brig_steal_fd(fd);
}

int brig_egress_call(const char *request, brig_error_t *err)
{
    cleanup_close int fd = control_connect(err);
    if (fd < 0)
        return -1;
    if (send(fd, request, strlen(request), MSG_NOSIGNAL) < 0)
        return brig_error_set(err, errno, "egress proxy: send");
    char reply[512];
    ssize_t n = recv(fd, reply, sizeof reply - 1, 0);
    if (n <= 0)
        return brig_error_set(err, n < 0 ? errno : EPIPE, "egress proxy: no answer");
    reply[n] = '\0';
    if (strcmp(reply, "ok") == 0)
        return 0;
    return brig_error_set(err, 0, "egress proxy: %s", reply);
}

/* What of our environment a proxy started by us gets: where it finds
 * programs and the user's configuration, its own settings, pip's and
 * npm's (the allow-list may come from them), the sanitizers' (a test
 * build). Nothing else: a daemon for the whole host must not carry one
 * caller's variables (a proxy of its own, a test's marker) for its life. */
static bool passed_on(const char *var)
{
    static const char *const prefixes[] = {
        "PATH=",       "HOME=",         "LANG=",          "BRIG_EGRESS",   "PIP_", "NPM_CONFIG_",
        "npm_config_", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=", NULL
    };
    for (size_t i = 0; prefixes[i]; i++)
        if (strncmp(var, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* brig-egress, detached from us (daemon.h). */
static int spawn_proxy(brig_error_t *err)
{
    cleanup_free char *path = NULL;
    if (brig_sandbox_locate_helper("brig-egress", &path, err) < 0)
        return brig_error_wrap(err, "egress proxy");
    char *const argv[] = { "brig-egress", NULL };
    return brig_sandbox_daemon_spawn("egress proxy", path, argv, passed_on, err);
}

/* True, the error released, when a call failed because no proxy listens
 * (no socket, or nobody behind it); false leaves any other error. */
static bool none_listens(brig_error_t *err)
{
    int why = (*err)->errnum;
    if (why != ECONNREFUSED && why != ENOENT)
        return false;
    brig_error_release(err);
    return true;
}

int brig_egress_ensure(brig_error_t *err)
{
    if (brig_egress_call("ping", err) == 0)
        return 0;
    if (!none_listens(err))
        return -1;
    if (spawn_proxy(err) < 0)
        return -1;
    /* Until it answers: it reads its allow-list and every registered
     * sandbox first. */
    for (int waited = 0;; waited += 10) {
        if (brig_egress_call("ping", err) == 0)
            return 0;
        if (waited >= START_WAIT_MS)
            return brig_error_wrap(err, "egress proxy: started, but does not answer "
                                        "(its log: /var/log/brig/egress.log)");
        brig_error_release(err);
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

static int registry_dir(char **out, brig_error_t *err)
{
    const char *dir = brig_egress_dir();
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "egress proxy: mkdir `%s`", dir);
    if (asprintf(out, "%s/%s", dir, BRIG_EGRESS_REGISTRY) < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "egress proxy");
    }
    if (mkdir(*out, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "egress proxy: mkdir `%s`", *out);
    return 0;
}

int brig_egress_register(const char *state_dir, pid_t pid, brig_error_t *err)
{
    char key[BRIG_EGRESS_KEY_LEN + 1], request[64];
    unsigned long long start = 0;
    cleanup_free char *dir = NULL, *text = NULL;
    brig_egress_key(state_dir, key);
    const char *slash = strrchr(state_dir, '/');
    if (brig_process_start_time(pid, &start, err) < 0 || registry_dir(&dir, err) < 0)
        return -1;
    if (asprintf(&text, "%s\n%s\n%d\n%llu\n", state_dir, slash ? slash + 1 : state_dir, pid, start)
        < 0)
        return brig_error_set(err, ENOMEM, "egress proxy");
    cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "egress proxy: open `%s`", dir);
    if (brig_write_file_atomic_at(fd, key, text, strlen(text), 0600, err) < 0)
        return brig_error_wrap(err, "egress proxy");
    snprintf(request, sizeof request, "add %s", key);
    if (brig_egress_ensure(err) < 0 || brig_egress_call(request, err) < 0) {
        unlinkat(fd, key, 0);
        return -1;
    }
    return 0;
}

int brig_egress_relisten(const char *state_dir, brig_error_t *err)
{
    char key[BRIG_EGRESS_KEY_LEN + 1], request[64];
    brig_egress_key(state_dir, key);
    snprintf(request, sizeof request, "add %s", key);
    /* Every exec asks: one call where the proxy runs, as it nearly always
     * does (its keeper restarts it); the ping and start only where not. */
    if (brig_egress_call(request, err) == 0)
        return 0;
    if (!none_listens(err))
        return -1;
    if (brig_egress_ensure(err) < 0 || brig_egress_call(request, err) < 0)
        return -1;
    return 0;
}

int brig_egress_unregister(const char *state_dir, brig_error_t *err)
{
    char key[BRIG_EGRESS_KEY_LEN + 1], request[64], path[4096];
    brig_egress_key(state_dir, key);
    snprintf(path, sizeof path, "%s/%s/%s", brig_egress_dir(), BRIG_EGRESS_REGISTRY, key);
    if (unlink(path) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "egress proxy: remove `%s`", path);
    snprintf(request, sizeof request, "del %s", key);
    /* No proxy running: nothing listens for the sandbox, and the next one
     * finds no registration. */
    if (brig_egress_call(request, err) < 0 && !none_listens(err))
        return -1;
    return 0;
}
