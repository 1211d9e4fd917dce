#define _GNU_SOURCE
#include "container/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "base/cleanup.h"
#include "container/handler.h"
#include "container/provision.h"
#include "process/hooks.h"
#include "rootfs/mounts.h"
#include "process/process.h"
#include "process/seccomp.h"
#include "spec/spec.h"
#include "process/sysctl.h"
#include "process/terminal.h"
#include "base/utils.h"

#define KILL_WAIT_MS 10000

/* ---- pidfds: signals that can't hit a recycled pid ---- */

/* Opens a pidfd for the container's init, or -1 (errno ESRCH) when the
 * recorded process is gone or the pid now belongs to someone else. */
static int init_pidfd(const struct brig_state *st)
{
    int fd = (int) syscall(SYS_pidfd_open, st->pid, 0);
    if (fd < 0)
        return -1;
    /* Checked after opening: from here on the pidfd pins the process. */
    if (!brig_state_init_alive(st)) {
        close(fd);
        errno = ESRCH;
        return -1;
    }
    return fd;
}

int brig_container_init_pidfd(const struct brig_opened_container *c, const char *id,
                              brig_error_t *err)
{
    /* Opened before the status, whose one read of the init's stat then
     * speaks of the process the pidfd pins: a pid reused before the open
     * fails the start-time check, as init_pidfd's second look would. */
    cleanup_close int fd = c->state->pid > 0 ? (int) syscall(SYS_pidfd_open, c->state->pid, 0) : -1;
    enum brig_status status = brig_state_status_in(c->dir_fd, c->state, NULL);
    if (status == BRIG_STATUS_PAUSED) {
        brig_error_set(err, 0, "cannot exec in container `%s`: it is paused", id);
        (*err)->errnum = BRIG_E_STATE;
        return -1;
    }
    if (status == BRIG_STATUS_CREATED)
        return -2;
    if (status != BRIG_STATUS_RUNNING || fd < 0)
        return brig_error_kind(err, ESRCH, "cannot exec in container `%s`: it is %s", id,
                               brig_status_name(status == BRIG_STATUS_RUNNING ? BRIG_STATUS_STOPPED
                                                                              : status));
    return brig_steal_fd(fd);
}

static bool wait_pidfd(int pidfd, int timeout_ms)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    return r > 0;
}

/* Pids whose pid namespace is the init's: every process of a container
 * that has a pid namespace of its own. */
static int signal_pid_namespace(pid_t init, int sig, brig_error_t *err)
{
    char path[64];
    struct stat init_ns, ns;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", init);
    if (stat(path, &init_ns) < 0)
        return brig_error_set(err, errno, "stat `%s`", path);
    cleanup_dir DIR *d = opendir("/proc");
    if (d == NULL)
        return brig_error_set(err, errno, "open /proc");
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
        if (stat(path, &ns) == 0 && ns.st_ino == init_ns.st_ino && ns.st_dev == init_ns.st_dev)
            kill((pid_t) pid, sig);
    }
    return 0;
}

/* ---- the saved spec for post* hooks ---- */

int brig_container_load_spec(int dir_fd, struct brig_spec **spec, brig_error_t *err)
{
    const struct brig_handler *h = NULL;
    if (brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, err) < 0)
        return -1;
    return brig_container_load_spec_for(dir_fd, h, spec, err);
}

int brig_container_load_spec_for(int dir_fd, const struct brig_handler *h, struct brig_spec **spec,
                                 brig_error_t *err)
{
    cleanup_free char *json = NULL;
    size_t len = 0;
    *spec = NULL;
    if (brig_read_file_at(dir_fd, BRIG_SAVED_CONFIG, &json, &len, err) < 0) {
        if ((*err)->errnum == ENOENT) {
            brig_error_release(err);
            return 0;
        }
        return -1;
    }
    if (brig_spec_parse(json, len, "saved config.json", spec, err) < 0)
        return -1;
    /* A handler's container: its layer's transform again, so exec gets
     * the same process defaults and filter as the init. */
    if (h && h->load_spec && h->load_spec(dir_fd, *spec, err) < 0) {
        brig_spec_free(*spec);
        *spec = NULL;
        return -1;
    }
    return 0;
}

