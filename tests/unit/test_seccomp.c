/* seccomp: compile errors, each action, operator and flag in a forked
 * child that loads the filter, the notify fd and the listener hand-over,
 * and the two shipped profiles running real workloads. Needs root (or
 * CAP_SYS_ADMIN) to load filters without no_new_privs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "base/cleanup.h"
#include "process/seccomp.h"
#include "spec/spec.h"
#include "unit.h"

static int compile(const char *json, struct brig_seccomp_filter **f, brig_error_t *err)
{
    struct brig_seccomp *s = NULL;
    *f = NULL;
    if (brig_seccomp_parse(json, strlen(json), "test", &s, err) < 0)
        return -1;
    int r = brig_seccomp_compile(s, f, err);
    brig_seccomp_free_spec(s);
    return r;
}

/* The compile error for json, or NULL when it compiles. */
static char *compile_error(const char *json)
{
    struct brig_seccomp_filter *f;
    brig_error_t err = NULL;
    if (compile(json, &f, &err) == 0) {
        brig_seccomp_free(f);
        return NULL;
    }
    char *msg = strdup(err->msg);
    brig_error_release(&err);
    return msg;
}

static void check_error(const char *json, const char *want, const char *name)
{
    char *msg = compile_error(json);
    bool ok = msg && strstr(msg, want);
    CHECK(ok, name);
    if (!ok)
        printf("#   got \"%s\", want it to contain \"%s\"\n", msg ? msg : "(compiled)", want);
    free(msg);
}

typedef int (*child_fn)(void *arg);

/* Runs fn in a child under the filter compiled from json; returns the
 * child's wait status, or -1 when the filter didn't compile. The child exits
 * 100 + step when loading fails. */
static int run_filtered(const char *json, child_fn fn, void *arg)
{
    struct brig_seccomp_filter *f;
    brig_error_t err = NULL;
    if (compile(json, &f, &err) < 0) {
        printf("# compile: %s\n", err->msg);
        brig_error_release(&err);
        return -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int nfd;
        if (brig_seccomp_load(f, &nfd, &err) < 0) {
            fprintf(stderr, "# load: %s\n", err->msg);
            _exit(100);
        }
        _exit(fn(arg));
    }
    brig_seccomp_free(f);
    int status;
    waitpid(pid, &status, 0);
    return status;
}

static bool exited(int status, int code)
{
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static bool killed_by(int status, int sig)
{
    return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* ---- compile errors ------------------------------------------------------------------ */

static void test_compile_errors(void)
{
    check_error("{\"defaultAction\":\"SCMP_ACT_FOO\"}",
                "linux.seccomp.defaultAction: unknown action `SCMP_ACT_FOO`",
                "unknown default action");
    check_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
                "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"},"
                "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_FOO\"}]}",
                "linux.seccomp.syscalls[1].action: unknown action `SCMP_ACT_FOO`",
                "unknown rule action");
    check_error(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],"
        "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_XX\"}]}]}",
        "linux.seccomp.syscalls[0].args[0].op: unknown operator `SCMP_CMP_XX`", "unknown operator");
    check_error(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],"
        "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
        "linux.seccomp.syscalls[0].args[0].index: 6 is out of range", "argument index 6");
    check_error(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_Z80\"]}",
        "linux.seccomp.architectures[1]: unknown architecture `SCMP_ARCH_Z80`", "unknown arch");
    check_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_NOPE\"]}",
                "linux.seccomp.flags[0]: unknown flag `SECCOMP_FILTER_FLAG_NOPE`", "unknown flag");
    check_error(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_NOTIFY\"}]}",
        "linux.seccomp.syscalls[0].action: SCMP_ACT_NOTIFY needs linux.seccomp.listenerPath",
        "NOTIFY without listenerPath");
    check_error("{\"defaultAction\":\"SCMP_ACT_NOTIFY\",\"listenerPath\":\"/x\"}",
                "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY can't be the default action",
                "NOTIFY as default");
    check_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],"
                "\"action\":\"SCMP_ACT_KILL\",\"errnoRet\":3}]}",
                "linux.seccomp.syscalls[0].errnoRet: not valid with action `SCMP_ACT_KILL`",
                "errnoRet with KILL");
    check_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":3}",
                "linux.seccomp.defaultErrnoRet: not valid with action `SCMP_ACT_ALLOW`",
                "defaultErrnoRet with ALLOW");
    check_error("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":5000}",
                "linux.seccomp.defaultErrnoRet: 5000 is out of range", "errnoRet too large");

    /* What must compile. */
    char *msg = compile_error(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
        "{\"names\":[\"no_such_syscall_anywhere\",\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"}]}");
    CHECK(msg == NULL, "an unknown syscall name is skipped");
    free(msg);
    msg = compile_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
                        "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
    CHECK(msg == NULL, "a rule repeating the default action is skipped");
    free(msg);
    msg = compile_error(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":"
        "[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\",\"SCMP_ARCH_AARCH64\",\"SCMP_ARCH_ARM\"],"
        "\"flags\":[\"SECCOMP_FILTER_FLAG_TSYNC\",\"SECCOMP_FILTER_FLAG_LOG\","
        "\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\",\"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV\"]}");
    CHECK(msg == NULL, "every known flag and several arches compile");
    free(msg);
}

/* ---- actions ------------------------------------------------------------------------- */

