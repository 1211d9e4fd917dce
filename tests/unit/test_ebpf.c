/* The device program: compiled rule tables run through the interpreter
 * (no root needed), then, as root, loaded into the kernel and attached to a
 * real cgroup to see a device actually refused. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/devices_bpf.h"
#include "unit.h"

/* A TAP skip that still counts as a test point, so the plan line matches. */
#define SKIP(why) printf("ok %d - # SKIP %s\n", ++unit_run, why)

#define ANY -1

static struct brig_device_rule rule(bool allow, const char *type, long major, long minor,
                                    const char *access)
{
    struct brig_device_rule r = {
        .allow = allow,
        .type = (char *) type,
        .has_major = major != ANY,
        .major = major,
        .has_minor = minor != ANY,
        .minor = minor,
        .access = (char *) access,
    };
    return r;
}

struct probe {
    char type;
    long major, minor;
    const char *access;
    int want;
};

static void run_table(const char *name, const struct brig_device_rule *rules, size_t n,
                      bool defaults, const struct probe *probes, size_t np)
{
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    brig_error_t err = NULL;
    int r = brig_ebpf_devices_compile(rules, n, defaults, &insns, &len, &err);
    char label[160];
    snprintf(label, sizeof label, "%s: compiles", name);
    CHECK(r == 0 && len > 0, label);
    if (r < 0) {
        printf("#   %s\n", err->msg);
        brig_error_release(&err);
        return;
    }
    for (size_t i = 0; i < np; i++) {
        const struct probe *p = &probes[i];
        int got = brig_ebpf_devices_eval(insns, len, p->type, p->major, p->minor, p->access);
        snprintf(label, sizeof label, "%s: %c %ld:%ld %s -> %s", name, p->type, p->major, p->minor,
                 p->access, p->want ? "allow" : "deny");
        CHECK(got == p->want, label);
    }
    free(insns);
}

#define TABLE(name, rules, defaults, probes)                                 \
    run_table(name, rules, sizeof rules / sizeof rules[0], defaults, probes, \
              sizeof probes / sizeof probes[0])

