#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/init/conf.h"
#include "../../src/init/users.h"
#include "unit.h"

static void test_full_program(void)
{
    static const char text[] = "# services\n"
                               "; also a comment\n"
                               "[program:web]\n"
                               "command = python3 -m http.server 8000\n"
                               "user = sandbox\n"
                               "directory = /mnt/data\n"
                               "environment = A=1, B=\"x,y\" ,C=\n"
                               "autorestart = true\n"
                               "startsecs = 5\n"
                               "startretries = 7\n"
                               "exitcodes = 0, 2,255\n"
                               "stopsignal = SIGINT\n"
                               "stdout_logfile = /tmp/web.log\n"
                               "stdout_logfile_maxbytes = 2MB\n"
                               "stdout_logfile_backups = 3\n"
                               "stderr_logfile=/tmp/web.err\n"
                               "stderr_logfile_maxbytes=10K\n"
                               "stderr_logfile_backups=0\n"
                               "\n"
                               "[program:other]\n"
                               "command=sleep 1\n";
    struct init_config cfg;
    char err[256] = "";
    int r = init_config_parse(text, "t.conf", &cfg, err, sizeof err);
    CHECK(r == 0, "a full configuration parses");
    if (r < 0) {
        printf("#   %s\n", err);
        return;
    }
    CHECK(cfg.n_programs == 2, "two programs");
    struct init_program *p = &cfg.programs[0];
    CHECK_STR(p->name, "web", "program name");
    CHECK_STR(p->command, "python3 -m http.server 8000", "command");
    CHECK_STR(p->user, "sandbox", "user");
    CHECK_STR(p->directory, "/mnt/data", "directory");
    CHECK(p->environment && p->environment[0] && p->environment[1] && p->environment[2]
              && !p->environment[3],
          "three environment entries");
    if (p->environment && p->environment[0] && p->environment[1] && p->environment[2]) {
        CHECK_STR(p->environment[0], "A=1", "environment: plain");
        CHECK_STR(p->environment[1], "B=x,y", "environment: quoted comma");
        CHECK_STR(p->environment[2], "C=", "environment: empty value");
    }
    CHECK(p->autorestart == INIT_RESTART_TRUE, "autorestart true");
    CHECK(p->startsecs == 5 && p->startretries == 7, "startsecs, startretries");
    CHECK(p->exitcodes[0] && p->exitcodes[2] && p->exitcodes[255] && !p->exitcodes[1], "exitcodes");
    CHECK(p->stopsignal == SIGINT, "stopsignal SIGINT");
    CHECK_STR(p->out.path, "/tmp/web.log", "stdout_logfile");
    CHECK(p->out.maxbytes == 2 << 20 && p->out.backups == 3, "stdout rotation");
    CHECK_STR(p->err.path, "/tmp/web.err", "stderr_logfile");
    CHECK(p->err.maxbytes == 10 << 10 && p->err.backups == 0, "stderr rotation");

    struct init_program *q = &cfg.programs[1];
    CHECK(q->autorestart == INIT_RESTART_UNEXPECTED, "default autorestart is unexpected");
    CHECK(q->startsecs == 1 && q->startretries == 3, "default startsecs 1, startretries 3");
    CHECK(q->exitcodes[0] && !q->exitcodes[1], "default exitcodes 0");
    CHECK(q->stopsignal == SIGTERM, "default stopsignal TERM");
    CHECK(q->out.path == NULL && q->err.path == NULL, "no log file by default");
    CHECK(q->out.maxbytes == 50 << 20 && q->out.backups == 10, "default rotation 50M, 10 backups");
    init_config_free(&cfg);
}