/* One raw syscall; the child exits 0 when it succeeds (want == 0) or fails
 * with errno `want`. */
struct probe {
    long nr;
    unsigned long a[3];
    int want;
};

static int run_probe(void *arg)
{
    const struct probe *p = arg;
    errno = 0;
    long r = syscall(p->nr, p->a[0], p->a[1], p->a[2]);
    if (p->want == 0)
        return r >= 0 ? 0 : 1;
    return r == -1 && errno == p->want ? 0 : 1;
}

#define PROBE(nr_, want_) (&(struct probe){ .nr = (nr_), .want = (want_) })

#define RULE_JSON(def, action, extra)                                                            \
    "{\"defaultAction\":\"" def "\",\"syscalls\":[{\"names\":[\"getppid\"],\"action\":\"" action \
    "\"" extra "}]}"

static void test_actions(void)
{
    int st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", ",\"errnoRet\":42"),
                          run_probe, PROBE(SYS_getppid, 42));
    CHECK(exited(st, 0), "SCMP_ACT_ERRNO with errnoRet 42");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", ""), run_probe,
                      PROBE(SYS_getppid, EPERM));
    CHECK(exited(st, 0), "SCMP_ACT_ERRNO defaults to EPERM");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", ""), run_probe,
                      PROBE(SYS_getpid, 0));
    CHECK(exited(st, 0), "a syscall without a rule gets the default action");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_KILL_PROCESS", ""), run_probe,
                      PROBE(SYS_getppid, 0));
    CHECK(killed_by(st, SIGSYS), "SCMP_ACT_KILL_PROCESS kills with SIGSYS");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_KILL_THREAD", ""), run_probe,
                      PROBE(SYS_getppid, 0));
    CHECK(killed_by(st, SIGSYS), "SCMP_ACT_KILL_THREAD kills the (only) thread");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_KILL", ""), run_probe,
                      PROBE(SYS_getppid, 0));
    CHECK(killed_by(st, SIGSYS), "SCMP_ACT_KILL kills");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_TRAP", ""), run_probe,
                      PROBE(SYS_getppid, 0));
    CHECK(killed_by(st, SIGSYS), "SCMP_ACT_TRAP raises SIGSYS");
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_LOG", ""), run_probe,
                      PROBE(SYS_getppid, 0));
    CHECK(exited(st, 0), "SCMP_ACT_LOG lets the call through");
    /* Without a tracer attached the kernel fails the call with ENOSYS. */
    st = run_filtered(RULE_JSON("SCMP_ACT_ALLOW", "SCMP_ACT_TRACE", ",\"errnoRet\":5"), run_probe,
                      PROBE(SYS_getppid, ENOSYS));
    CHECK(exited(st, 0), "SCMP_ACT_TRACE without a tracer: ENOSYS");

    /* Deny by default: only what the child needs to exit (and a sanitizer
     * build to allocate and report) is allowed. */
#define CHILD_BASICS                                                                          \
    "\"exit\",\"exit_group\",\"mmap\",\"munmap\",\"mprotect\",\"brk\",\"madvise\",\"write\"," \
    "\"sigaltstack\",\"rt_sigaction\",\"rt_sigprocmask\",\"getpid\",\"gettid\""
    const char *deny = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,\"syscalls\":["
                       "{\"names\":[" CHILD_BASICS "],\"action\":\"SCMP_ACT_ALLOW\"}]}";
    st = run_filtered(deny, run_probe, PROBE(SYS_getppid, 38));
    CHECK(exited(st, 0), "defaultErrnoRet 38 applies to what no rule allows");
    const char *allow = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
                        "{\"names\":[" CHILD_BASICS
                        ",\"getppid\"],\"action\":\"SCMP_ACT_ALLOW\"}]}";
    st = run_filtered(allow, run_probe, PROBE(SYS_getppid, 0));
    CHECK(exited(st, 0), "SCMP_ACT_ALLOW under a deny default");
    st = run_filtered(allow, run_probe, PROBE(SYS_getpgid, EPERM));
    CHECK(exited(st, 0), "deny default without defaultErrnoRet: EPERM");

    const char *names =
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":"
        "[\"no_such_syscall\",\"getppid\",\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42}]}";
    st = run_filtered(names, run_probe, PROBE(SYS_getppid, 42));
    CHECK(exited(st, 0), "several names: one");
    st = run_filtered(names, run_probe, PROBE(SYS_getpgid, 42));
    CHECK(exited(st, 0), "several names: another");

    const char *arches =
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":"
        "[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\",\"SCMP_ARCH_AARCH64\",\"SCMP_ARCH_ARM\"],"
        "\"flags\":[\"SECCOMP_FILTER_FLAG_TSYNC\",\"SECCOMP_FILTER_FLAG_LOG\",\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"],"
        "\"syscalls\":[{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42}]}";
    st = run_filtered(arches, run_probe, PROBE(SYS_getppid, 42));
    CHECK(exited(st, 0), "a multi-arch filter with flags loads and applies");
}

/* ---- flags and side effects ----------------------------------------------------------- */

static int tsync_pipe[2];

static void *thread_getppid(void *arg)
{
    char c;
    if (read(tsync_pipe[0], &c, 1) != 1)
        return (void *) 2;
    errno = 0;
    long r = syscall(SYS_getppid);
    return (void *) (intptr_t) (r == -1 && errno == 42 ? 1 : 0);
}