static void test_tables(void)
{
    static const struct probe deny_everything[] = {
        { 'c', 1, 3, "r", 0 },
        { 'b', 8, 0, "rw", 0 },
        { 'c', 136, 0, "m", 0 },
    };
    run_table("no rules", NULL, 0, false, deny_everything, 3);

    struct brig_device_rule allow_all[] = { rule(true, "a", ANY, ANY, "rwm") };
    static const struct probe all_allowed[] = {
        { 'c', 1, 3, "rwm", 1 },
        { 'b', 8, 1, "w", 1 },
        { 'c', 4095, 1048575, "m", 1 },
    };
    TABLE("allow a *:* rwm", allow_all, false, all_allowed);

    struct brig_device_rule deny_then_allow[] = {
        rule(false, "a", ANY, ANY, "rwm"),
        rule(true, "c", 1, 3, "rwm"),
    };
    static const struct probe dta[] = {
        { 'c', 1, 3, "rw", 1 },
        { 'c', 1, 5, "r", 0 },
        { 'b', 1, 3, "r", 0 },
    };
    TABLE("deny all, allow c 1:3", deny_then_allow, false, dta);

    struct brig_device_rule allow_then_deny[] = {
        rule(true, "a", ANY, ANY, "rwm"),
        rule(false, "c", 1, 3, "rwm"),
    };
    static const struct probe atd[] = {
        { 'c', 1, 3, "r", 0 },
        { 'c', 1, 3, "m", 0 },
        { 'c', 1, 5, "rw", 1 },
        { 'b', 1, 3, "r", 1 },
    };
    TABLE("allow all, deny c 1:3 (last wins)", allow_then_deny, false, atd);

    struct brig_device_rule deny_then_allow_all[] = {
        rule(false, "c", 1, 3, "rwm"),
        rule(true, "a", ANY, ANY, "rwm"),
    };
    static const struct probe dtaa[] = { { 'c', 1, 3, "rw", 1 }, { 'b', 7, 0, "r", 1 } };
    TABLE("deny c 1:3, then allow all (last wins)", deny_then_allow_all, false, dtaa);

    struct brig_device_rule by_type[] = { rule(true, "b", ANY, ANY, "rwm") };
    static const struct probe bt[] = { { 'b', 8, 0, "rw", 1 }, { 'c', 8, 0, "rw", 0 } };
    TABLE("type b only", by_type, false, bt);

    struct brig_device_rule char_type[] = { rule(true, "c", 8, ANY, NULL) };
    static const struct probe ct[] = {
        { 'c', 8, 0, "rwm", 1 },
        { 'c', 8, 77, "r", 1 },
        { 'b', 8, 0, "r", 0 },
        { 'c', 9, 0, "r", 0 },
    };
    TABLE("c 8:* (wildcard minor, access absent)", char_type, false, ct);

    struct brig_device_rule minor_only[] = { rule(true, NULL, ANY, 3, "rwm") };
    static const struct probe mo[] = {
        { 'c', 1, 3, "r", 1 },
        { 'b', 99, 3, "w", 1 },
        { 'c', 1, 4, "r", 0 },
    };
    TABLE("type absent, *:3", minor_only, false, mo);

    struct brig_device_rule read_only[] = { rule(true, "c", 1, 3, "r") };
    static const struct probe ro[] = {
        { 'c', 1, 3, "r", 1 },
        { 'c', 1, 3, "w", 0 },
        { 'c', 1, 3, "m", 0 },
        { 'c', 1, 3, "rw", 0 },
    };
    TABLE("allow r only", read_only, false, ro);

    struct brig_device_rule partial_deny[] = {
        rule(true, "a", ANY, ANY, "rwm"),
        rule(false, "c", 1, 3, "w"),
    };
    static const struct probe pd[] = {
        { 'c', 1, 3, "r", 1 },
        { 'c', 1, 3, "w", 0 },
        { 'c', 1, 3, "rw", 0 },
        { 'c', 1, 3, "m", 1 },
    };
    TABLE("allow all, deny w of 1:3", partial_deny, false, pd);

    struct brig_device_rule rw_mknod[] = {
        rule(false, "a", ANY, ANY, "rwm"),
        rule(true, "c", 10, 200, "rw"),
        rule(true, "a", ANY, ANY, "m"),
    };
    static const struct probe rwm[] = {
        { 'c', 10, 200, "rw", 1 },
        { 'b', 8, 0, "m", 1 },
        { 'b', 8, 0, "r", 0 },
        { 'c', 10, 201, "r", 0 },
    };
    TABLE("deny all, tun rw, mknod anything", rw_mknod, false, rwm);
}

static void test_defaults(void)
{
    static const struct probe bare[] = {
        { 'c', 1, 3, "rwm", 1 }, { 'c', 1, 5, "rw", 1 },    { 'c', 1, 7, "rw", 1 },
        { 'c', 1, 8, "r", 1 },   { 'c', 1, 9, "r", 1 },     { 'c', 5, 0, "rw", 1 },
        { 'c', 5, 2, "rw", 1 },  { 'c', 136, 4, "rw", 1 },  { 'c', 1, 1, "r", 0 },
        { 'b', 1, 3, "r", 0 },   { 'c', 10, 200, "rw", 0 }, { 'c', 5, 1, "rw", 0 },
    };
    run_table("defaults only", NULL, 0, true, bare, sizeof bare / sizeof bare[0]);

    /* The usual spec: deny everything first. The defaults still hold. */
    struct brig_device_rule usual[] = {
        rule(false, NULL, ANY, ANY, "rwm"),
        rule(true, "c", 10, 229, "rwm"),
    };
    static const struct probe up[] = {
        { 'c', 1, 3, "rw", 1 },
        { 'c', 10, 229, "rw", 1 },
        { 'c', 10, 200, "rw", 0 },
    };
    TABLE("defaults + deny all + fuse", usual, true, up);
}