static int run_post_hooks(int dir_fd, const struct brig_state *st, enum brig_status status,
                          bool poststart, brig_error_t *warning)
{
    /* Most containers have no post* hooks: then the saved spec stays unread. */
    if (st->post_hooks == 0)
        return 0;
    cleanup_spec struct brig_spec *spec = NULL;
    if (brig_container_load_spec(dir_fd, &spec, warning) < 0 || spec == NULL)
        return spec == NULL && *warning ? -1 : 0;
    cleanup_free char *json = NULL;
    int r = brig_state_to_json(st, status, false, &json, warning);
    const struct brig_hook_list *all = poststart ? &spec->hooks.poststart : &spec->hooks.poststop;
    /* A failing post* hook is a warning and the others still run: the
     * container's fate is already sealed either way. The first failure is
     * the one reported. */
    for (size_t i = 0; r == 0 && i < all->n; i++) {
        struct brig_hook_list one = { &all->items[i], 1 };
        brig_error_t failed = NULL;
        if (brig_hooks_run(&one, poststart ? "poststart" : "poststop", json, &failed) < 0) {
            if (*warning == NULL)
                *warning = brig_steal_ptr(failed);
            brig_error_release(&failed);
        }
    }
    return *warning ? -1 : r;
}

/* ---- start ---- */

int brig_container_open(const char *root, const char *id, int *root_fd, struct brig_state **st,
                        brig_error_t *err)
{
    *root_fd = brig_state_root_open(root, false, err);
    if (*root_fd < 0) {
        if ((*err)->errnum == ENOENT)
            return brig_error_not_found(err, id);
        return -1;
    }
    int dir_fd = brig_state_dir_open(*root_fd, id, true, err);
    if (dir_fd < 0)
        return -1;
    if (brig_state_read(dir_fd, id, st, err) < 0) {
        close(dir_fd);
        return -1;
    }
    return dir_fd;
}

/* Reads the byte the init writes into the exec fifo, watching the init so a
 * dead one doesn't leave us waiting forever. */
static int release_init(int dir_fd, const struct brig_state *st, brig_error_t *err)
{
    /* The pidfd first: opening the fifo lets the init go, and a short-lived
     * process could be gone before we looked for it. */
    cleanup_close int pidfd = init_pidfd(st);
    if (pidfd < 0)
        return brig_error_set(err, 0, "container `%s`: its init has exited", st->id);
    cleanup_close int fifo = openat(dir_fd, BRIG_EXEC_FIFO, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fifo < 0)
        return brig_error_set(err, errno, "open exec fifo");
    for (;;) {
        struct pollfd p[2] = { { .fd = fifo, .events = POLLIN },
                               { .fd = pidfd, .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return brig_error_set(err, errno, "wait for exec fifo");
        }
        if (p[0].revents & POLLIN) {
            char msg[4096];
            ssize_t n = read(fifo, msg, sizeof msg - 1);
            if (n > 0 && msg[0] == '0')
                break;
            if (n > 0 && msg[0] == 'E') {
                /* A startContainer hook failed; the init has given up. */
                fcntl(fifo, F_SETFL, 0); /* block: the rest comes before the init exits */
                ssize_t more = brig_read_all(fifo, msg + n, sizeof msg - 1 - (size_t) n);
                msg[n + (more > 0 ? more : 0)] = '\0';
                return brig_error_set(err, 0, "container `%s`: %s", st->id, msg + 1);
            }
        }
        if (p[1].revents & POLLIN)
            return brig_error_set(err, 0, "container `%s`: its init exited before start", st->id);
    }
    if (unlinkat(dir_fd, BRIG_EXEC_FIFO, 0) < 0)
        return brig_error_set(err, errno, "remove exec fifo");
    return 0;
}

int brig_container_start_opened(int dir_fd, const struct brig_state *st, brig_error_t *warning,
                                brig_error_t *err)
{
    if (release_init(dir_fd, st, err) < 0)
        return -1;
    if (run_post_hooks(dir_fd, st, BRIG_STATUS_RUNNING, true, warning) < 0)
        brig_error_wrap(warning, "container `%s`", st->id);
    return 0;
}

int brig_container_start(const char *root, const char *id, brig_error_t *warning, brig_error_t *err)
{
    cleanup_close int root_fd = -1;
    cleanup_state struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (dir_fd < 0)
        return -1;
    enum brig_status status = brig_state_status(dir_fd, st);
    int r;
    if (status != BRIG_STATUS_CREATED)
        r = brig_error_set(err, 0, "cannot start container `%s`: it is %s, not created", id,
                           brig_status_name(status));
    else
        r = brig_container_start_opened(dir_fd, st, warning, err);
    return r;
}

/* ---- kill ---- */

/* Every process of the container: through its cgroup when brig manages
 * one, else through its pid namespace. Returns 1 when that reached every
 * process (the init included), 0 when only the init is left to signal. */
static int signal_all(const struct brig_state *st, int sig, brig_error_t *err)
{
    if (*st->cgroup_path) {
        cleanup_cgroup struct brig_cgroup cg = BRIG_CGROUP_INIT;
        if (brig_cgroup_open(st->cgroup_path, &cg, err) < 0) {
            /* Gone already (a delete stopped half-way): nothing to signal
             * there, only the init, if it is still alive. */
            if ((*err)->errnum != ENOENT)
                return -1;
            brig_error_release(err);
            return 0;
        }
        int r = sig == SIGKILL ? brig_cgroup_kill_all(&cg, err)
                               : brig_cgroup_signal_all(&cg, sig, err);
        return r < 0 ? -1 : 1;
    }
    if (st->own_pid_ns && sig != SIGKILL)
        return signal_pid_namespace(st->pid, sig, err) < 0 ? -1 : 1;
    return 0;
}

/* A process frozen by a v1 freezer holds SIGKILL back until it thaws (v2
 * kills frozen processes): a paused container that is killed is thawed. */
static void thaw_to_die(const struct brig_state *st)
{
    cleanup_cgroup struct brig_cgroup cg = BRIG_CGROUP_INIT;
    brig_error_t ignored = NULL;
    if (*st->cgroup_path && brig_cgroup_open(st->cgroup_path, &cg, &ignored) == 0
        && brig_cgroup_is_frozen(&cg))
        brig_cgroup_freeze(&cg, false, &ignored);
    brig_error_release(&ignored);
}

static int signal_container(const struct brig_state *st, int sig, bool all, brig_error_t *err)
{
    cleanup_close int pidfd = init_pidfd(st);
    if (pidfd < 0)
        return brig_error_set(err, 0, "container `%s` is not running", st->id);
    int done = all ? signal_all(st, sig, err) : 0;
    if (done < 0)
        return -1;
    if (done)
        return 0;
    /* SIGKILL to the init of a pid namespace takes every process in it.
     * Signal 0 only asks whether the init is there. */
    if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 && (errno != ESRCH || sig == 0))
        return errno == ESRCH ? brig_error_set(err, 0, "container `%s` is not running", st->id)
                              : brig_error_set(err, errno, "signal container `%s`", st->id);
    if (sig == SIGKILL)
        thaw_to_die(st);
    /* After a signal meant to end it, give the init a moment to be gone,
     * so `kill c1 KILL && delete c1` finds it stopped. */
    if (sig == SIGKILL)
        wait_pidfd(pidfd, 1000);
    else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)
        wait_pidfd(pidfd, 200);
    return 0;
}