/* A thread started before the load: filtered only with TSYNC. The child
 * exits 1 when the thread's getppid was refused. */
static int tsync_status(const char *flags)
{
    char json[512];
    snprintf(
        json, sizeof json,
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[%s],\"syscalls\":[{\"names\":[\"getppid\"],"
        "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42}]}",
        flags);
    struct brig_seccomp_filter *f;
    brig_error_t err = NULL;
    if (compile(json, &f, &err) < 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_t t;
        void *res;
        int nfd;
        if (pipe(tsync_pipe) < 0 || pthread_create(&t, NULL, thread_getppid, NULL) != 0)
            _exit(100);
        if (brig_seccomp_load(f, &nfd, &err) < 0)
            _exit(101);
        if (write(tsync_pipe[1], "x", 1) != 1 || pthread_join(t, &res) != 0)
            _exit(102);
        _exit((int) (intptr_t) res);
    }
    brig_seccomp_free(f);
    int st;
    waitpid(pid, &st, 0);
    return st;
}

static int check_no_nnp(void *arg)
{
    return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0 ? 0 : 1;
}

static void test_flags(void)
{
    CHECK(exited(tsync_status("\"SECCOMP_FILTER_FLAG_TSYNC\""), 1),
          "TSYNC: a running thread gets the filter");
    CHECK(exited(tsync_status(""), 0), "without TSYNC: only the loading thread");
    CHECK(exited(run_filtered("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}", check_no_nnp, NULL), 0),
          "loading doesn't set no_new_privs (that is process.noNewPrivileges' call)");
}

/* ---- operators ----------------------------------------------------------------------- */

/* Calls getppid(vals[i], vals2[i]) for each i; bit i of the exit code says
 * the filter's errno 42 matched. */
struct op_probe {
    unsigned long vals[4];
    unsigned long vals2[4];
    int n;
};

static int run_op_probe(void *arg)
{
    const struct op_probe *p = arg;
    int mask = 0;
    for (int i = 0; i < p->n; i++) {
        errno = 0;
        if (syscall(SYS_getppid, p->vals[i], p->vals2[i]) == -1 && errno == 42)
            mask |= 1 << i;
    }
    return mask;
}

static int op_mask(const char *args_json, const struct op_probe *p)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],"
             "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,\"args\":[%s]}]}",
             args_json);
    int st = run_filtered(json, run_op_probe, (void *) p);
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_operators(void)
{
    /* arg0 = 9, 10, 11 against value 10: bit 0 = 9, bit 1 = 10, bit 2 = 11. */
    const struct op_probe three = { .vals = { 9, 10, 11 }, .n = 3 };
    static const struct {
        const char *op;
        int mask;
    } cases[] = {
        { "SCMP_CMP_NE", 0x5 }, { "SCMP_CMP_LT", 0x1 }, { "SCMP_CMP_LE", 0x3 },
        { "SCMP_CMP_EQ", 0x2 }, { "SCMP_CMP_GE", 0x6 }, { "SCMP_CMP_GT", 0x4 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[128], name[64];
        snprintf(args, sizeof args, "{\"index\":0,\"value\":10,\"op\":\"%s\"}", cases[i].op);
        snprintf(name, sizeof name, "%s on arg 0", cases[i].op);
        int got = op_mask(args, &three);
        CHECK(got == cases[i].mask, name);
        if (got != cases[i].mask)
            printf("#   got mask %#x, want %#x\n", got, cases[i].mask);
    }
    /* (arg & 0xf0) == 0x30 */
    const struct op_probe masked = { .vals = { 0x3f, 0x40, 0x130, 0x30 }, .n = 4 };
    CHECK(op_mask("{\"index\":0,\"value\":240,\"valueTwo\":48,\"op\":\"SCMP_CMP_MASKED_EQ\"}",
                  &masked)
              == 0xd,
          "SCMP_CMP_MASKED_EQ: value is the mask, valueTwo the datum");
    /* runc's convention: two conditions on one argument are ORed. */
    const struct op_probe or3 = { .vals = { 1, 2, 3 }, .n = 3 };
    CHECK(
        op_mask(
            "{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"},{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"}",
            &or3)
            == 0x3,
        "two conditions on the same argument: either matches");
    /* Conditions on different arguments are ANDed. */
    const struct op_probe and3 = { .vals = { 1, 1, 0 }, .vals2 = { 2, 3, 2 }, .n = 3 };
    CHECK(
        op_mask(
            "{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"},{\"index\":1,\"value\":2,\"op\":\"SCMP_CMP_EQ\"}",
            &and3)
            == 0x1,
        "conditions on different arguments: all must match");
    /* The whole 64-bit value is compared. */
    const struct op_probe wide = { .vals = { 0x100000000ul, 0 }, .n = 2 };
    CHECK(op_mask("{\"index\":0,\"value\":4294967296,\"op\":\"SCMP_CMP_EQ\"}", &wide) == 0x1,
          "64-bit argument values");
}

/* ---- notify and the listener ---------------------------------------------------------- */

/* Accepts one connection on lfd; returns the message (NUL-terminated) and
 * the fd that came with it. */
static char *accept_message(int lfd, int *fd)
{
    *fd = -1;
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return NULL;
    size_t cap = 65536, len = 0;
    char *buf = calloc(1, cap + 1);
    for (;;) {
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } control;
        struct iovec iov = { .iov_base = buf + len, .iov_len = cap - len };
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = control.buf,
                              .msg_controllen = sizeof control.buf };
        ssize_t n = recvmsg(c, &msg, MSG_CMSG_CLOEXEC);
        if (n <= 0)
            break;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(fd, CMSG_DATA(cm), sizeof(int));
        len += (size_t) n;
    }
    close(c);
    return buf;
}