/* ---- the compiled program against the rules' meaning ---------------------------- */

/* The semantics written out plainly: the last matching rule wins, the
 * defaults count as appended after the spec's rules, nothing matching
 * denies; an allow rule matches when it grants all of the access asked, a
 * deny rule when it takes away any of it. */
static int access_mask(const char *access)
{
    int bits = 0;
    for (const char *c = access ? access : "rwm"; *c; c++)
        bits |= *c == 'r' ? 1 : *c == 'w' ? 2 : 4;
    return bits;
}

static bool rule_matches(const struct brig_device_rule *r, char type, long major, long minor,
                         int asked)
{
    if (r->type && strcmp(r->type, "a") != 0 && r->type[0] != type)
        return false;
    if ((r->has_major && r->major != major) || (r->has_minor && r->minor != minor))
        return false;
    int granted = access_mask(r->access);
    return r->allow ? (asked & ~granted) == 0 : (asked & granted) != 0;
}

static const long default_devices[][2] = { { 1, 3 }, { 1, 5 }, { 1, 7 }, { 1, 8 },
                                           { 1, 9 }, { 5, 0 }, { 5, 2 }, { 136, ANY } };
#define N_DEFAULT_DEVICES (sizeof default_devices / sizeof default_devices[0])

static int reference_verdict(const struct brig_device_rule *rules, size_t n, bool defaults,
                             char type, long major, long minor, const char *access)
{
    int asked = access_mask(access);
    if (defaults)
        for (size_t i = 0; i < N_DEFAULT_DEVICES; i++) {
            struct brig_device_rule d = rule(true, "c", default_devices[i][0],
                                             default_devices[i][1], "rwm");
            if (rule_matches(&d, type, major, minor, asked))
                return 1;
        }
    for (size_t i = n; i-- > 0;)
        if (rule_matches(&rules[i], type, major, minor, asked))
            return rules[i].allow;
    return 0;
}

/* Random rule lists over a small alphabet, so that neighbours sharing all
 * but their minor (compiled as one block) are common, against every probe
 * of a grid around those values. */
static void test_against_reference(void)
{
    static const char *types[] = { "a", "c", "b" };
    static const long majors[] = { ANY, 1, 5, 136 };
    static const long minors[] = { ANY, 0, 2, 3, 9, 30, 31, 32, 40 };
    static const char *accesses[] = { "rwm", "r", "w", "m", "rw", "wm" };
    static const long probe_majors[] = { 1, 5, 136, 7 };
    static const long probe_minors[] = { 0, 1, 2, 3, 9, 30, 31, 32, 33, 40, 1048575 };
    static const char *probe_access[] = { "r", "w", "m", "rw", "rwm" };
    unsigned seed = 9;
    size_t lists = 0, probes = 0, wrong = 0, grouped = 0;
    for (int round = 0; round < 3000; round++) {
        struct brig_device_rule rules[7];
        size_t n = (size_t) (rand_r(&seed) % 8);
        for (size_t i = 0; i < n; i++) {
            /* Runs of the same rule but its minor, most of the time. */
            if (i > 0 && rand_r(&seed) % 3 != 0) {
                rules[i] = rules[i - 1];
                long minor = minors[1 + rand_r(&seed) % 8];
                rules[i].has_minor = true;
                rules[i].minor = minor;
                continue;
            }
            rules[i] = rule(rand_r(&seed) % 2, types[rand_r(&seed) % 3], majors[rand_r(&seed) % 4],
                            minors[rand_r(&seed) % 9], accesses[rand_r(&seed) % 6]);
        }
        bool defaults = rand_r(&seed) % 2;
        struct bpf_insn *insns = NULL;
        size_t len = 0;
        brig_error_t err = NULL;
        if (brig_ebpf_devices_compile(rules, n, defaults, &insns, &len, &err) < 0) {
            printf("#   round %d: %s\n", round, err->msg);
            brig_error_release(&err);
            wrong++;
            continue;
        }
        lists++;
        for (size_t i = 0; i < len; i++)
            grouped += insns[i].code == (BPF_ALU64 | BPF_RSH | BPF_X);
        for (int t = 0; t < 2; t++)
            for (size_t a = 0; a < sizeof probe_majors / sizeof probe_majors[0]; a++)
                for (size_t b = 0; b < sizeof probe_minors / sizeof probe_minors[0]; b++)
                    for (size_t c = 0; c < sizeof probe_access / sizeof probe_access[0]; c++) {
                        char type = t ? 'b' : 'c';
                        int want = reference_verdict(rules, n, defaults, type, probe_majors[a],
                                                     probe_minors[b], probe_access[c]);
                        int got = brig_ebpf_devices_eval(insns, len, type, probe_majors[a],
                                                         probe_minors[b], probe_access[c]);
                        probes++;
                        if (got != want && wrong++ < 5)
                            printf("#   round %d: %c %ld:%ld %s: program %d, rules %d\n", round,
                                   type, probe_majors[a], probe_minors[b], probe_access[c], got,
                                   want);
                    }
        free(insns);
    }
    printf("#   %zu rule lists, %zu probes, %zu grouped blocks\n", lists, probes, grouped);
    CHECK(wrong == 0 && lists == 3000, "random rule lists: the program decides as the rules say");
    CHECK(grouped > 1000, "random rule lists: neighbours differing in their minor share a block");
}

