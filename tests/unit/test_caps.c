#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/identity.h"
#include "unit.h"

static void test_names(void)
{
    CHECK(brig_cap_from_name("CAP_CHOWN") == 0, "CAP_CHOWN is 0");
    CHECK(brig_cap_from_name("CAP_KILL") == 5, "CAP_KILL is 5");
    CHECK(brig_cap_from_name("CAP_SYS_ADMIN") == 21, "CAP_SYS_ADMIN is 21");
    CHECK(brig_cap_from_name("CAP_BPF") == 39, "CAP_BPF is 39");
    CHECK(brig_cap_from_name("CAP_NOPE") == -1, "unknown capability");
    CHECK(brig_cap_from_name("cap_kill") == -1, "lower case is not accepted");
    CHECK(brig_cap_from_name("5") == -1, "a bare number is not a name");
    CHECK(brig_cap_from_name("") == -1, "empty name");
    CHECK(brig_cap_from_name(NULL) == -1, "NULL name");

    const char *const *names = brig_cap_names();
    size_t n = 0;
    bool all_round_trip = true;
    for (; names[n]; n++)
        if (brig_cap_from_name(names[n]) != (int) n)
            all_round_trip = false;
    CHECK(n >= 41, "libcap knows at least the 41 capabilities of Linux 5.9+");
    CHECK_STR(names[0], "CAP_CHOWN", "first name");
    CHECK_STR(names[21], "CAP_SYS_ADMIN", "names are upper case");
    CHECK(all_round_trip, "every listed name maps back to its index");
    CHECK(brig_cap_names() == names, "the table is built once");

    CHECK(brig_rlimit_from_name("RLIMIT_NOFILE") == RLIMIT_NOFILE, "RLIMIT_NOFILE");
    CHECK(brig_rlimit_from_name("RLIMIT_RTTIME") == RLIMIT_RTTIME, "RLIMIT_RTTIME");
    CHECK(brig_rlimit_from_name("RLIMIT_AS") == RLIMIT_AS, "RLIMIT_AS");
    CHECK(brig_rlimit_from_name("NOFILE") == -1, "the prefix is required");
    CHECK(brig_rlimit_from_name("rlimit_nofile") == -1, "names are case-sensitive");
    CHECK(brig_rlimit_from_name(NULL) == -1, "NULL rlimit name");
    const char *const *rl = brig_rlimit_names();
    size_t nrl = 0;
    bool rl_ok = true;
    for (; rl[nrl]; nrl++)
        if (brig_rlimit_from_name(rl[nrl]) < 0)
            rl_ok = false;
    CHECK(nrl == 16 && rl_ok, "16 rlimits, all resolvable");
}