static int listen_at(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *) &addr, sizeof addr) < 0 || listen(fd, 4) < 0)
        return -1;
    return fd;
}

static const char *json_str(yajl_val tree, const char *const *path)
{
    yajl_val v = yajl_tree_get(tree, (const char **) path, yajl_t_string);
    return v ? YAJL_GET_STRING(v) : NULL;
}

static void test_listener_message(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/agent.sock", dir);
    int lfd = listen_at(path);
    CHECK(lfd >= 0, "listener socket");
    int pipefd[2];
    CHECK(pipe(pipefd) == 0, "pipe to pass");
    brig_error_t err = NULL;
    int r = brig_seccomp_send_to_listener(
        path, "a \"quoted\"\nvalue", pipefd[0], 4321,
        "{\"ociVersion\":\"1.2.0\",\"id\":\"c1\",\"status\":\"creating\"}", &err);
    CHECK(r == 0, "send_to_listener");
    if (r < 0)
        printf("# %s\n", err->msg);
    int got_fd;
    char *msg = accept_message(lfd, &got_fd);
    struct stat a, b;
    CHECK(got_fd >= 0 && fstat(got_fd, &a) == 0 && fstat(pipefd[0], &b) == 0
              && a.st_ino == b.st_ino,
          "the listener receives the fd (SCM_RIGHTS)");
    char ebuf[256];
    yajl_val tree = msg ? yajl_tree_parse(msg, ebuf, sizeof ebuf) : NULL;
    CHECK(tree != NULL, "the message is JSON");
    static const char *const oci[] = { "ociVersion", NULL }, *const meta[] = { "metadata", NULL },
                             *const id[] = { "state", "id", NULL }, *const fds[] = { "fds", NULL },
                             *const pidp[] = { "pid", NULL };
    CHECK_STR(json_str(tree, oci), "1.2.0", "message: ociVersion");
    CHECK_STR(json_str(tree, meta), "a \"quoted\"\nvalue", "message: metadata, escaped");
    CHECK_STR(json_str(tree, id), "c1", "message: the state object");
    yajl_val f = yajl_tree_get(tree, (const char **) fds, yajl_t_array);
    const char *fd0 = f && f->u.array.len == 1 ? YAJL_GET_STRING(f->u.array.values[0]) : NULL;
    CHECK_STR(fd0, "seccompFd", "message: fds [\"seccompFd\"]");
    yajl_val p = yajl_tree_get(tree, (const char **) pidp, yajl_t_number);
    CHECK(p && YAJL_GET_INTEGER(p) == 4321, "message: pid");
    yajl_tree_free(tree);
    free(msg);
    close(got_fd);
    close(pipefd[0]);
    close(pipefd[1]);
    close(lfd);
    unlink(path);

    r = brig_seccomp_send_to_listener(path, NULL, 0, 1, "{}", &err);
    CHECK(r < 0 && err && strstr(err->msg, "agent.sock"),
          "no listener: an error naming the socket");
    brig_error_release(&err);
}

/* The whole flow: the filtered process gets the notify fd at load, hands it
 * to an agent with send_to_listener, and its notified syscall returns what
 * the agent answers. */
static void test_notify(const char *dir)
{
    char path[256], json[512];
    snprintf(path, sizeof path, "%s/notify.sock", dir);
    snprintf(
        json, sizeof json,
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"%s\",\"listenerMetadata\":\"m\","
        "\"syscalls\":[{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_NOTIFY\"}]}",
        path);
    struct brig_seccomp_filter *f;
    brig_error_t err = NULL;
    if (compile(json, &f, &err) < 0) {
        CHECK(0, "compile a NOTIFY filter");
        printf("# %s\n", err->msg);
        return;
    }
    CHECK(brig_seccomp_has_notify(f), "the filter knows it notifies");
    int lfd = listen_at(path);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* never hang the suite on a lost notification */
        int nfd;
        if (brig_seccomp_load(f, &nfd, &err) < 0 || nfd < 0)
            _exit(100);
        if (brig_seccomp_send_to_listener(path, "m", nfd, getpid(), "{}", &err) < 0)
            _exit(101);
        close(nfd);
        _exit(syscall(SYS_getppid) == 4242 ? 0 : 1);
    }
    brig_seccomp_free(f);
    int nfd;
    char *msg = accept_message(lfd, &nfd);
    CHECK(nfd >= 0 && msg && strstr(msg, "\"seccompFd\""), "the agent gets the notify fd");
    free(msg);
    struct seccomp_notif *req;
    struct seccomp_notif_resp *resp;
    if (nfd >= 0 && seccomp_notify_alloc(&req, &resp) == 0) {
        int r = seccomp_notify_receive(nfd, req);
        CHECK(r == 0 && req->data.nr == SYS_getppid && (pid_t) req->pid == pid,
              "a notification for the child's getppid");
        resp->id = req->id;
        resp->val = 4242;
        resp->error = 0;
        resp->flags = 0;
        CHECK(seccomp_notify_respond(nfd, resp) == 0, "answer it");
        seccomp_notify_free(req, resp);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(exited(st, 0), "the notified syscall returns the agent's answer");
    if (nfd >= 0)
        close(nfd);
    close(lfd);
    unlink(path);
}

