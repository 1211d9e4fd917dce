/* checkpoint's pure parts: --manage-cgroups-mode names, and the one line a
 * failed criu run is reported with, picked from criu's log. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "container/checkpoint.h"
#include "unit.h"

static void test_cg_modes(void)
{
    enum brig_cg_mode m = BRIG_CG_MODE_DEFAULT;
    brig_error_t err = NULL;
    CHECK(brig_cg_mode_parse("soft", &m, &err) == 0 && m == BRIG_CG_MODE_SOFT, "soft");
    CHECK(brig_cg_mode_parse("full", &m, &err) == 0 && m == BRIG_CG_MODE_FULL, "full");
    CHECK(brig_cg_mode_parse("strict", &m, &err) == 0 && m == BRIG_CG_MODE_STRICT, "strict");
    CHECK(brig_cg_mode_parse("ignore", &m, &err) == 0 && m == BRIG_CG_MODE_IGNORE, "ignore");
    CHECK(brig_cg_mode_parse("Soft", &m, &err) == -1, "names are case-sensitive, as runc's");
    CHECK_STR(err ? err->msg : NULL, "unknown cgroup mode `Soft` (soft, full, strict or ignore)",
              "an unknown mode is named with the valid ones");
    brig_error_release(&err);
}

static void write_log(int dir_fd, const char *name, const char *text)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror("write");
        close(fd);
    }
}

static void test_failure_message(void)
{
    char dir[] = "/tmp/brig-unit-ckpt.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(0, "mkdtemp");
        return;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct brig_criu c = { .image_fd = fd,
                           .work_fd = -1,
                           .work_path = "/img",
                           .log_name = "dump.log" };
    brig_error_t err = NULL;

    write_log(
        fd, "dump.log",
        "(00.001) Version: 3.17.1\n"
        "(00.002) Error (criu/tun.c:85): tun: Unable to create tun: No such file or directory\n"
        "(00.500) Error (criu/files-reg.c:1710): Can't lookup mount=24 for fd=0 path=/dev/null\n"
        "(00.501) Error (criu/cr-dump.c:1635): Dump files (pid: 167) failed with -1\n"
        "(00.600) Error (criu/cr-dump.c:2053): Dumping FAILED.\n");
    CHECK(brig_criu_failed(&c, "dump", -52, &err) == -1, "a failure returns -1");
    CHECK_STR(err ? err->msg : NULL,
              "dump: criu: Can't lookup mount=24 for fd=0 path=/dev/null (log: /img/dump.log)",
              "the first error but criu's tun probe is the cause");
    brig_error_release(&err);

    unlinkat(fd, "dump.log", 0);
    brig_criu_failed(&c, "dump", -ECOMM, &err);
    CHECK(err && err->errnum == ECOMM, "without a log, libcriu's return is the errno");
    CHECK(err && strstr(err->msg, "dump: criu failed (log: /img/dump.log)") == err->msg,
          "without a log, the message still says where the log would be");
    brig_error_release(&err);
    close(fd);
    rmdir(dir);
}

int main(void)
{
    test_cg_modes();
    test_failure_message();
    return unit_done();
}
