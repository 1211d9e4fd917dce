/* Container ids, signal names, the state file round trip. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/signals.h"
#include "container/state.h"
#include "unit.h"
#include "base/utils.h"

static void ids(void)
{
    brig_error_t err = NULL;
    const char *good[] = { "c1", "a.b-c_d+e", "X", "0123456789" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK(brig_id_validate(good[i], &err) == 0, good[i]);
        brig_error_release(&err);
    }
    const char *bad[] = { "", ".", "..", "a/b", "../x", "a b", "a\nb", "ü" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(brig_id_validate(bad[i], &err) < 0, "bad id rejected");
        brig_error_release(&err);
    }
    char *longid = malloc(1100);
    memset(longid, 'a', 1099);
    longid[1099] = '\0';
    CHECK(brig_id_validate(longid, &err) < 0, "overlong id rejected");
    brig_error_release(&err);
    free(longid);
}

static void signals(void)
{
    brig_error_t err = NULL;
    struct {
        const char *text;
        int want;
    } good[] = {
        { "TERM", SIGTERM },         { "SIGTERM", SIGTERM },
        { "sigkill", SIGKILL },      { "9", 9 },
        { "USR1", SIGUSR1 },         { "RTMIN", SIGRTMIN },
        { "RTMIN+2", SIGRTMIN + 2 }, { "SIGRTMAX-1", SIGRTMAX - 1 },
        { "WINCH", SIGWINCH },       { "0", 0 }, /* kill 0: is it alive? */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int sig = -1;
        CHECK(brig_signal_parse(good[i].text, &sig, &err) == 0 && sig == good[i].want,
              good[i].text);
        brig_error_release(&err);
    }
    const char *bad[] = { "", "FOO", "SIG", "65", "-1", "9x", "RTMIN+99" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int sig;
        CHECK(brig_signal_parse(bad[i], &sig, &err) < 0, "bad signal rejected");
        if (err)
            CHECK(strstr(err->msg, "unknown signal") != NULL, "message says unknown signal");
        brig_error_release(&err);
    }
}