/* ---- features ------------------------------------------------------------------------- */

static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v[n])
        n++;
    return n;
}

static bool has(const char *const *v, const char *s)
{
    for (; *v; v++)
        if (strcmp(*v, s) == 0)
            return true;
    return false;
}

static void test_features(void)
{
    CHECK(count(brig_seccomp_action_names()) == 9
              && has(brig_seccomp_action_names(), "SCMP_ACT_NOTIFY")
              && has(brig_seccomp_action_names(), "SCMP_ACT_KILL_PROCESS"),
          "features: the nine actions");
    CHECK(count(brig_seccomp_operator_names()) == 7
              && has(brig_seccomp_operator_names(), "SCMP_CMP_MASKED_EQ"),
          "features: the seven operators");
    CHECK(has(brig_seccomp_arch_names(), "SCMP_ARCH_X86_64")
              && has(brig_seccomp_arch_names(), "SCMP_ARCH_AARCH64")
              && has(brig_seccomp_arch_names(), "SCMP_ARCH_RISCV64"),
          "features: architectures");
    const char *const *known = brig_seccomp_flag_names(), *const *sup =
                                                              brig_seccomp_supported_flag_names();
    CHECK(count(known) == 4 && has(known, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"),
          "features: known flags");
    bool subset = true;
    for (const char *const *p = sup; *p; p++)
        subset = subset && has(known, *p);
    CHECK(subset && has(sup, "SECCOMP_FILTER_FLAG_TSYNC") && has(sup, "SECCOMP_FILTER_FLAG_LOG"),
          "features: supported flags are known ones, TSYNC and LOG among them");
    CHECK(sup == brig_seccomp_supported_flag_names(), "features: probed once");
}

/* ---- the shipped profiles ------------------------------------------------------------- */

static char *read_profile(const char *name)
{
    const char *top = getenv("top_srcdir");
    char path[512];
    snprintf(path, sizeof path, "%s/seccomp-profiles/%s", top ? top : ".", name);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&buf, &cap, '\0', f);
    fclose(f);
    if (n <= 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Runs argv under the profile, in namespaces of its own so that a syscall
 * the profile fails to block can't touch the host's mounts or hostname;
 * as_nobody runs it the way the sandbox does: no_new_privs, uid and gid
 * 65534, no capabilities (which also shows that the filter loads without
 * CAP_SYS_ADMIN when no_new_privs is set). */
static int run_profile_as(struct brig_seccomp_filter *f, char *const argv[], bool as_nobody)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        brig_error_t err = NULL;
        int nfd;
        if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC) < 0
            || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            _exit(102);
        if (as_nobody
            && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || setgroups(0, NULL) < 0
                || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
            _exit(103);
        if (brig_seccomp_load(f, &nfd, &err) < 0) {
            fprintf(stderr, "# load: %s\n", err->msg);
            _exit(100);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return st;
}

static int run_profile(struct brig_seccomp_filter *f, char *const argv[])
{
    return run_profile_as(f, argv, false);
}

#define PYTHON "/usr/bin/python3"

static const char busybox_script[] =
    "set -e; echo hi | busybox cat >/dev/null; busybox ls / >/dev/null;"
    "x=$(busybox seq 1 3 | busybox wc -l); [ \"$x\" = 3 ];"
    "busybox sleep 0; busybox mkdir -p /tmp; d=$(busybox mktemp -d); echo x > \"$d/f\";"
    "busybox chmod 600 \"$d/f\"; busybox rm -r \"$d\"; busybox ps >/dev/null; busybox id >/dev/null";

static const char bash_script[] =
    "set -e; x=$(echo ok); [ \"$x\" = ok ]; for i in 1 2 3; do :; done; (exit 0);"
    "true | true; cat /proc/self/status >/dev/null; read -r l < /proc/self/stat; [ -n \"$l\" ];"
    "trap 'true' USR1; kill -USR1 $$; wait";

static const char python_script[] =
    "import errno, os, socket, subprocess, threading, tempfile\n"
    "assert subprocess.check_output(['echo', 'ok']) == b'ok\\n'\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.bind(('127.0.0.1', 0)); s.listen(); s.close()\n"
    "socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC).close()\n"
    "try:\n"
    "    socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()\n"
    "except OSError as e:\n"
    "    assert e.errno != errno.EPERM, e\n"
    "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n"
    "a, b = socket.socketpair(); a.send(b'x'); assert b.recv(1) == b'x'\n"
    "socket.getaddrinfo('localhost', 80)\n"
    "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
    "with tempfile.TemporaryDirectory() as d:\n"
    "    open(os.path.join(d, 'f'), 'w').write('x')\n"
    "pid = os.fork()\n"
    "if pid == 0: os._exit(3)\n"
    "assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3\n";

/* argv[1:] are "name:nr:arg...:want", want being E<n> (fails with errno n)
 * or nE<n> (anything but errno n). */
static const char probe_script[] =
    "import ctypes, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "bad = 0\n"
    "for spec in sys.argv[1:]:\n"
    "    name, nr, *rest = spec.split(':')\n"
    "    want = rest[-1]\n"
    "    args = [ctypes.c_ulong(int(x, 0)) for x in rest[:-1]]\n"
    "    ctypes.set_errno(0)\n"
    "    r = libc.syscall(ctypes.c_long(int(nr)), *args)\n"
    "    e = ctypes.get_errno() if r == -1 else 0\n"
    "    ok = e == int(want[1:]) if want[0] == 'E' else e != int(want[2:])\n"
    "    if not ok:\n"
    "        print(f'# {name}: errno {e}, want {want}'); bad += 1\n"
    "sys.exit(1 if bad else 0)\n";

struct blocked {
    const char *name;
    long nr;
    unsigned long a[3];
    const char *in_default, *in_sandbox;
};

#define CLONE_NS_FS (0x10000000ul | 0x200ul) /* CLONE_NEWUSER|CLONE_FS: EINVAL if let through */

/* Calls that have no side effect when let through (NULL pointers, bad fds,
 * invalid flag combinations), so a hole in a profile shows as a wrong errno. */
static const struct blocked blocked[] = {
    { "unshare(NEWUSER)", SYS_unshare, { 0x10000000 }, "E1", "E1" },
    { "unshare(NEWNS)", SYS_unshare, { 0x20000 }, "E1", "E1" },
    { "setns", SYS_setns, { (unsigned long) -1, 0 }, "E1", "E1" },
    { "clone(NEWUSER)", SYS_clone, { CLONE_NS_FS }, "E1", "E1" },
    { "clone3", SYS_clone3, { 0, 0 }, "E38", "E38" },
    { "mount", SYS_mount, { 0, 0, 0 }, "E1", "E1" },
    { "umount2", SYS_umount2, { 0, 0 }, "E1", "E1" },
    { "pivot_root", SYS_pivot_root, { 0, 0 }, "E1", "E1" },
    { "fsopen", SYS_fsopen, { 0, 0 }, "E1", "E1" },
    { "open_tree", SYS_open_tree, { (unsigned long) -1, 0, 0 }, "E1", "E1" },
    { "bpf", SYS_bpf, { 0, 0, 0 }, "E1", "E1" },
    { "perf_event_open", SYS_perf_event_open, { 0, 0, (unsigned long) -1 }, "E1", "E1" },
    { "keyctl", SYS_keyctl, { 0, 0, 0 }, "E1", "E1" },
    { "add_key", SYS_add_key, { 0, 0, 0 }, "E1", "E1" },
    { "init_module", SYS_init_module, { 0, 0, 0 }, "E1", "E1" },
    { "delete_module", SYS_delete_module, { 0, 0 }, "E1", "E1" },
    { "userfaultfd", SYS_userfaultfd, { 0 }, "E1", "E1" },
    { "io_uring_setup", SYS_io_uring_setup, { 0, 0 }, "E1", "E1" },
    { "open_by_handle_at", SYS_open_by_handle_at, { (unsigned long) -1, 0, 0 }, "E1", "E1" },
    { "name_to_handle_at", SYS_name_to_handle_at, { (unsigned long) -1, 0, 0 }, "E1", "E1" },
    { "clock_settime", SYS_clock_settime, { 0, 0 }, "E1", "E1" },
    { "swapon", SYS_swapon, { 0, 0 }, "E1", "E1" },
    { "syslog", SYS_syslog, { 10, 0, 0 }, "E1", "E1" },
    { "quotactl", SYS_quotactl, { 0, 0, 0 }, "E1", "E1" },
    { "mbind", SYS_mbind, { 0, 0, 0 }, "E1", "E1" },
    { "sethostname", SYS_sethostname, { 0, 0 }, "E1", "E1" },
    { "personality(ADDR_NO_RANDOMIZE)", SYS_personality, { 0x0040000 }, "E1", "E1" },
    { "personality(query)", SYS_personality, { 0xffffffff }, "nE1", "nE1" },
    { "socket(AF_VSOCK)", SYS_socket, { 40, 1, 0 }, "E1", "E1" },
    { "socket(AF_VSOCK + 2^32)", SYS_socket, { 0x100000028ul, 1, 0 }, "E1", "E1" },
    { "socket(AF_PACKET)", SYS_socket, { 17, 3, 0 }, "nE1", "E1" },
    { "socket(AF_INET, SOCK_RAW)", SYS_socket, { 2, 3, 1 }, "nE1", "E1" },
    { "socket(AF_INET6, SOCK_RAW)", SYS_socket, { 10, 3 | 0x80000, 58 }, "nE1", "E1" },
    { "socket(AF_NETLINK, NETLINK_AUDIT)", SYS_socket, { 16, 3, 9 }, "nE1", "E1" },
    { "socket(AF_NETLINK, NETLINK_ROUTE)", SYS_socket, { 16, 3 | 0x80000, 0 }, "nE1", "nE1" },
    { "socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK)", SYS_socket, { 2, 1 | 0x800, 0 }, "nE1", "nE1" },
    { "socketpair(AF_INET)", SYS_socketpair, { 2, 1, 0 }, "nE1", "E1" },
    { "ptrace", SYS_ptrace, { 7, 0, 0 }, "nE1", "E1" },
    { "process_vm_readv", SYS_process_vm_readv, { 0, 0, 0 }, "nE1", "E1" },
    { "kcmp", SYS_kcmp, { 0, 0, 0 }, "nE1", "E1" },
    { "pidfd_getfd", SYS_pidfd_getfd, { (unsigned long) -1, 0, 0 }, "nE1", "E1" },
    { "chroot", SYS_chroot, { 0 }, "nE1", "E1" },
    { "get_mempolicy", SYS_get_mempolicy, { 0, 0, 0 }, "nE1", "nE1" },
};

static void test_profile(const char *file, bool sandbox)
{
    char name[128];
    cleanup_free char *json = read_profile(file);
    snprintf(name, sizeof name, "%s: read", file);
    CHECK(json != NULL, name);
    if (json == NULL)
        return;
    struct brig_seccomp *s = NULL;
    struct brig_seccomp_filter *f = NULL;
    brig_error_t err = NULL;
    int r = brig_seccomp_parse(json, strlen(json), file, &s, &err);
    if (r == 0)
        r = brig_seccomp_compile(s, &f, &err);
    snprintf(name, sizeof name, "%s: parses and compiles", file);
    CHECK(r == 0, name);
    brig_seccomp_free_spec(s);
    if (r < 0) {
        printf("# %s\n", err->msg);
        brig_error_release(&err);
        return;
    }

    char *bb[] = { "busybox", "sh", "-c", (char *) busybox_script, NULL };
    snprintf(name, sizeof name, "%s: a busybox workload runs", file);
    CHECK(exited(run_profile(f, bb), 0), name);
    char *bash[] = { "bash", "-c", (char *) bash_script, NULL };
    snprintf(name, sizeof name, "%s: a bash workload runs", file);
    CHECK(exited(run_profile(f, bash), 0), name);
    snprintf(name, sizeof name, "%s: the bash workload as nobody with no_new_privs", file);
    CHECK(exited(run_profile_as(f, bash, true), 0), name);
    if (access(PYTHON, X_OK) == 0) {
        char *py[] = { PYTHON, "-c", (char *) python_script, NULL };
        snprintf(name, sizeof name, "%s: a python3 workload runs (subprocess, sockets, threads)",
                 file);
        CHECK(exited(run_profile(f, py), 0), name);
        snprintf(name, sizeof name, "%s: the python3 workload as nobody with no_new_privs", file);
        CHECK(exited(run_profile_as(f, py, true), 0), name);

        size_t n = sizeof blocked / sizeof blocked[0];
        char *argv[4 + sizeof blocked / sizeof blocked[0]] = { PYTHON, "-c",
                                                               (char *) probe_script };
        char specs[sizeof blocked / sizeof blocked[0]][160];
        for (size_t i = 0; i < n; i++) {
            const struct blocked *b = &blocked[i];
            snprintf(specs[i], sizeof specs[i], "%s:%ld:%#lx:%#lx:%#lx:%s", b->name, b->nr, b->a[0],
                     b->a[1], b->a[2], sandbox ? b->in_sandbox : b->in_default);
            argv[3 + i] = specs[i];
        }
        argv[3 + n] = NULL;
        snprintf(name, sizeof name, "%s: what it must block is blocked, the rest isn't", file);
        CHECK(exited(run_profile(f, argv), 0), name);
        char *packet[] = { PYTHON, "-c",
                           "import socket\n"
                           "try:\n"
                           "    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
                           "except PermissionError:\n"
                           "    raise SystemExit(7)\n",
                           NULL };
        snprintf(name, sizeof name, "%s: socket(AF_PACKET) from python3 %s", file,
                 sandbox ? "raises PermissionError" : "is left to CAP_NET_RAW");
        CHECK(exited(run_profile(f, packet), sandbox ? 7 : 0), name);
    }
    char *unsh[] = { "busybox", "unshare", "-U", "true", NULL };
    snprintf(name, sizeof name, "%s: busybox unshare -U fails", file);
    int st = run_profile(f, unsh);
    CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0, name);
    char *mnt[] = { "busybox", "mount", "-t", "tmpfs", "none", "/mnt", NULL };
    snprintf(name, sizeof name, "%s: busybox mount fails", file);
    st = run_profile(f, mnt);
    CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0, name);
    brig_seccomp_free(f);
}