/* The defaults are three blocks: major 1 (five minors), major 5 (two) and
 * 136 (any minor), not eight. */
static void test_defaults_grouped(void)
{
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    brig_error_t err = NULL;
    CHECK(brig_ebpf_devices_compile(NULL, 0, true, &insns, &len, &err) == 0, "defaults compile");
    size_t branches = 0, shifts = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t cls = insns[i].code & 0x07;
        branches += cls == BPF_JMP && insns[i].code != (BPF_JMP | BPF_EXIT);
        shifts += insns[i].code == (BPF_ALU64 | BPF_RSH | BPF_X);
    }
    printf("#   defaults: %zu instructions, %zu branches\n", len, branches);
    CHECK(shifts == 2 && branches == 10,
          "defaults: two bitmask blocks, 10 branches (24 one by one)");
    free(insns);
}

static void test_compile_errors(void)
{
    struct {
        struct brig_device_rule r;
        const char *want;
    } bad[] = {
        { rule(true, "u", ANY, ANY, "rwm"), "type `u`" },
        { rule(true, "c", 1, 3, "rx"), "access `rx`" },
        { rule(true, "c", -2, 3, "r"), "bad device number" },
        { rule(true, "c", 1, 0x100000000L, "r"), "bad device number" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct bpf_insn *insns = NULL;
        size_t len = 0;
        brig_error_t err = NULL;
        int r = brig_ebpf_devices_compile(&bad[i].r, 1, false, &insns, &len, &err);
        CHECK(r < 0 && err && strstr(err->msg, bad[i].want), bad[i].want);
        if (err)
            printf("#   %s\n", err->msg);
        brig_error_release(&err);
    }
}

static void test_program_shape(void)
{
    /* An unconditional rule ends the program: the verifier refuses code
     * that can't be reached. */
    struct brig_device_rule rules[] = {
        rule(true, "c", 1, 3, "rwm"),
        rule(true, "a", ANY, ANY, "rwm"),
    };
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    brig_error_t err = NULL;
    CHECK(brig_ebpf_devices_compile(rules, 2, false, &insns, &len, &err) == 0, "compile");
    CHECK(len == 8 && insns[len - 1].code == (BPF_JMP | BPF_EXIT),
          "rules shadowed by an unconditional one are not emitted");
    free(insns);
    struct bpf_insn junk[] = { { .code = BPF_ALU64 | BPF_MUL | BPF_K } };
    CHECK(brig_ebpf_devices_eval(junk, 1, 'c', 1, 3, "r") == -1,
          "interpreter refuses forms brig doesn't emit");
}

/* ---- as root: the real kernel ------------------------------------------------------ */

static char cg_dir[256];

static int make_cgroup(void)
{
    struct statfs sfs;
    const char *root = "/sys/fs/cgroup";
    if (statfs(root, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC)
        root = "/sys/fs/cgroup/unified";
    snprintf(cg_dir, sizeof cg_dir, "%s/brig-test-ebpf-%d", root, (int) getpid());
    if (mkdir(cg_dir, 0755) < 0)
        return -1;
    return open(cg_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* A child that joins the cgroup itself, then reports: bit 0 when /dev/null
 * was refused with EPERM, bit 1 when /dev/zero opened. */
static int probe_in_cgroup(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        char procs[300];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", cg_dir);
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(100);
        int null_fd = open("/dev/null", O_RDWR);
        int null_errno = errno;
        int zero_fd = open("/dev/zero", O_RDONLY);
        _exit((null_fd < 0 && null_errno == EPERM ? 1 : 0) | (zero_fd >= 0 ? 2 : 0));
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static unsigned attached_count(int cg_fd)
{
    __u32 ids[16];
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.query.target_fd = (__u32) cg_fd;
    attr.query.attach_type = BPF_CGROUP_DEVICE;
    attr.query.prog_ids = (__u64) (uintptr_t) ids;
    attr.query.prog_cnt = 16;
    if (syscall(SYS_bpf, BPF_PROG_QUERY, &attr, sizeof attr) < 0)
        return 999;
    return attr.query.prog_cnt;
}

static void test_kernel(void)
{
    int cg_fd = make_cgroup();
    CHECK(cg_fd >= 0, "kernel: test cgroup created");
    if (cg_fd < 0)
        return;
    brig_error_t err = NULL;
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    struct brig_device_rule deny_null[] = {
        rule(true, "a", ANY, ANY, "rwm"),
        rule(false, "c", 1, 3, "rwm"),
    };
    CHECK(brig_ebpf_devices_compile(deny_null, 2, false, &insns, &len, &err) == 0,
          "kernel: compile deny /dev/null");
    int r = brig_ebpf_devices_attach(cg_fd, insns, len, &err);
    CHECK(r == 0, "kernel: program loads and attaches");
    if (r < 0)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    free(insns);
    CHECK(attached_count(cg_fd) == 1, "kernel: one program attached");
    CHECK(probe_in_cgroup() == 3, "kernel: /dev/null refused with EPERM, /dev/zero opens");

    /* Replacing: the new program goes in, the old one leaves. */
    struct brig_device_rule allow_all[] = { rule(true, "a", ANY, ANY, "rwm") };
    CHECK(brig_ebpf_devices_compile(allow_all, 1, false, &insns, &len, &err) == 0,
          "kernel: compile allow all");
    CHECK(brig_ebpf_devices_attach(cg_fd, insns, len, &err) == 0, "kernel: replace program");
    free(insns);
    CHECK(attached_count(cg_fd) == 1, "kernel: still one program after replacing");
    CHECK(probe_in_cgroup() == 2, "kernel: /dev/null opens again after replacing");

    /* The defaults with a leading deny-all, the usual spec: the grouped
     * blocks pass the verifier, and /dev/null (1:3, in a group) opens. */
    struct brig_device_rule deny_all[] = { rule(false, "a", ANY, ANY, "rwm") };
    CHECK(brig_ebpf_devices_compile(deny_all, 1, true, &insns, &len, &err) == 0,
          "kernel: compile deny all + defaults");
    r = brig_ebpf_devices_attach(cg_fd, insns, len, &err);
    CHECK(r == 0, "kernel: grouped program loads and attaches");
    if (r < 0)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    free(insns);
    CHECK(probe_in_cgroup() == 2, "kernel: defaults allow /dev/null and /dev/zero");

    /* A program the verifier refuses: reading past the context. */
    struct bpf_insn bad[] = {
        { .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = 0, .src_reg = 1, .off = 64 },
        { .code = BPF_JMP | BPF_EXIT },
    };
    r = brig_ebpf_devices_attach(cg_fd, bad, 2, &err);
    CHECK(r < 0 && err && strstr(err->msg, "verifier: "), "kernel: verifier's reason in the error");
    if (err)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    CHECK(attached_count(cg_fd) == 1, "kernel: a refused program leaves the old one");

    close(cg_fd);
    CHECK(rmdir(cg_dir) == 0, "kernel: test cgroup removed");
}

/* The cache of loaded programs, in a bpffs of the test's own. */
static void test_cache(void)
{
    char base[] = "/tmp/brig-test-bpffs-XXXXXX";
    if (mkdtemp(base) == NULL || mount("bpf", base, "bpf", 0, "mode=0700") < 0) {
        SKIP("cache: no bpffs to mount");
        return;
    }
    char dir[64];
    snprintf(dir, sizeof dir, "%s/brig", base);
    brig_error_t err = NULL;
    struct bpf_insn *insns = NULL;
    size_t len = 0;
    struct brig_device_rule deny_null[] = {
        rule(true, "a", ANY, ANY, "rwm"),
        rule(false, "c", 1, 3, "rwm"),
    };
    CHECK(brig_ebpf_devices_compile(deny_null, 2, false, &insns, &len, &err) == 0,
          "cache: compile");
    int first = brig_ebpf_devices_program(dir, insns, len, &err);
    int second = brig_ebpf_devices_program(dir, insns, len, &err);
    uint32_t id1 = 0, id2 = 0;
    CHECK(first >= 0 && second >= 0 && brig_ebpf_program_id(first, &id1) == 0
              && brig_ebpf_program_id(second, &id2) == 0 && id1 == id2 && id1 != 0,
          "cache: the second request gets the pinned program");
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "cache: pin directory made, 0700");
    char pin[400] = "";
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "devices-", 8) == 0)
            snprintf(pin, sizeof pin, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    CHECK(strlen(pin) == strlen(dir) + 1 + 8 + 32, "cache: one pin, named by the hash");

    /* Other rules, another program. */
    struct brig_device_rule allow_all[] = { rule(true, "a", ANY, ANY, "rwm") };
    struct bpf_insn *other = NULL;
    size_t other_len = 0;
    CHECK(brig_ebpf_devices_compile(allow_all, 1, false, &other, &other_len, &err) == 0,
          "cache: compile other rules");
    int third = brig_ebpf_devices_program(dir, other, other_len, &err);
    uint32_t id3 = 0;
    CHECK(third >= 0 && brig_ebpf_program_id(third, &id3) == 0 && id3 != id1,
          "cache: other rules get another program");

    /* Something else at the pin's name is not used: a fresh load instead. */
    CHECK(unlink(pin) == 0 && mkdir(pin, 0700) == 0, "cache: pin replaced by a directory");
    int fourth = brig_ebpf_devices_program(dir, insns, len, &err);
    uint32_t id4 = 0;
    CHECK(fourth >= 0 && brig_ebpf_program_id(fourth, &id4) == 0 && id4 != id1,
          "cache: a foreign object at the pin is ignored, the program loaded afresh");
    rmdir(pin);

    /* A directory others may write to is not trusted. */
    CHECK(chmod(dir, 0777) == 0, "cache: pin directory opened to all");
    int fifth = brig_ebpf_devices_program(dir, insns, len, &err);
    CHECK(fifth >= 0 && access(pin, F_OK) < 0,
          "cache: nothing pinned in a world-writable directory");
    if (err)
        printf("#   %s\n", err->msg);
    brig_error_release(&err);
    int fds[] = { first, second, third, fourth, fifth };
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(insns);
    free(other);
    CHECK(umount(base) == 0 && rmdir(base) == 0, "cache: test bpffs removed");
}

int main(void)
{
    test_tables();
    test_defaults();
    test_defaults_grouped();
    test_against_reference();
    test_compile_errors();
    test_program_shape();
    if (geteuid() == 0) {
        test_kernel();
        test_cache();
    } else {
        SKIP("kernel tests need root");
    }
    return unit_done();
}
