#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/sysctl.h"
#include "unit.h"

static void test_key_to_path(void)
{
    static const struct {
        const char *key, *path;
    } ok[] = {
        { "net.ipv4.ip_forward", "net/ipv4/ip_forward" },
        { "kernel.shmmax", "kernel/shmmax" },
        { "fs.mqueue.msg_max", "fs/mqueue/msg_max" },
        { "kernel", "kernel" },
        { "net.ipv4.conf.eth0-1.forwarding", "net/ipv4/conf/eth0-1/forwarding" },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        brig_error_t err = NULL;
        char *path = NULL;
        int r = brig_sysctl_key_to_path(ok[i].key, &path, &err);
        CHECK(r == 0 && err == NULL, ok[i].key);
        CHECK_STR(path, ok[i].path, ok[i].key);
        free(path);
    }

    static const char *const bad[] = {
        "",
        ".",
        "..",
        ".net.ipv4",
        "net.ipv4.",
        "net..ipv4",
        "net.ipv4/../../etc",
        "net/ipv4/ip_forward",
        "/etc/passwd",
        "kernel...x",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        brig_error_t err = NULL;
        char *path = (char *) "untouched";
        int r = brig_sysctl_key_to_path(bad[i], &path, &err);
        char name[128];
        snprintf(name, sizeof name, "rejects `%s`", bad[i]);
        CHECK(r < 0 && err != NULL && path == NULL, name);
        brig_error_release(&err);
    }

    brig_error_t err = NULL;
    char *path = NULL;
    brig_sysctl_key_to_path(NULL, &path, &err);
    CHECK(err != NULL && path == NULL, "rejects a NULL key");
    brig_error_release(&err);
    brig_sysctl_key_to_path("net..x", &path, &err);
    CHECK(err && strstr(err->msg, "net..x"), "the error names the key");
    brig_error_release(&err);
}

static void test_namespaced(void)
{
    static const char *const allowed[] = {
        "kernel.msgmax",      "kernel.msgmnb",          "kernel.msgmni",
        "kernel.sem",         "kernel.shmall",          "kernel.shmmax",
        "kernel.shmmni",      "kernel.shm_rmid_forced", "kernel.msg_next_id",
        "kernel.sem_next_id", "kernel.shm_next_id",     "fs.mqueue.queues_max",
        "fs.mqueue.msg_max",  "net.ipv4.ip_forward",    "net.core.somaxconn",
        "kernel.hostname",    "kernel.domainname",      NULL,
    };
    for (size_t i = 0; allowed[i]; i++) {
        brig_error_t err = NULL;
        int r = brig_sysctl_check_namespaced(allowed[i], &err);
        CHECK(r == 0 && err == NULL, allowed[i]);
        brig_error_release(&err);
    }

    static const char *const refused[] = {
        "vm.swappiness",
        "kernel.core_pattern",
        "kernel.modprobe",
        "kernel.semx",
        "kernel.sysrq",
        "kernel.hostnamex",
        "kernel.domainname.x",
        "fs.mqueue.",
        "fs.file-max",
        "net.",
        "net",
        "netfilter.x",
        "kernel.pid_max",
        "",
        NULL,
    };
    for (size_t i = 0; refused[i]; i++) {
        brig_error_t err = NULL;
        int r = brig_sysctl_check_namespaced(refused[i], &err);
        char name[128];
        snprintf(name, sizeof name, "refuses `%s`", refused[i]);
        CHECK(r < 0 && err != NULL, name);
        brig_error_release(&err);
    }

    brig_error_t err = NULL;
    brig_sysctl_check_namespaced("vm.swappiness", &err);
    CHECK_STR(err ? err->msg : NULL,
              "sysctl `vm.swappiness` is not namespaced, refusing to set it from a container",
              "message for a host sysctl");
    brig_error_release(&err);
}

static int read_long(const char *path, long *out)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    int r = fscanf(f, "%ld", out) == 1 ? 0 : -1;
    fclose(f);
    return r;
}

/* Child: new IPC and network namespaces, so the writes can't touch the host. */
static int apply_in_namespaces(void)
{
    if (unshare(CLONE_NEWIPC | CLONE_NEWNET) < 0)
        return 10;
    long before = 0;
    if (read_long("/proc/sys/kernel/shmmni", &before) < 0)
        return 11;
    struct brig_kv items[] = {
        { (char *) "kernel.shmmni", (char *) "1234" },
        { (char *) "net.ipv4.ip_forward", (char *) "1" },
    };
    struct brig_kv_list list = { items, 2 };
    brig_error_t err = NULL;
    if (brig_sysctl_apply(&list, &err) < 0) {
        printf("# %s\n", err->msg);
        return 12;
    }
    long shmmni = 0, fwd = 0;
    if (read_long("/proc/sys/kernel/shmmni", &shmmni) < 0 || shmmni != 1234 || before == 1234)
        return 13;
    if (read_long("/proc/sys/net/ipv4/ip_forward", &fwd) < 0 || fwd != 1)
        return 14;

    struct brig_kv host[] = { { (char *) "vm.swappiness", (char *) "0" } };
    struct brig_kv_list host_list = { host, 1 };
    if (brig_sysctl_apply(&host_list, &err) == 0 || strstr(err->msg, "vm.swappiness") == NULL)
        return 15;
    brig_error_release(&err);

    struct brig_kv missing[] = { { (char *) "net.ipv4.no_such_knob", (char *) "1" } };
    struct brig_kv_list missing_list = { missing, 1 };
    if (brig_sysctl_apply(&missing_list, &err) == 0 || err->errnum != ENOENT
        || strstr(err->msg, "net.ipv4.no_such_knob") == NULL)
        return 16;
    brig_error_release(&err);
    return 0;
}

static void test_apply(void)
{
    brig_error_t err = NULL;
    struct brig_kv_list empty = { NULL, 0 };
    CHECK(brig_sysctl_apply(&empty, &err) == 0, "an empty list is a no-op");

    if (geteuid() != 0) {
        printf("# skip: applying sysctls needs root\n");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(apply_in_namespaces());
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "apply writes namespaced sysctls and refuses the others");
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        printf("#   child step %d failed\n", WEXITSTATUS(status));
}

int main(void)
{
    test_key_to_path();
    test_namespaced();
    test_apply();
    return unit_done();
}