#ifdef __x86_64__
/* The 32-bit syscall entry from a 64-bit process: the default profile
 * allows the x86 ABI, the sandbox kills whatever isn't native. */
static int int80_getpid(void *arg)
{
    /* Where the kernel has no i386 entry this dies of SIGSEGV, which must
     * not be a sanitizer's report: always a forked child here. */
    signal(SIGSEGV, SIG_DFL);
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); /* i386 getpid */
    return r == getpid() ? 0 : 1;
}

/* Whether this kernel has the 32-bit entry at all (IA32 emulation can be
 * built out or switched off): int $0x80 without any filter. */
static bool kernel_has_i386_entry(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(int80_getpid(NULL));
    int status;
    return waitpid(pid, &status, 0) == pid && exited(status, 0);
}

static void test_compat_abi(void)
{
    cleanup_free char *def = read_profile("default.json");
    cleanup_free char *sb = read_profile("sandbox.json");
    if (def == NULL || sb == NULL)
        return;
    if (!kernel_has_i386_entry()) {
        /* Nothing 32-bit runs here, filtered or not; the filters' own
         * answer is checked where the kernel has the entry (the test VM:
         * tests/integration/seccomp_abi.bats). */
        printf("# this kernel has no i386 syscall entry\n");
        int st = run_filtered(sb, int80_getpid, NULL);
        CHECK(st >= 0 && WIFSIGNALED(st),
              "sandbox.json: no i386 syscall runs (the kernel has none)");
        st = run_filtered(def, int80_getpid, NULL);
        CHECK(st >= 0 && WIFSIGNALED(st),
              "default.json: no i386 syscall runs (the kernel has none)");
        return;
    }
    CHECK(exited(run_filtered(def, int80_getpid, NULL), 0), "default.json: the i386 ABI works");
    CHECK(killed_by(run_filtered(sb, int80_getpid, NULL), SIGSYS),
          "sandbox.json: the i386 ABI is killed");
}
#endif