/* The value of a "Name:\t..." line of /proc/self/status. */
static bool status_field(const char *field, char *out, size_t size)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (f == NULL)
        return false;
    char line[512];
    size_t flen = strlen(field);
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
            char *v = line + flen + 1;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            /* Trailing blanks after the groups list. */
            size_t l = strlen(v);
            while (l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\t'))
                v[--l] = '\0';
            snprintf(out, size, "%s", v);
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

static int expect(const char *field, const char *want)
{
    char got[256] = "";
    if (!status_field(field, got, sizeof got) || strcmp(got, want) != 0) {
        printf("#   %s: got \"%s\", want \"%s\"\n", field, got, want);
        return 1;
    }
    return 0;
}

static int drop_with_caps(void)
{
    char *bounding[] = { "CAP_KILL", "CAP_CHOWN", NULL };
    /* A name from a future kernel is skipped, not an error. */
    char *kill_only[] = { "CAP_KILL", "CAP_FROM_THE_FUTURE", NULL };
    struct brig_capabilities caps = {
        .bounding = { bounding, 2 },
        .effective = { kill_only, 2 },
        .permitted = { kill_only, 2 },
        .inheritable = { kill_only, 2 },
        .ambient = { kill_only, 2 },
    };
    uint32_t gids[] = { 2000, 3000 };
    struct brig_process p = {
        .user = { .uid = 1000,
                  .gid = 1000,
                  .has_umask = true,
                  .umask = 027,
                  .additional_gids = gids,
                  .n_additional_gids = 2 },
        .capabilities = &caps,
        .no_new_privileges = true,
    };
    brig_error_t err = NULL;
    if (brig_process_drop_privileges(&p, &err) < 0) {
        printf("#   %s\n", err->msg);
        return 100;
    }
    int bad = 0;
    bad += expect("CapBnd", "0000000000000021");
    bad += expect("CapEff", "0000000000000020");
    bad += expect("CapPrm", "0000000000000020");
    bad += expect("CapInh", "0000000000000020");
    bad += expect("CapAmb", "0000000000000020");
    bad += expect("Uid", "1000\t1000\t1000\t1000");
    bad += expect("Gid", "1000\t1000\t1000\t1000");
    bad += expect("Groups", "2000 3000");
    bad += expect("NoNewPrivs", "1");
    mode_t mask = umask(0);
    if (mask != 027) {
        printf("#   umask %03o\n", (unsigned) mask);
        bad++;
    }
    return bad;
}

static int drop_without_caps(void)
{
    struct brig_process p = { .user = { .uid = 1000, .gid = 1000 } };
    brig_error_t err = NULL;
    if (brig_process_drop_privileges(&p, &err) < 0) {
        printf("#   %s\n", err->msg);
        return 100;
    }
    int bad = 0;
    bad += expect("CapBnd", "0000000000000000");
    bad += expect("CapEff", "0000000000000000");
    bad += expect("CapPrm", "0000000000000000");
    bad += expect("CapInh", "0000000000000000");
    bad += expect("CapAmb", "0000000000000000");
    bad += expect("Groups", "");
    bad += expect("NoNewPrivs", "0");
    if (umask(0) != 0022)
        bad++;
    return bad;
}

static int drop_bad_name(void)
{
    char *bad_names[] = { "cap_kill", NULL };
    struct brig_capabilities caps = { .effective = { bad_names, 1 } };
    struct brig_process p = { .user = { .uid = 1000, .gid = 1000 }, .capabilities = &caps };
    brig_error_t err = NULL;
    if (brig_process_drop_privileges(&p, &err) == 0)
        return 1;
    if (strstr(err->msg, "`cap_kill`") == NULL || strstr(err->msg, "effective") == NULL) {
        printf("#   %s\n", err->msg);
        return 2;
    }
    /* Refused before any change: still root. */
    return getuid() == 0 ? 0 : 3;
}

static int write_proc(const char *path, const char *data)
{
    FILE *f = fopen(path, "we");
    if (f == NULL)
        return -1;
    int r = fputs(data, f) < 0 ? -1 : 0;
    return fclose(f) < 0 ? -1 : r;
}

/* A user namespace mapped the unprivileged way: setgroups is "deny", so
 * setgroups() fails with EPERM. No additional gids: tolerated; some: an error. */
static int drop_in_userns_with_setgroups_denied(void)
{
    if (unshare(CLONE_NEWUSER) < 0)
        return 10;
    if (write_proc("/proc/self/setgroups", "deny") < 0
        || write_proc("/proc/self/uid_map", "0 0 1") < 0
        || write_proc("/proc/self/gid_map", "0 0 1") < 0)
        return 11;
    uint32_t gids[] = { 0 };
    struct brig_process with_groups = {
        .user = { .uid = 0, .gid = 0, .additional_gids = gids, .n_additional_gids = 1 },
    };
    brig_error_t err = NULL;
    if (brig_process_drop_privileges(&with_groups, &err) == 0)
        return 12;
    if (err->errnum != EPERM || strstr(err->msg, "deny") == NULL) {
        printf("#   %s\n", err->msg);
        return 13;
    }
    brig_error_release(&err);
    struct brig_process no_groups = { .user = { .uid = 0, .gid = 0 } };
    if (brig_process_drop_privileges(&no_groups, &err) < 0) {
        printf("#   %s\n", err->msg);
        return 14;
    }
    return expect("CapEff", "0000000000000000");
}

static int apply_rlimits(void)
{
    struct brig_rlimit rl[] = {
        { "RLIMIT_NOFILE", RLIMIT_NOFILE, 200, 100 },
        { "RLIMIT_CORE", RLIMIT_CORE, 0, 0 },
        { "RLIMIT_NPROC", RLIMIT_NPROC, UINT64_MAX, UINT64_MAX },
    };
    struct rlimit old;
    getrlimit(RLIMIT_NPROC, &old);
    bool nproc_unlimited = old.rlim_max == RLIM_INFINITY;
    struct brig_process p = { .rlimits = rl, .n_rlimits = nproc_unlimited ? 3 : 2 };
    brig_error_t err = NULL;
    if (brig_rlimits_apply(&p, &err) < 0) {
        printf("#   %s\n", err->msg);
        return 100;
    }
    struct rlimit got;
    getrlimit(RLIMIT_NOFILE, &got);
    if (got.rlim_cur != 100 || got.rlim_max != 200)
        return 1;
    getrlimit(RLIMIT_CORE, &got);
    if (got.rlim_cur != 0 || got.rlim_max != 0)
        return 2;
    getrlimit(RLIMIT_NPROC, &got);
    if (nproc_unlimited && (got.rlim_cur != RLIM_INFINITY || got.rlim_max != RLIM_INFINITY))
        return 3;

    struct brig_rlimit inverted[] = { { "RLIMIT_NOFILE", RLIMIT_NOFILE, 10, 50 } };
    struct brig_process pi = { .rlimits = inverted, .n_rlimits = 1 };
    if (brig_rlimits_apply(&pi, &err) == 0 || strstr(err->msg, "RLIMIT_NOFILE") == NULL)
        return 4;
    brig_error_release(&err);

    struct brig_rlimit bogus[] = { { "RLIMIT_BOGUS", 999, 1, 1 } };
    struct brig_process pb = { .rlimits = bogus, .n_rlimits = 1 };
    if (brig_rlimits_apply(&pb, &err) == 0 || strstr(err->msg, "RLIMIT_BOGUS") == NULL
        || err->errnum != EINVAL)
        return 5;
    brig_error_release(&err);
    return 0;
}

static int in_child(int (*fn)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int r = fn();
        fflush(stdout);
        _exit(r);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

int main(void)
{
    test_names();
    CHECK(in_child(apply_rlimits) == 0, "rlimits applied and read back");
    if (geteuid() != 0) {
        printf("# skip: dropping privileges needs root\n");
        return unit_done();
    }
    CHECK(in_child(drop_with_caps) == 0, "uid, gids, groups, five cap sets, nnp, umask");
    CHECK(in_child(drop_without_caps) == 0, "no capabilities object: every set empty");
    CHECK(in_child(drop_bad_name) == 0, "a malformed capability name is refused up front");
    CHECK(in_child(drop_in_userns_with_setgroups_denied) == 0,
          "setgroups denied in a user namespace: tolerated only without additional gids");
    return unit_done();
}