static void state_round_trip(void)
{
    brig_error_t err = NULL;
    char dir[] = "/tmp/brig-state-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    int root = brig_state_root_open(dir, true, &err);
    CHECK(root >= 0, "open root");
    int d = brig_state_dir_create(root, "c1", &err);
    CHECK(d >= 0, "create state dir");
    CHECK(brig_state_dir_create(root, "c1", &err) < 0 && strstr(err->msg, "already exists"),
          "second create of one id fails");
    brig_error_release(&err);

    struct brig_kv ann[] = { { (char *) "k", (char *) "v\"q" } };
    struct brig_state st = {
        .id = (char *) "c1",
        .pid = getpid(),
        .bundle = (char *) "/b",
        .rootfs = (char *) "/b/rootfs",
        .created = brig_timestamp_now(),
        .owner = (char *) "",
        .annotations = { ann, 1 },
    };
    brig_process_start_time(getpid(), &st.pid_start_time, &err);
    CHECK(brig_state_write(d, &st, &err) == 0, "write state");
    struct brig_state *back = NULL;
    CHECK(brig_state_read(d, "c1", &back, &err) == 0, "read state");
    CHECK(back && back->pid == st.pid && strcmp(back->bundle, "/b") == 0, "fields survive");
    CHECK(back && back->post_hooks == 0, "no post hooks recorded as 0, not unknown");
    CHECK(back && back->annotations.n == 1 && strcmp(back->annotations.items[0].value, "v\"q") == 0,
          "annotations survive with quotes");
    CHECK(back && brig_state_init_alive(back), "our own pid is alive");
    CHECK(back && brig_state_status(d, back) == BRIG_STATUS_RUNNING, "no fifo: running");
    back->pid_start_time++;
    CHECK(back && !brig_state_init_alive(back), "a different start time means another process");
    CHECK(back && brig_state_status(d, back) == BRIG_STATUS_STOPPED, "so: stopped");
    char *json = NULL;
    CHECK(brig_state_to_json(&st, BRIG_STATUS_CREATED, false, &json, &err) == 0, "oci json");
    CHECK(json && strstr(json, "\"status\":\"created\"")
              && strstr(json, "\"ociVersion\":\"1.2.0\""),
          "oci json has status and version");
    free(json);
    brig_state_free(back);
    /* A state file written before postHooks existed: unknown, so the saved
     * spec is still read for hooks. */
    static const char old[] = "{\"id\":\"c1\",\"pid\":1,\"bundle\":\"/b\",\"rootfs\":\"/b/r\","
                              "\"created\":\"x\",\"owner\":\"\",\"cgroupPath\":\"\"}";
    CHECK(brig_write_file_atomic_at(d, BRIG_STATE_FILE, old, strlen(old), 0600, &err) == 0,
          "write an old state file");
    back = NULL;
    CHECK(brig_state_read(d, "c1", &back, &err) == 0 && back && back->post_hooks == -1,
          "missing postHooks reads as unknown");
    brig_state_free(back);
    free(st.created);
    CHECK(brig_state_dir_remove(root, d, "c1", &err) == 0, "remove state dir");
    close(d);
    CHECK(brig_state_dir_open(root, "c1", true, &err) < 0 && strstr(err->msg, "does not exist"),
          "removed dir does not exist");
    brig_error_release(&err);
    /* Files other than the state and the saved config: the whole tree goes. */
    d = brig_state_dir_create(root, "c2", &err);
    CHECK(d >= 0, "create a second state dir");
    CHECK(d >= 0 && brig_write_file_atomic_at(d, BRIG_STATE_FILE, old, strlen(old), 0600, &err) == 0
              && mkfifoat(d, BRIG_EXEC_FIFO, 0600) == 0 && mkdirat(d, "extra", 0700) == 0
              && close(openat(d, "extra/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0,
          "fill it with a fifo and a subdirectory");
    CHECK(d >= 0 && brig_state_dir_remove(root, d, "c2", &err) == 0
              && faccessat(root, "c2", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT,
          "remove a state dir holding more than state.json");
    if (d >= 0)
        close(d);
    brig_error_release(&err);
    close(root);
    rmdir(dir);
}

/* The hand-made UTC conversion agrees with glibc's across the calendar:
 * epoch, leap days, century years, before 1970, far ahead. */
static void timestamps(void)
{
    long long probes[] = { 0,         59,        86399,         86400,
                           951782400, 951868799, 4107542400LL,  1795339138,
                           -1,        -86401,    253402300799LL };
    bool all_equal = true;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0] + 2000; i++) {
        long long t = i < sizeof probes / sizeof probes[0]
                          ? probes[i]
                          : (long long) (i * 7919ULL * 86413ULL % 8000000000ULL) - 1000000000LL;
        struct timespec ts = { .tv_sec = (time_t) t, .tv_nsec = 7 };
        time_t tt = (time_t) t;
        struct tm tm;
        char want[64], *got = brig_timestamp_at(&ts);
        gmtime_r(&tt, &tm);
        strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S.000000007Z", &tm);
        if (got == NULL || strcmp(got, want) != 0) {
            printf("#   %lld: got %s, want %s\n", t, got ? got : "(null)", want);
            all_equal = false;
        }
        free(got);
    }
    CHECK(all_equal, "timestamps: the same as gmtime_r and strftime for 2011 instants");
    struct timespec leap = { .tv_sec = 951782400 };
    char *s = brig_timestamp_at(&leap);
    CHECK_STR(s, "2000-02-29T00:00:00.000000000Z", "timestamps: the leap day of 2000");
    free(s);
}

/* list's owner names and exec's HOME come from a passwd file read by hand. */
static void passwd_lookup(void)
{
    char path[] = "/tmp/brig-test-passwd-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "root:x:0:0:root:/root:/bin/sh\n"
                       "# a comment line\n"
                       "broken:x:12a:0::/nowhere:/bin/sh\n"
                       "sandbox:x:1000:1000:Sand Box:/home/sandbox:/bin/bash\n"
                       "nohome:x:1001:1001::\n";
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t) strlen(text),
          "passwd: file written");
    close(fd);
    char name[64] = "", home[64] = "";
    CHECK(brig_passwd_lookup(path, 1000, name, sizeof name, home, sizeof home) == 0
              && strcmp(name, "sandbox") == 0 && strcmp(home, "/home/sandbox") == 0,
          "passwd: name and home of uid 1000");
    CHECK(brig_passwd_lookup(path, 0, name, sizeof name, NULL, 0) == 0 && strcmp(name, "root") == 0,
          "passwd: root, home not asked for");
    CHECK(brig_passwd_lookup(path, 12, name, sizeof name, home, sizeof home) < 0,
          "passwd: a uid field that is not a number matches nothing");
    CHECK(brig_passwd_lookup(path, 1001, NULL, 0, home, sizeof home) == 0 && home[0] == '\0',
          "passwd: an empty home is empty");
    CHECK(brig_passwd_lookup(path, 4242, name, sizeof name, home, sizeof home) < 0,
          "passwd: unknown uid");
    CHECK(brig_passwd_lookup("/nonexistent/passwd", 0, name, sizeof name, NULL, 0) < 0,
          "passwd: no file, no entry");
    unlink(path);
}

int main(void)
{
    timestamps();
    passwd_lookup();
    ids();
    signals();
    state_round_trip();
    return unit_done();
}