int brig_container_kill(const char *root, const char *id, int sig, bool all, brig_error_t *err)
{
    cleanup_close int root_fd = -1;
    cleanup_state struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (dir_fd < 0)
        return -1;
    enum brig_status status = brig_state_status(dir_fd, st);
    int r;
    if (status == BRIG_STATUS_STOPPED || status == BRIG_STATUS_CREATING)
        r = brig_error_set(err, 0, "container `%s` is %s", id, brig_status_name(status));
    else
        r = signal_container(st, sig, all, err);
    return r;
}

/* ---- delete ---- */

static int kill_and_wait(const struct brig_state *st, brig_error_t *err)
{
    cleanup_close int pidfd = init_pidfd(st);
    /* A frozen cgroup would hold SIGKILL back until thawed; cgroup.kill
     * works on frozen cgroups, and takes the processes outside the init's
     * pid namespace too. */
    if (*st->cgroup_path && signal_all(st, SIGKILL, err) < 0)
        return -1;
    if (pidfd < 0)
        return 0;
    if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
        return brig_error_set(err, errno, "kill container `%s`", st->id);
    if (!wait_pidfd(pidfd, KILL_WAIT_MS))
        return brig_error_set(err, ETIMEDOUT, "container `%s` did not die after SIGKILL", st->id);
    return 0;
}

/* A create killed while making its cgroup recorded no path in the state,
 * but the directories it was making (provision.c): those that are empty
 * go. */
static void remove_planned(int dir_fd)
{
    cleanup_free char *planned = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file_at(dir_fd, BRIG_CGROUP_PLANNED, &planned, NULL, &ignored) == 0)
        brig_cgroup_remove_planned(planned);
    brig_error_release(&ignored);
}