/* ---- the cache of programs ----------------------------------------------------------- */

static int ppid_errno(void *arg)
{
    (void) arg;
    errno = 0;
    return syscall(SYS_getppid) < 0 ? errno : 0;
}

/* Loads f in a child that calls getppid: its errno, or 0. */
static int getppid_under(struct brig_seccomp_filter *f)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int nfd;
        brig_error_t err = NULL;
        _exit(brig_seccomp_load(f, &nfd, &err) < 0 ? 100 : ppid_errno(NULL));
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_cache(const char *dir)
{
    cleanup_free char *json = read_profile("sandbox.json");
    struct brig_seccomp *s = NULL, *other = NULL;
    brig_error_t err = NULL;
    const char *errno_json = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 2}";
    const char *errno_json2 = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 3}";
    CHECK(json && brig_seccomp_parse(json, strlen(json), "sandbox.json", &s, &err) == 0,
          "cache: the sandbox profile parses");
    if (s == NULL)
        return;
    char key[65], key2[65], path[PATH_MAX];
    brig_seccomp_key(s, key);
    brig_seccomp_key(s, key2);
    CHECK(strlen(key) == 64 && strcmp(key, key2) == 0, "cache: one profile, one key");
    CHECK(brig_seccomp_parse(errno_json, strlen(errno_json), "a", &other, &err) == 0,
          "cache: a one-line profile parses");
    brig_seccomp_key(other, key2);
    brig_seccomp_free_spec(other);
    other = NULL;
    char key3[65];
    CHECK(brig_seccomp_parse(errno_json2, strlen(errno_json2), "b", &other, &err) == 0,
          "cache: its twin parses");
    brig_seccomp_key(other, key3);
    brig_seccomp_free_spec(other);
    CHECK(strcmp(key, key2) != 0 && strcmp(key2, key3) != 0,
          "cache: profiles that differ in one errno have different keys");

    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct brig_seccomp_filter *f = NULL;
    snprintf(path, sizeof path, "%s/.seccomp-%s", dir, key);
    CHECK(brig_seccomp_compile_cached(s, dfd, &f, &err) == 0, "cache: a miss compiles");
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 64 && (st.st_mode & 077) == 0,
          "cache: the program is kept, for the owner only");
    CHECK(getppid_under(f) == 0, "cache: the compiled program allows getppid");
    brig_seccomp_free(f);

    /* A program put in its place is what a hit loads: getppid gets E2BIG. */
    struct sock_filter fake[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | E2BIG),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    int fd = open(path, O_RDWR);
    uint32_t len = 4;
    char head[16 + 12];
    bool rewritten = fd >= 0 && pread(fd, head, sizeof head, 0) == (ssize_t) sizeof head;
    memcpy(head + sizeof head - 4, &len, 4);
    rewritten = rewritten && ftruncate(fd, 0) == 0 && pwrite(fd, head, sizeof head, 0) > 0
                && pwrite(fd, fake, sizeof fake, sizeof head) == (ssize_t) sizeof fake;
    if (fd >= 0)
        close(fd);
    CHECK(rewritten, "cache: the kept program can be replaced by the test");
    CHECK(brig_seccomp_compile_cached(s, dfd, &f, &err) == 0 && getppid_under(f) == E2BIG,
          "cache: a hit loads the kept program, compiling nothing");
    brig_seccomp_free(f);

    /* A file cut short is compiled anew and written whole again. */
    CHECK(truncate(path, 20) == 0, "cache: the kept program can be cut short");
    CHECK(brig_seccomp_compile_cached(s, dfd, &f, &err) == 0 && getppid_under(f) == 0,
          "cache: a file cut short is ignored and the profile compiled");
    CHECK(stat(path, &st) == 0 && st.st_size > 64, "cache: and kept whole again");
    brig_seccomp_free(f);
    unlink(path);
    close(dfd);
    brig_seccomp_free_spec(s);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("1..0 # SKIP loading filters without no_new_privs needs root\n");
        return 0;
    }
#ifdef __x86_64__
    /* The test VM runs just this part, on a kernel with the i386 entry. */
    const char *only = getenv("BRIG_TEST_SECCOMP_ONLY");
    if (only && strcmp(only, "compat-abi") == 0) {
        if (!kernel_has_i386_entry()) {
            printf("not ok 1 - this kernel has no i386 syscall entry to test against\n");
            return 1;
        }
        test_compat_abi();
        return unit_done();
    }
#endif
    char dir[] = "/tmp/brig-seccomp-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    test_compile_errors();
    test_actions();
    test_operators();
    test_flags();
    test_listener_message(dir);
    test_notify(dir);
    test_features();
    test_profile("default.json", false);
    test_profile("sandbox.json", true);
    test_cache(dir);
#ifdef __x86_64__
    test_compat_abi();
#endif
    rmdir(dir);
    return unit_done();
}
