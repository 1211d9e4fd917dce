#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "process/hooks.h"
#include "unit.h"

static char dir[] = "/tmp/brig-test-hooks-XXXXXX";

static const char *state_json =
    "{\"ociVersion\":\"1.2.0\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":42,"
    "\"bundle\":\"/srv/bundle\"}";

static char *path_in_dir(const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        abort();
    return p;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs one hook; returns the error message or NULL on success. */
static char *run_one(struct brig_hook *hook, const char *state)
{
    struct brig_hook_list list = { hook, 1 };
    brig_error_t err = NULL;
    static char msg[512];
    if (brig_hooks_run(&list, "createRuntime", state, &err) == 0)
        return NULL;
    snprintf(msg, sizeof msg, "%s", err->msg);
    brig_error_release(&err);
    return msg;
}

#define SH_HOOK(script, ...)                                                            \
    ((struct brig_hook){ .path = "/bin/sh",                                             \
                         .args = { (char *[]){ "sh", "-c", script, __VA_ARGS__, NULL }, \
                                   3 + sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *) } })

static void test_stdin_args_env(void)
{
    char *out = path_in_dir("state");
    char *env[] = { "GREETING=hello", "OTHER=x", NULL };
    struct brig_hook hook = SH_HOOK("cat > \"$1\"; echo \"$0 $2 $GREETING\" > \"$1.args\"", "zero",
                                    out, "two");
    hook.env = (struct brig_strv){ env, 2 };
    char *msg = run_one(&hook, state_json);
    CHECK(msg == NULL, "a hook that succeeds");
    CHECK_STR(slurp(out), state_json, "the hook reads the state on stdin");
    char *args_file = path_in_dir("state.args");
    CHECK_STR(slurp(args_file), "zero two hello\n", "args and env reach the hook");
    free(args_file);
    free(out);
}

static void test_defaults(void)
{
    /* No args: argv[0] is the path. No env: an empty environment, even
     * though the runtime itself has variables. */
    setenv("BRIG_TEST_MUST_NOT_LEAK", "1", 1);
    char *script = path_in_dir("script.sh");
    char *out = path_in_dir("defaults");
    FILE *f = fopen(script, "we");
    fprintf(f, "#!/bin/sh\necho \"$0 [${BRIG_TEST_MUST_NOT_LEAK-unset}] [${HOME-unset}]\" > %s\n",
            out);
    fclose(f);
    chmod(script, 0755);
    struct brig_hook hook = { .path = script };
    CHECK(run_one(&hook, state_json) == NULL, "a hook without args or env");
    char want[512];
    snprintf(want, sizeof want, "%s [unset] [unset]\n", script);
    CHECK_STR(slurp(out), want, "argv[0] defaults to the path, env is empty");
    free(script);
    free(out);
}

static void test_failures(void)
{
    struct brig_hook exit3 = SH_HOOK("exit 3", "sh");
    CHECK_STR(run_one(&exit3, state_json), "hook `createRuntime` `/bin/sh`: exited with status 3",
              "exit status 3");

    struct brig_hook killed = SH_HOOK("kill -9 $$", "sh");
    char *msg = run_one(&killed, state_json);
    CHECK(msg && strstr(msg, "killed by signal 9"), "killed by a signal");

    struct brig_hook missing = { .path = "/nonexistent/hook" };
    msg = run_one(&missing, state_json);
    CHECK(msg && strstr(msg, "`/nonexistent/hook`: exec: No such file or directory"),
          "a missing hook binary is an exec error");

    /* The first failure stops the list. */
    char *marker = path_in_dir("second-ran");
    struct brig_hook two[] = { SH_HOOK("exit 1", "sh"), SH_HOOK("touch \"$1\"", "sh", marker) };
    struct brig_hook_list list = { two, 2 };
    brig_error_t err = NULL;
    CHECK(brig_hooks_run(&list, "poststart", state_json, &err) < 0 && err
              && strstr(err->msg, "hook `poststart`"),
          "a failing hook fails the list, named by its kind");
    brig_error_release(&err);
    CHECK(access(marker, F_OK) < 0, "hooks after a failure don't run");
    free(marker);

    struct brig_hook_list empty = { NULL, 0 };
    CHECK(brig_hooks_run(&empty, "prestart", state_json, &err) == 0, "an empty list");
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) (t.tv_sec - t0->tv_sec) + (double) (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_timeout(void)
{
    struct brig_hook sleeper = { .path = "/bin/sleep",
                                 .args = { (char *[]){ "sleep", "10", NULL }, 2 },
                                 .has_timeout = true,
                                 .timeout = 1 };
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *msg = run_one(&sleeper, state_json);
    double took = seconds_since(&t0);
    CHECK_STR(msg, "hook `createRuntime` `/bin/sleep`: timed out after 1 s", "timeout message");
    CHECK(took > 0.9 && took < 3.0, "the timeout fires after about a second");

    /* A hook that never reads a state bigger than the pipe buffer must
     * still time out instead of blocking the runtime in write(). */
    size_t big = 1 << 20;
    char *state = malloc(big + 1);
    memset(state, 'x', big);
    state[big] = '\0';
    struct brig_hook stuck = SH_HOOK("sleep 10", "sh");
    stuck.has_timeout = true;
    stuck.timeout = 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    msg = run_one(&stuck, state);
    took = seconds_since(&t0);
    CHECK(msg && strstr(msg, "timed out"), "a hook that ignores a big stdin times out");
    CHECK(took < 3.0, "... without blocking on the full pipe");

    /* The hook exits without reading: no SIGPIPE for the runtime. */
    struct brig_hook quick = SH_HOOK("exit 0", "sh");
    CHECK(run_one(&quick, state) == NULL, "a hook that ignores stdin still succeeds");
    struct brig_hook closer = SH_HOOK("exec 0<&-; sleep 0.3", "sh");
    CHECK(run_one(&closer, state) == NULL, "a hook that closes stdin early: EPIPE is not fatal");
    sigset_t pending;
    sigpending(&pending);
    CHECK(!sigismember(&pending, SIGPIPE), "no SIGPIPE left pending");
    free(state);
}

static void test_no_leaked_fds(void)
{
    /* A descriptor the runtime forgot to mark close-on-exec. */
    int fd = open("/dev/null", O_RDONLY);
    int high = dup2(fd, 100);
    CHECK(fd >= 3 && high == 100, "opened fds to leak");
    char *out = path_in_dir("fds");
    struct brig_hook hook =
        SH_HOOK("ls /proc/self/fd > \"$1\"; "
                "for n in 3 4 5 6 100; do [ -e /proc/$$/fd/$n ] && exit 1; done; "
                "exit 0",
                "sh", out);
    CHECK(run_one(&hook, state_json) == NULL, "the hook has no fd above 2");
    /* ls itself holds one fd for reading the directory. */
    const char *listed = slurp(out);
    CHECK(listed && (strcmp(listed, "0\n1\n2\n3\n") == 0), "ls sees 0-2 and its own dir fd");
    close(fd);
    close(high);
    free(out);
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_stdin_args_env();
    test_defaults();
    test_failures();
    test_timeout();
    test_no_leaked_fds();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return unit_done();
}