int brig_container_delete(const char *root, const char *id, bool force, brig_error_t *warning,
                          brig_error_t *err)
{
    cleanup_close int root_fd = -1;
    cleanup_state struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (dir_fd < 0) {
        /* `delete --force` of what isn't there is done already. */
        if (force && (*err)->errnum == ENOENT) {
            brig_error_release(err);
            return 0;
        }
        return -1;
    }
    enum brig_status status = brig_state_status(dir_fd, st);
    int r = 0;
    if ((status == BRIG_STATUS_RUNNING || status == BRIG_STATUS_PAUSED) && !force) {
        r = brig_error_set(err, 0, "cannot delete container `%s`: it is %s", id,
                           brig_status_name(status));
        (*err)->errnum = BRIG_E_STATE; /* alive: the caller may offer to force it */
    }
    if (r == 0 && status != BRIG_STATUS_STOPPED && status != BRIG_STATUS_CREATING)
        r = kill_and_wait(st, err);
    /* A stopped init may leave processes behind in its cgroup (no pid
     * namespace of its own): they go too, or the cgroup can't be removed. */
    if (r == 0 && (status == BRIG_STATUS_STOPPED || status == BRIG_STATUS_CREATING)
        && *st->cgroup_path && signal_all(st, SIGKILL, err) < 0)
        r = -1;
    if (r == 0 && status != BRIG_STATUS_CREATING
        && run_post_hooks(dir_fd, st, BRIG_STATUS_STOPPED, false, warning) < 0)
        brig_error_wrap(warning, "container `%s`", id);
    if (r == 0 && *st->cgroup_path)
        r = brig_cgroup_destroy(st->cgroup_path, err);
    if (r == 0 && !*st->cgroup_path)
        remove_planned(dir_fd);
    const struct brig_handler *h = NULL;
    if (r == 0 && brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, err) < 0)
        r = -1;
    if (r == 0 && h && h->teardown && h->teardown(dir_fd, err) < 0)
        r = brig_error_wrap(err, "delete `%s`: %s", id, h->name);
    if (r == 0)
        r = brig_state_dir_remove(root_fd, dir_fd, id, err);
    return r;
}

/* ---- state, list ---- */

int brig_container_state(const char *root, const char *id, struct brig_state **st,
                         enum brig_status *status, brig_error_t *err)
{
    cleanup_close int root_fd = brig_state_root_open(root, false, err);
    if (root_fd < 0) {
        if ((*err)->errnum == ENOENT)
            return brig_error_not_found(err, id);
        return -1;
    }
    cleanup_close int dir_fd = brig_state_dir_open(root_fd, id, false, err);
    if (dir_fd < 0 || brig_state_read(dir_fd, id, st, err) < 0)
        return -1;
    *status = brig_state_status(dir_fd, *st);
    return 0;
}

/* list names the owner (the user who created the container, i.e. who owns
 * its state dir) where `state` leaves the field empty, as runc does. */
static void set_owner_from_dir(int root_fd, struct brig_state *st)
{
    struct stat sb;
    if (fstatat(root_fd, st->id, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    char user[256];
    if (brig_passwd_lookup("/etc/passwd", sb.st_uid, user, sizeof user, NULL, 0) < 0)
        snprintf(user, sizeof user, "#%u", sb.st_uid);
    char *name = strdup(user);
    if (name) {
        free(st->owner);
        st->owner = name;
    }
}

static int compare_entries(const void *a, const void *b)
{
    const struct brig_container_entry *x = a, *y = b;
    return strcmp(x->state->id, y->state->id);
}

int brig_container_list(const char *root, struct brig_container_entry **out, size_t *n,
                        brig_error_t *err)
{
    *out = NULL;
    *n = 0;
    cleanup_dir DIR *d = opendir(root);
    if (d == NULL)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open state root `%s`", root);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        struct brig_state *st = NULL;
        enum brig_status status;
        brig_error_t ignored = NULL;
        if (brig_container_state(root, de->d_name, &st, &status, &ignored) < 0) {
            brig_error_release(&ignored);
            continue;
        }
        if (*st->owner == '\0')
            set_owner_from_dir(dirfd(d), st);
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct brig_container_entry *bigger = realloc(*out, cap * sizeof **out);
            if (bigger == NULL) {
                brig_state_free(st);
                brig_container_list_free(*out, *n);
                *out = NULL;
                *n = 0;
                return brig_error_set(err, ENOMEM, "list");
            }
            *out = bigger;
        }
        (*out)[(*n)++] = (struct brig_container_entry){ st, status };
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, compare_entries);
    return 0;
}

void brig_container_list_free(struct brig_container_entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++)
        brig_state_free(entries[i].state);
    free(entries);
}
