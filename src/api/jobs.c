#define _GNU_SOURCE
/* The job's side of worker.c: `brig-api --job KIND ARGS...`, a fresh
 * process with fds 0-2 and its report pipe as fd 3, doing one thing
 * through the sandbox layer and saying how it went:
 *
 *   create ROOT ID [KEY=VALUE]...    a knob (brig_sandbox_setting) or a
 *                                    limit in ms (ttl, idle-timeout,
 *                                    exec-timeout)
 *   remove ROOT ID
 *   session ROOT ID NAME CWD USER N ENV*N [ARGV...]
 *   download ID URL PATH              says "BYTES PATH"
 *   exec ROOT ID TIMEOUT_MS CWD USER N ENV*N ARGV...   (reports as exec.c reads)
 *
 * An empty CWD or USER is none. The report is 'O' and what it says, or
 * 'E', the errnum and the message. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "api.h"
#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/download.h"
#include "sandbox/exec.h"
#include "sandbox/manage.h"
#include "sandbox/sandbox.h"
#include "sandbox/session.h"

#define REPORT_FD 3

static int report(int r, brig_error_t *err, const char *said)
{
    if (r == 0) {
        brig_write_all(REPORT_FD, "O", 1);
        if (said)
            brig_write_all(REPORT_FD, said, strlen(said));
        return 0;
    }
    int errnum = *err ? (*err)->errnum : 0;
    const char *msg = *err ? (*err)->msg : "failed";
    brig_write_all(REPORT_FD, "E", 1);
    brig_write_all(REPORT_FD, &errnum, sizeof errnum);
    brig_write_all(REPORT_FD, msg, strlen(msg));
    brig_error_release(err);
    return 1;
}

static const char *or_null(const char *s)
{
    return s && *s ? s : NULL;
}

static int create(int argc, char **argv, brig_error_t *err)
{
    struct brig_profile_settings s;
    if (brig_profile_settings_default(&s, err) < 0)
        return -1;
    struct brig_sandbox_create_options o = { .root = argv[0], .id = argv[1], .settings = &s };
    int r = 0;
    for (int i = 2; i < argc && r == 0; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        bool limit = strcmp(argv[i], "ttl") == 0 || strcmp(argv[i], "idle-timeout") == 0
                     || strcmp(argv[i], "exec-timeout") == 0;
        r = limit ? brig_sandbox_lifetime_setting(&o, argv[i], argv[i], NULL,
                                                  strtoll(eq + 1, NULL, 10), err)
                  : brig_sandbox_setting(&s, argv[i], argv[i], eq + 1, true, err);
    }
    brig_error_t warning = NULL;
    if (r == 0)
        r = brig_sandbox_create(&o, &warning, err);
    brig_error_release(&warning);
    brig_profile_settings_clear(&s);
    return r;
}

/* N, then N NAME=VALUE: the env, its end in *next. */
static char **env_of(char **argv, int argc, int at, int *next)
{
    int n = at < argc ? atoi(argv[at]) : 0;
    if (n < 0 || at + 1 + n > argc)
        n = 0;
    char **env = calloc((size_t) n + 1, sizeof *env);
    for (int i = 0; env && i < n; i++)
        env[i] = argv[at + 1 + i];
    *next = at + 1 + n;
    return env;
}

static int session(int argc, char **argv, brig_error_t *err)
{
    int next;
    cleanup_free char **env = env_of(argv, argc, 5, &next);
    struct brig_session_start_options o = {
        .root = argv[0],
        .id = argv[1],
        .name = argv[2],
        .cwd = or_null(argv[3]),
        .user = or_null(argv[4]),
        .env = env,
        .argv = next < argc ? argv + next : NULL,
    };
    struct brig_session_info info = { 0 };
    int r = brig_session_start(&o, &info, err);
    brig_session_info_clear(&info);
    return r;
}

static int download(char **argv, brig_error_t *err)
{
    struct brig_sandbox_download_options defaults = { 0 };
    cleanup_free char *final = NULL, *said = NULL;
    uint64_t bytes = 0;
    if (brig_sandbox_download(argv[0], argv[1], argv[2], &defaults, &final, &bytes, err) < 0)
        return report(-1, err, NULL);
    if (asprintf(&said, "%llu %s", (unsigned long long) bytes, final) < 0)
        said = NULL;
    return report(0, err, said);
}

/* exec's own report (exec.c's struct api_exec_report): started, or why
 * not, then the exit. The process's stdio are ours, let go once it has
 * them, so that its end is the pipes' end. */
static int exec_job(int argc, char **argv)
{
    struct api_exec_report rp = { 0 };
    int next;
    cleanup_free char **env = env_of(argv, argc, 5, &next);
    static const int stdio[3] = { 0, 1, 2 };
    struct brig_sandbox_exec_options o = {
        .root = argv[0],
        .id = argv[1],
        .timeout_ms = atoi(argv[2]),
        .cwd = or_null(argv[3]),
        .user = or_null(argv[4]),
        .env = env,
        .argv = next < argc ? argv + next : NULL,
        .stdio = stdio,
    };
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct brig_sandbox_exec ex;
    brig_error_t err = NULL;
    if (brig_sandbox_exec_start(&o, &ex, &err) < 0) {
        rp.kind = 'E';
        rp.value = err->errnum;
        snprintf(rp.msg, sizeof rp.msg, "%s", err->msg);
        brig_error_release(&err);
        brig_write_all(REPORT_FD, &rp, sizeof rp);
        return 1;
    }
    int null_fd = open("/dev/null", O_RDWR);
    for (int i = 0; i < 3; i++)
        dup2(null_fd, i);
    rp.kind = 'S';
    rp.value = ex.pid;
    brig_write_all(REPORT_FD, &rp, sizeof rp);
    bool timed_out = false;
    /* The report pipe's reader is the server: if it dies (SIGKILL, a
     * crash), the pipe reports an error here and the process goes with
     * it, instead of running on with no one to read it. */
    int status = brig_sandbox_exec_wait(&ex, REPORT_FD, &timed_out, &err);
    brig_error_release(&err);
    brig_sandbox_exec_release(&ex);
    rp.kind = 'X';
    rp.value = status < 0 ? 255 : status;
    rp.timed_out = timed_out;
    brig_write_all(REPORT_FD, &rp, sizeof rp);
    return 0;
}

int api_job_main(int argc, char **argv)
{
    /* argv: brig-api --job KIND ARGS... */
    const char *kind = argv[2];
    char **args = argv + 3;
    int n = argc - 3;
    brig_error_t err = NULL;
    if (strcmp(kind, "exec") == 0 && n >= 6)
        return exec_job(n, args);
    if (strcmp(kind, "create") == 0 && n >= 2)
        return report(create(n, args, &err), &err, NULL);
    if (strcmp(kind, "remove") == 0 && n == 2)
        return report(brig_sandbox_remove(args[0], args[1], &err), &err, NULL);
    if (strcmp(kind, "session") == 0 && n >= 6)
        return report(session(n, args, &err), &err, NULL);
    if (strcmp(kind, "download") == 0 && n == 3)
        return download(args, &err);
    return report(brig_error_set(&err, 0, "job: unknown `%s`", kind), &err, NULL);
}
