#define _GNU_SOURCE
/* The shim's tasks end to end on this host: busybox containers created,
 * started, exec'd into, killed, waited for and deleted through the task
 * API, with stdio through fifos and exits from the reaper. No cgroup of
 * their own (shim.bats tests the cgroup parts under containerd). Needs
 * root. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"
#include "unit.h"

#ifndef BUSYBOX
#define BUSYBOX "/bin/busybox"
#endif

int brig_spec_default_json(bool rootless, char **out, brig_error_t *err);

static char tmp[] = "/tmp/shim-task.XXXXXX";
static char root[128], pristine[128];

struct exits {
    struct shim_exit e[16];
    char ids[16][64];
    int n;
};
static struct exits seen;
static int ooms;

static void on_exit_cb(void *data, const struct shim_exit *e)
{
    if (seen.n < 16) {
        seen.e[seen.n] = *e;
        snprintf(seen.ids[seen.n], sizeof seen.ids[0], "%s/%s", e->id, e->exec_id);
        seen.n++;
    }
}

static void on_oom_cb(void *data, const char *id)
{
    ooms++;
}

static int count_exits(const char *key)
{
    int n = 0;
    for (int i = 0; i < seen.n; i++)
        n += strcmp(seen.ids[i], key) == 0;
    return n;
}

static const struct shim_exit *exit_of(const char *key)
{
    for (int i = 0; i < seen.n; i++)
        if (strcmp(seen.ids[i], key) == 0)
            return &seen.e[i];
    return NULL;
}

static int status_of(const char *key)
{
    const struct shim_exit *e = exit_of(key);
    return e ? (int) e->status : -1;
}

static void stop_cb(struct shim_loop *l, void *data)
{
    *(bool *) data = true;
    shim_loop_stop(l);
}

/* Turns the loop until an exit for key was reported (or 10 s pass). */
static bool run_until_exit(struct shim_loop *l, const char *key)
{
    brig_error_t err = NULL;
    for (int i = 0; i < 1000 && !count_exits(key); i++) {
        bool fired = false;
        shim_loop_after(l, 10, stop_cb, &fired, &err);
        shim_loop_run(l, &err);
    }
    return count_exits(key) > 0;
}