static void test_errors(void)
{
    static const struct {
        const char *text, *message;
    } bad[] = {
        { "[program:a]\ncommand=x\nbogus=1\n", "t.conf:3: unknown key `bogus` in [program:a]" },
        { "command=x\n", "t.conf:1: `command` outside a [program:NAME] section" },
        { "[program:a]\ncommand=x\njust words\n",
          "t.conf:3: expected `key = value` or `[program:NAME]`, got `just words`" },
        { "\n[supervisord]\n", "t.conf:2: unknown section [supervisord] (only [program:NAME])" },
        { "[program:a]\nuser=x\n\n[program:b]\ncommand=y\n",
          "t.conf:1: [program:a] has no command" },
        { "[program:a]\n", "t.conf:1: [program:a] has no command" },
        { "[program:a]\ncommand=x\n[program:a]\ncommand=y\n",
          "t.conf:3: [program:a] is defined twice" },
        { "[program:a b]\n", "t.conf:1: bad program name `a b` (letters, digits, '_', '.', '-')" },
        { "[program:a\n", "t.conf:1: malformed section header `[program:a`" },
        { "[program:a]\ncommand=x\nautorestart=maybe\n",
          "t.conf:3: autorestart: `maybe` is not true, false or unexpected" },
        { "[program:a]\ncommand=x\nstartsecs=-1\n",
          "t.conf:3: startsecs: `-1` is not a non-negative integer" },
        { "[program:a]\ncommand=x\nstartretries=3x\n",
          "t.conf:3: startretries: `3x` is not a non-negative integer" },
        { "[program:a]\ncommand=x\nexitcodes=0,256\n",
          "t.conf:3: exitcodes: `256` is not an exit code (0-255)" },
        { "[program:a]\ncommand=x\nstopsignal=NOPE\n",
          "t.conf:3: stopsignal: `NOPE` is not a signal" },
        { "[program:a]\ncommand=x\nstdout_logfile_maxbytes=5T\n",
          "t.conf:3: stdout_logfile_maxbytes: `5T` is not a size (bytes, or with K, M, G)" },
        { "[program:a]\ncommand=x\nstderr_logfile=rel.log\n",
          "t.conf:3: stderr_logfile: `rel.log` is not an absolute path" },
        { "[program:a]\ncommand=x\nstdout_logfile_color=1\n",
          "t.conf:3: unknown key `stdout_logfile_color` in [program:a]" },
        { "[program:a]\ncommand='unclosed\n", "t.conf:2: command: unclosed quote in `'unclosed`" },
        { "[program:a]\ncommand=x\nenvironment=NOEQUALS\n",
          "t.conf:3: environment: expected KEY=VALUE at `NOEQUALS`" },
        { "[program:a]\ncommand=x\ndirectory=tmp\n",
          "t.conf:3: directory: `tmp` is not an absolute path" },
        { "[program:a]\ncommand=\n", "t.conf:2: command: empty value" },
        { "[program:a]\n= x\n", "t.conf:2: missing key before `=`" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct init_config cfg;
        char err[256] = "";
        int r = init_config_parse(bad[i].text, "t.conf", &cfg, err, sizeof err);
        CHECK(r == -1 && cfg.n_programs == 0, bad[i].message);
        CHECK_STR(err, bad[i].message, "error names file:line and what");
    }
}

static void test_empty(void)
{
    struct init_config cfg;
    char err[64];
    CHECK(init_config_parse("", "e", &cfg, err, sizeof err) == 0 && cfg.n_programs == 0,
          "empty text: no programs");
    CHECK(init_config_parse("# only\n;comments\n\n", "e", &cfg, err, sizeof err) == 0
              && cfg.n_programs == 0,
          "comments only: no programs");
}

static void check_argv(const char *command, const char *const *want)
{
    char **argv = init_command_argv(command);
    int ok = argv != NULL;
    size_t i = 0;
    for (; ok && want[i]; i++)
        ok = argv[i] && strcmp(argv[i], want[i]) == 0;
    ok = ok && argv[i] == NULL;
    CHECK(ok, command);
    init_strv_free(argv);
}

static void test_command_argv(void)
{
    check_argv("sleep 10", (const char *const[]){ "sleep", "10", NULL });
    check_argv("  echo\t-n  'a  b'  ", (const char *const[]){ "echo", "-n", "a  b", NULL });
    check_argv("python3 -c 'print(1)'",
               (const char *const[]){ "/bin/sh", "-c", "python3 -c 'print(1)'", NULL });
    check_argv("echo \"a b\"c 'd'", (const char *const[]){ "echo", "a bc", "d", NULL });
    check_argv("env A=1 B=2 prog", (const char *const[]){ "env", "A=1", "B=2", "prog", NULL });
    check_argv("echo hi > /tmp/x",
               (const char *const[]){ "/bin/sh", "-c", "echo hi > /tmp/x", NULL });
    check_argv("a | b", (const char *const[]){ "/bin/sh", "-c", "a | b", NULL });
    check_argv("echo $HOME", (const char *const[]){ "/bin/sh", "-c", "echo $HOME", NULL });
    check_argv("a; b", (const char *const[]){ "/bin/sh", "-c", "a; b", NULL });
    CHECK(init_command_argv("   ") == NULL, "blank command: no argv");
    CHECK(init_command_argv("echo 'x") == NULL, "unclosed quote: no argv");
}

static void test_values(void)
{
    uint64_t n;
    CHECK(init_parse_size("0", &n) == 0 && n == 0, "size 0");
    CHECK(init_parse_size("1024", &n) == 0 && n == 1024, "size 1024");
    CHECK(init_parse_size("10k", &n) == 0 && n == 10240, "size 10k");
    CHECK(init_parse_size("5MB", &n) == 0 && n == 5 << 20, "size 5MB");
    CHECK(init_parse_size("1G", &n) == 0 && n == 1 << 30, "size 1G");
    CHECK(init_parse_size("", &n) < 0 && init_parse_size("M", &n) < 0
              && init_parse_size("1MBB", &n) < 0 && init_parse_size("-1", &n) < 0
              && init_parse_size("99999999999999999999G", &n) < 0,
          "malformed sizes are refused");
    CHECK(init_signal_number("TERM") == SIGTERM && init_signal_number("sigkill") == SIGKILL
              && init_signal_number("SIGHUP") == SIGHUP && init_signal_number("10") == 10,
          "signal names and numbers");
    CHECK(init_signal_number("0") < 0 && init_signal_number("SIGNOPE") < 0
              && init_signal_number("") < 0 && init_signal_number("999") < 0,
          "bad signals are refused");
}

static void test_users(void)
{
    char dir[] = "/tmp/brig-users.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char passwd[256], group[256];
    snprintf(passwd, sizeof passwd, "%s/passwd", dir);
    snprintf(group, sizeof group, "%s/group", dir);
    FILE *f = fopen(passwd, "w");
    fputs(
        "root:x:0:0:root:/root:/bin/bash\nbroken line\nsandbox:x:1000:1000:brig sandbox:/home/sandbox:/bin/bash\n",
        f);
    fclose(f);
    f = fopen(group, "w");
    fputs(
        "root:x:0:\nsandbox:x:1000:\naudio:x:29:root,sandbox\nvideo:x:44:sandbox\nother:x:50:root\n",
        f);
    fclose(f);

    struct init_user u;
    char err[256];
    CHECK(init_user_lookup("sandbox", passwd, group, &u, err, sizeof err) == 0, "user by name");
    CHECK(u.uid == 1000 && u.gid == 1000, "uid and gid from passwd");
    CHECK_STR(u.home, "/home/sandbox", "home from passwd");
    CHECK(u.n_groups == 2 && u.groups[0] == 29 && u.groups[1] == 44,
          "supplementary groups from group");
    CHECK(init_user_lookup("1000", passwd, group, &u, err, sizeof err) == 0 && u.uid == 1000
              && strcmp(u.name, "sandbox") == 0,
          "user by uid finds the name");
    CHECK(init_user_lookup("4242", passwd, group, &u, err, sizeof err) == 0 && u.uid == 4242
              && u.gid == 4242 && u.n_groups == 0 && strcmp(u.home, "/") == 0,
          "a uid without entry: gid = uid, home /");
    CHECK(init_user_lookup("nobody", passwd, group, &u, err, sizeof err) == -1,
          "unknown name fails");
    char want[512];
    snprintf(want, sizeof want, "user `nobody` not found in %s", passwd);
    CHECK_STR(err, want, "the message names the user and the file");
    unlink(passwd);
    unlink(group);
    rmdir(dir);
}

int main(void)
{
    test_full_program();
    test_errors();
    test_empty();
    test_command_argv();
    test_values();
    test_users();
    return unit_done();
}