static void spin(struct shim_loop *l, int ms)
{
    brig_error_t err = NULL;
    bool fired = false;
    shim_loop_after(l, ms, stop_cb, &fired, &err);
    while (!fired)
        shim_loop_run(l, &err);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* A bundle whose process runs `sh -c script`, its rootfs a copy of the
 * pristine one (or empty, for a test that mounts it). */
static char *make_bundle(const char *name, const char *script, bool terminal, bool copy_rootfs)
{
    char *bundle = NULL;
    if (asprintf(&bundle, "%s/%s", tmp, name) < 0)
        return NULL;
    sh("mkdir -p %s/rootfs", bundle);
    if (copy_rootfs)
        sh("cp -a %s/. %s/rootfs/", pristine, bundle);
    char *json = NULL;
    brig_error_t err = NULL;
    if (brig_spec_default_json(false, &json, &err) < 0)
        return NULL;
    /* The default spec's process: a terminal running sh. */
    char *args = strstr(json, "\"sh\"");
    char *term = strstr(json, "\"terminal\": true");
    if (args == NULL || term == NULL)
        return NULL;
    FILE *f = NULL;
    char *path = NULL;
    if (asprintf(&path, "%s/config.json", bundle) < 0 || (f = fopen(path, "w")) == NULL)
        return NULL;
    fwrite(json, 1, (size_t) (term - json), f);
    fprintf(f, "\"terminal\": %s", terminal ? "true" : "false");
    const char *after_term = term + strlen("\"terminal\": true");
    fwrite(after_term, 1, (size_t) (args - after_term), f);
    fprintf(f, "\"sh\", \"-c\", \"%s\"", script);
    fputs(args + 4, f);
    fclose(f);
    free(path);
    free(json);
    return bundle;
}

static int fifo(const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", tmp, name);
    if (mkfifo(path, 0600) < 0)
        return -1;
    return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

static void read_fd(int fd, char *buf, size_t size)
{
    ssize_t n = read(fd, buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
}

static bool state_dir_exists(const char *id)
{
    char path[256];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", root, id);
    return stat(path, &sb) == 0;
}

static void wait_cb(void *data, const struct shim_exit *e)
{
    *(int *) data = (int) e->status;
}

int main(void)
{
    if (geteuid() != 0 || access(BUSYBOX, X_OK) != 0) {
        printf("1..0 # skip needs root and %s\n", BUSYBOX);
        return 77;
    }
    if (mkdtemp(tmp) == NULL)
        return 1;
    snprintf(root, sizeof root, "%s/state", tmp);
    snprintf(pristine, sizeof pristine, "%s/pristine", tmp);
    sh("mkdir -p %s/bin %s/proc %s/dev %s/sys %s/tmp && cp %s %s/bin/busybox && "
       "for a in sh echo cat sleep true; do ln -s busybox %s/bin/$a; done",
       pristine, pristine, pristine, pristine, pristine, BUSYBOX, pristine, pristine);

    brig_error_t err = NULL;
    struct shim_loop *l = NULL;
    struct shim_tasks *t = NULL;
    shim_loop_new(&l, &err);
    CHECK(shim_tasks_new(l, "default", root, on_exit_cb, on_oom_cb, NULL, &t, &err) == 0,
          "a task table is made");
    shim_tasks_set_cgroups(t, false);

    /* ---- a container: output, exit status, exactly one exit ---- */
    char out[128], errp[128], buf[256];
    int rout = fifo("c1.out", out, sizeof out), rerr = fifo("c1.err", errp, sizeof errp);
    char *b1 = make_bundle("c1", "echo to-out; echo to-err >&2; exit 3", false, true);
    struct shim_create_opts o = { .id = "c1", .bundle = b1, .io = { NULL, out, errp, false } };
    pid_t pid = 0;
    int r = shim_task_create(t, &o, &pid, &err);
    CHECK(r == 0 && pid > 0, "create c1");
    if (r < 0)
        printf("# %s\n", err->msg);
    brig_error_release(&err);
    struct shim_state st;
    CHECK(shim_task_state(t, "c1", NULL, &st, &err) == 0 && st.status == SHIM_CREATED
              && st.pid == pid && strcmp(st.bundle, b1) == 0,
          "c1 is created, with its pid and bundle");
    CHECK(shim_task_create(t, &o, &pid, &err) == SHIM_E_EXISTS, "a second create is AlreadyExists");
    brig_error_release(&err);
    CHECK(shim_tasks_count(t) == 1, "one task");
    pid_t started = 0;
    CHECK(shim_task_start(t, "c1", "", &started, &err) == 0 && started == pid, "start c1");
    CHECK(run_until_exit(l, "c1/"), "c1's exit is reported");
    const struct shim_exit *e = exit_of("c1/");
    CHECK(e && e->status == 3 && e->pid == pid && e->exited_at.tv_sec > 0,
          "with its status, pid and time");
    read_fd(rout, buf, sizeof buf);
    CHECK_STR(buf, "to-out\n", "stdout went to the stdout fifo");
    read_fd(rerr, buf, sizeof buf);
    CHECK_STR(buf, "to-err\n", "stderr went to the stderr fifo");
    int waited = -1;
    CHECK(shim_task_wait(t, "c1", NULL, wait_cb, &waited, &err) == 0 && waited == 3,
          "Wait after the exit answers at once");
    CHECK(shim_task_state(t, "c1", "", &st, &err) == 0 && st.status == SHIM_STOPPED
              && st.exit_status == 3,
          "c1 is stopped with status 3");
    CHECK(shim_task_start(t, "c1", "", &started, &err) == SHIM_E_PRECONDITION,
          "starting it again is FailedPrecondition");
    brig_error_release(&err);
    CHECK(shim_task_kill(t, "c1", "", SIGTERM, false, &err) == SHIM_E_NOT_FOUND,
          "killing what has exited is NotFound");
    brig_error_release(&err);
    struct shim_exit del;
    CHECK(shim_task_delete(t, "c1", "", &del, &err) == 0 && del.status == 3
              && strcmp(del.id, "c1") == 0,
          "delete c1 answers with its exit");
    CHECK(!state_dir_exists("c1"), "and removes its state");
    CHECK(shim_task_state(t, "c1", "", &st, &err) == SHIM_E_NOT_FOUND, "c1 is gone: NotFound");
    brig_error_release(&err);
    close(rout);
    close(rerr);

    /* ---- exec, wait before the exit, kill, delete refused while running ---- */
    char *b2 = make_bundle("c2", "echo ready; exec sleep 100", false, true);
    rout = fifo("c2.out", out, sizeof out);
    struct shim_create_opts o2 = { .id = "c2", .bundle = b2, .io = { NULL, out, NULL, false } };
    CHECK(shim_task_create(t, &o2, &pid, &err) == 0
              && shim_task_start(t, "c2", NULL, &started, &err) == 0,
          "create and start c2");
    char eout[128];
    int reout = fifo("e1.out", eout, sizeof eout);
    const char *proc = "{\"args\":[\"sh\",\"-c\",\"echo in-exec; exit 5\"],\"cwd\":\"/\","
                       "\"env\":[\"PATH=/bin\"]}";
    struct shim_stdio eio = { NULL, eout, NULL, false };
    CHECK(shim_task_exec(t, "c2", "e1", proc, strlen(proc), &eio, &err) == 0,
          "exec e1 is registered");
    CHECK(shim_task_exec(t, "c2", "e1", proc, strlen(proc), &eio, &err) == SHIM_E_EXISTS,
          "the same exec id again is AlreadyExists");
    brig_error_release(&err);
    CHECK(shim_task_exec(t, "c2", "e2", "{\"args\":", 8, &eio, &err) == SHIM_E_INVALID,
          "a broken process is InvalidArgument");
    brig_error_release(&err);
    CHECK(shim_task_exec(t, "nope", "e3", proc, strlen(proc), &eio, &err) == SHIM_E_NOT_FOUND,
          "exec in an unknown container is NotFound");
    brig_error_release(&err);
    CHECK(shim_task_state(t, "c2", "e1", &st, &err) == 0 && st.status == SHIM_CREATED
              && strcmp(st.exec_id, "e1") == 0,
          "e1 is created");
    int e1_status = -1;
    CHECK(shim_task_wait(t, "c2", "e1", wait_cb, &e1_status, &err) == 0 && e1_status == -1,
          "Wait on e1 is pending");
    pid_t epid = 0;
    r = shim_task_start(t, "c2", "e1", &epid, &err);
    CHECK(r == 0 && epid > 0 && epid != pid, "start e1");
    if (r < 0)
        printf("# %s\n", err->msg);
    brig_error_release(&err);
    CHECK(run_until_exit(l, "c2/e1"), "e1's exit is reported");
    CHECK(e1_status == 5, "the pending Wait got status 5");
    read_fd(reout, buf, sizeof buf);
    CHECK_STR(buf, "in-exec\n", "e1's output went to its fifo");
    CHECK(shim_task_delete(t, "c2", "e1", &del, &err) == 0 && del.status == 5
              && strcmp(del.exec_id, "e1") == 0,
          "delete e1");
    pid_t *pids = NULL;
    size_t n = 0;
    CHECK(shim_task_pids(t, "c2", &pids, &n, &err) == 0 && n == 1 && pids[0] == pid,
          "pids: the init is left");
    free(pids);
    CHECK(shim_task_delete(t, "c2", NULL, &del, &err) == SHIM_E_PRECONDITION,
          "deleting a running container is FailedPrecondition");
    brig_error_release(&err);
    CHECK(shim_task_resize_pty(t, "c2", NULL, 80, 24, &err) == 0,
          "resize without a terminal is a no-op");
    struct shim_checkpoint_opts ck = { .image_path = NULL };
    CHECK(shim_task_checkpoint(t, "c2", &ck, &err) == SHIM_E_INVALID,
          "checkpoint without an image path is InvalidArgument");
    brig_error_release(&err);
    ck.image_path = "/nonexistent-images";
    ck.cgroups_mode = "sometimes";
    CHECK(shim_task_checkpoint(t, "c2", &ck, &err) == SHIM_E_INVALID,
          "checkpoint with an unknown cgroups mode is InvalidArgument");
    brig_error_release(&err);
    CHECK(shim_task_checkpoint(t, "nope", &ck, &err) == SHIM_E_NOT_FOUND,
          "checkpoint of an unknown container is NotFound");
    brig_error_release(&err);
    CHECK(shim_task_kill(t, "c2", NULL, SIGKILL, false, &err) == 0, "kill c2");
    CHECK(run_until_exit(l, "c2/"), "c2's exit is reported");
    CHECK(status_of("c2/") == 128 + SIGKILL, "with 128+SIGKILL");
    read_fd(rout, buf, sizeof buf);
    CHECK_STR(buf, "ready\n", "c2's output arrived");
    spin(l, 50);
    CHECK(count_exits("c2/") == 1 && count_exits("c2/e1") == 1 && count_exits("c1/") == 1,
          "every exit was reported exactly once");
    CHECK(shim_task_delete(t, "c2", NULL, &del, &err) == 0 && del.status == 137, "delete c2");
    close(rout);
    close(reout);

    /* ---- the rootfs from a Mount list, unmounted at delete ---- */
    char *b3 = make_bundle("c3", "test -x /bin/busybox", false, false);
    const char *bind_opts[] = { "rbind", "rw" };
    struct shim_mount m = { "bind", pristine, NULL, bind_opts, 2 };
    struct shim_create_opts o3 = { .id = "c3", .bundle = b3, .mounts = &m, .n_mounts = 1 };
    r = shim_task_create(t, &o3, &pid, &err);
    CHECK(r == 0, "create c3 on a rootfs mounted from the Mount list");
    if (r < 0)
        printf("# %s\n", err->msg);
    brig_error_release(&err);
    shim_task_start(t, "c3", NULL, &started, &err);
    CHECK(run_until_exit(l, "c3/") && status_of("c3/") == 0, "c3 saw its rootfs");
    CHECK(shim_task_delete(t, "c3", NULL, &del, &err) == 0, "delete c3");
    char probe[256];
    snprintf(probe, sizeof probe, "%s/rootfs/bin/busybox", b3);
    CHECK(access(probe, F_OK) < 0, "the rootfs is unmounted");
    const char *bad_opts[] = { "bind" };
    struct shim_mount bad = { "nosuchfs", "none", NULL, bad_opts, 1 };
    struct shim_create_opts o4 = { .id = "c4", .bundle = b3, .mounts = &bad, .n_mounts = 1 };
    CHECK(shim_task_create(t, &o4, &pid, &err) < 0 && strstr(err->msg, "c4"),
          "a failing rootfs mount is an error naming the container");
    brig_error_release(&err);
    CHECK(shim_tasks_count(t) == 0 && !state_dir_exists("c4"), "and leaves nothing behind");

    /* ---- a terminal ---- */
    char *b5 = make_bundle("c5", "test -t 0 && test -t 1 && echo on-a-tty", true, true);
    rout = fifo("c5.out", out, sizeof out);
    struct shim_create_opts o5 = { .id = "c5", .bundle = b5, .io = { NULL, out, NULL, true } };
    r = shim_task_create(t, &o5, &pid, &err);
    CHECK(r == 0, "create c5 with a terminal");
    if (r < 0)
        printf("# %s\n", err->msg);
    brig_error_release(&err);
    CHECK(shim_task_resize_pty(t, "c5", NULL, 100, 40, &err) == 0, "its terminal is resized");
    shim_task_start(t, "c5", NULL, &started, &err);
    CHECK(run_until_exit(l, "c5/") && status_of("c5/") == 0, "c5 ran on a terminal");
    spin(l, 50);
    read_fd(rout, buf, sizeof buf);
    CHECK(strstr(buf, "on-a-tty") != NULL, "its output came through the terminal");
    shim_task_delete(t, "c5", NULL, &del, &err);
    close(rout);

    /* ---- delete of a created container kills its init ---- */
    char *b6 = make_bundle("c6", "true", false, true);
    struct shim_create_opts o6 = { .id = "c6", .bundle = b6 };
    shim_task_create(t, &o6, &pid, &err);
    int w6 = -1;
    shim_task_wait(t, "c6", NULL, wait_cb, &w6, &err);
    CHECK(shim_task_delete(t, "c6", NULL, &del, &err) == 0 && waitpid(pid, NULL, WNOHANG) == pid,
          "delete of a created container ends its init");
    CHECK(w6 == 137, "its pending Wait is answered");
    CHECK(shim_tasks_count(t) == 0 && !state_dir_exists("c6"), "nothing is left");

    CHECK(ooms == 0, "no OOM was reported");
    shim_tasks_free(t);
    shim_loop_free(l);
    free(b1);
    free(b2);
    free(b3);
    free(b5);
    free(b6);
    sh("rm -rf %s", tmp);
    return unit_done();
}
