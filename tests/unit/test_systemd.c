/* The systemd driver's pure half: slice:prefix:name to a unit and its
 * cgroup, slice nesting, GVariant text, and the properties a resources
 * section, device rules and annotations become. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/systemd.h"
#include "unit.h"

/* "unit path slice" or "ERROR: message". */
static char *scope_text(const char *cgroups_path, const char *id, bool user)
{
    struct brig_systemd_scope s;
    brig_error_t err = NULL;
    char *text = NULL;
    if (brig_systemd_scope_parse(cgroups_path, id, user, &s, &err) == 0) {
        if (asprintf(&text, "%s %s %s", s.unit, s.path, s.slice) < 0)
            text = NULL;
        brig_systemd_scope_free(&s);
    } else if (asprintf(&text, "ERROR: %s", err->msg) < 0) {
        text = NULL;
    }
    brig_error_release(&err);
    return text;
}

static void check_scope(const char *in, const char *want)
{
    char *got = scope_text(in, "c1", false);
    CHECK_STR(got, want, in);
    free(got);
}

static void test_scopes(void)
{
    check_scope("system.slice:docker:abc",
                "docker-abc.scope /system.slice/docker-abc.scope system.slice");
    check_scope("machine.slice:libpod:f00",
                "libpod-f00.scope /machine.slice/libpod-f00.scope machine.slice");
    check_scope(":cri-containerd:x",
                "cri-containerd-x.scope /system.slice/cri-containerd-x.scope system.slice");
    check_scope(
        "kubepods-besteffort-pod12.slice:cri-containerd:x",
        "cri-containerd-x.scope /kubepods.slice/kubepods-besteffort.slice/"
        "kubepods-besteffort-pod12.slice/cri-containerd-x.scope kubepods-besteffort-pod12.slice");
    check_scope("-.slice:p:n", "p-n.scope /p-n.scope -.slice");
    check_scope("system.slice::n", "n.scope /system.slice/n.scope system.slice");
    check_scope("system.slice:p:my-a.slice", "my-a.slice /my.slice/my-a.slice system.slice");
    char *got = scope_text(NULL, "c1", false);
    CHECK_STR(got, "brig-c1.scope /system.slice/brig-c1.scope system.slice", "absent: :brig:<id>");
    free(got);
    got = scope_text(":p:n", "c1", true);
    CHECK_STR(got, "p-n.scope /user.slice/p-n.scope user.slice", "a user instance: user.slice");
    free(got);
    unit_check_error("two fields", scope_text("a/b", "c1", false), "slice:prefix:name");
    unit_check_error("four fields", scope_text("a.slice:b:c:d", "c1", false), "slice:prefix:name");
    unit_check_error("not a slice", scope_text("system:docker:x", "c1", false), "invalid slice");
    unit_check_error("double dash", scope_text("a--b.slice:p:n", "c1", false), "invalid slice");
    unit_check_error("leading dash", scope_text("-a.slice:p:n", "c1", false), "invalid slice");
    unit_check_error("trailing dash", scope_text("a-.slice:p:n", "c1", false), "invalid slice");
    unit_check_error("slash in slice", scope_text("a/b.slice:p:n", "c1", false), "invalid slice");
    unit_check_error("no name", scope_text("system.slice:p:", "c1", false), "no name");
    unit_check_error("bad unit char", scope_text("system.slice:p:a b", "c1", false),
                     "invalid systemd unit name");
}

/* The signature and a rendering of a parsed value, or "ERROR: ...". */
static void render(FILE *f, const struct brig_variant *v)
{
    char t = v->sig[0];
    if (t == 'a' || t == '(') {
        fputc(t == 'a' ? '[' : '(', f);
        for (size_t i = 0; i < v->n; i++) {
            fputs(i ? "," : "", f);
            render(f, &v->items[i]);
        }
        fputc(t == 'a' ? ']' : ')', f);
    } else if (strchr("sog", t)) {
        fprintf(f, "\"%s\"", v->s);
    } else if (t == 'd') {
        fprintf(f, "%g", v->d);
    } else if (strchr("nix", t)) {
        fprintf(f, "%lld", (long long) (int64_t) v->u);
    } else {
        fprintf(f, "%llu", (unsigned long long) v->u);
    }
}

static char *variant_text(const char *in)
{
    struct brig_variant v;
    brig_error_t err = NULL;
    char *text = NULL;
    size_t len = 0;
    if (brig_variant_parse(in, &v, &err) < 0) {
        if (asprintf(&text, "ERROR: %s", err->msg) < 0)
            text = NULL;
        brig_error_release(&err);
        return text;
    }
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "%s ", v.sig);
    render(f, &v);
    fclose(f);
    brig_variant_free(&v);
    return text;
}

static void check_variant(const char *in, const char *want)
{
    char *got = variant_text(in);
    CHECK_STR(got, want, in);
    free(got);
}

static void test_variants(void)
{
    check_variant("true", "b 1");
    check_variant(" false ", "b 0");
    check_variant("uint64 18446744073709551615", "t 18446744073709551615");
    check_variant("42", "i 42");
    check_variant("-7", "i -7");
    check_variant("int64 -9223372036854775808", "x -9223372036854775808");
    check_variant("1.5", "d 1.5");
    check_variant("byte 0x1f", "y 31");
    check_variant("'it\\'s'", "s \"it's\"");
    check_variant("\"x\"", "s \"x\"");
    check_variant("['a', 'b']", "as [\"a\",\"b\"]");
    check_variant("[byte 1, 2, 255]", "ay [1,2,255]");
    check_variant("b'AB'", "ay [65,66]");
    check_variant("@as []", "as []");
    check_variant("@a(ss) []", "a(ss) []");
    check_variant("[('/dev/char/1:3', 'rwm')]", "a(ss) [(\"/dev/char/1:3\",\"rwm\")]");
    check_variant("[('/dev/block/8:0', uint64 5), ('/dev/block/8:16', 6)]",
                  "a(st) [(\"/dev/block/8:0\",5),(\"/dev/block/8:16\",6)]");
    check_variant("@au [1, 2]", "au [1,2]");
    check_variant("(1, 'x',)", "(is) (1,\"x\")");
    unit_check_error("empty untyped array", variant_text("[]"), "needs its type");
    unit_check_error("mixed array", variant_text("[1, 'a']"), "a string where");
    unit_check_error("byte out of range", variant_text("byte 256"), "out of range");
    unit_check_error("uint32 negative", variant_text("uint32 -1"), "out of range");
    unit_check_error("int32 too big", variant_text("2147483648"), "out of range");
    unit_check_error("unterminated", variant_text("'abc"), "unterminated");
    unit_check_error("trailing", variant_text("true x"), "trailing");
    unit_check_error("unknown word", variant_text("maybe"), "a value expected");
    unit_check_error("bad escape", variant_text("'\\q'"), "escape");
    unit_check_error("@ mismatch", variant_text("@as [1]"), "a number where");
    unit_check_error("deep",
                     variant_text(
                         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"),
                     "too deep");
}

static char *props_text(struct brig_systemd_props *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (size_t i = 0; i < p->n; i++)
        fprintf(f, "%s%s", i ? "; " : "", p->items[i]);
    fclose(f);
    brig_systemd_props_free(p);
    return text;
}

static char *resources_text(const struct brig_cgroup_write *w, size_t n)
{
    struct brig_systemd_props p = { 0 };
    brig_error_t err = NULL;
    char *text = NULL;
    if (brig_systemd_props_resources(w, n, &p, &err) < 0) {
        if (asprintf(&text, "ERROR: %s", err->msg) < 0)
            text = NULL;
        brig_error_release(&err);
        brig_systemd_props_free(&p);
        return text;
    }
    return props_text(&p);
}

#define W(f, v)                    \
    {                              \
        (char *) (f), (char *) (v) \
    }

static void test_resources(void)
{
    struct brig_cgroup_write mem[] = { W("memory.max", "536870912"), W("memory.low", "1024"),
                                       W("memory.swap.max", "max"), W("pids.max", "256"),
                                       W("cpu.weight", "100") };
    char *got = resources_text(mem, 5);
    CHECK_STR(
        got,
        "MemoryMax=uint64 536870912; MemoryLow=uint64 1024; "
        "MemorySwapMax=uint64 18446744073709551615; TasksMax=uint64 256; CPUWeight=uint64 100",
        "memory, pids, weight");
    free(got);
    struct brig_cgroup_write cpu[] = { W("cpu.max", "50000 100000"), W("cpuset.cpus", "0-1,9"),
                                       W("cpuset.mems", "0") };
    got = resources_text(cpu, 3);
    CHECK_STR(got,
              "CPUQuotaPerSecUSec=uint64 500000; CPUQuotaPeriodUSec=uint64 100000; "
              "AllowedCPUs=[byte 0x03, 0x02]; AllowedMemoryNodes=[byte 0x01]",
              "quota, cpus, mems");
    free(got);
    struct brig_cgroup_write odd[] = { W("cpu.max", "12345 100000") };
    got = resources_text(odd, 1);
    CHECK_STR(got, "CPUQuotaPerSecUSec=uint64 130000; CPUQuotaPeriodUSec=uint64 100000",
              "a fraction of a percent rounds up");
    free(got);
    struct brig_cgroup_write nomax[] = { W("cpu.max", "max 20000") };
    got = resources_text(nomax, 1);
    CHECK_STR(got,
              "CPUQuotaPerSecUSec=uint64 18446744073709551615; CPUQuotaPeriodUSec=uint64 20000",
              "period alone");
    free(got);
    struct brig_cgroup_write io[] = { W("io.weight", "default 500"),   W("io.weight", "8:0 300"),
                                      W("io.max", "8:0 rbps=1048576"), W("io.max", "8:16 rbps=max"),
                                      W("io.max", "8:0 wiops=100"),    W("memory.oom.group", "1") };
    got = resources_text(io, 6);
    CHECK_STR(got,
              "IOWeight=uint64 500; IODeviceWeight=[('/dev/block/8:0', uint64 300)]; "
              "IOReadBandwidthMax=[('/dev/block/8:0', uint64 1048576), "
              "('/dev/block/8:16', uint64 18446744073709551615)]; "
              "IOWriteIOPSMax=[('/dev/block/8:0', uint64 100)]",
              "io lists gathered, other files left to cgroupfs");
    free(got);
    struct brig_cgroup_write bad[] = { W("cpuset.cpus", "0-a") };
    unit_check_error("bad cpu list", resources_text(bad, 1), "not a list");
    /* every property must read back as GVariant text */
    struct brig_cgroup_write all[] = { W("memory.max", "1"), W("cpu.max", "1000 10000"),
                                       W("cpuset.cpus", "3"), W("io.max", "8:0 wbps=5") };
    struct brig_systemd_props p = { 0 };
    brig_error_t err = NULL;
    int ok = brig_systemd_props_resources(all, 4, &p, &err) == 0;
    for (size_t i = 0; ok && i < p.n; i++) {
        char *name;
        struct brig_variant v;
        ok = brig_systemd_prop_parse(p.items[i], &name, &v, &err) == 0;
        if (ok) {
            free(name);
            brig_variant_free(&v);
        }
    }
    CHECK(ok, "resource properties parse back");
    brig_error_release(&err);
    brig_systemd_props_free(&p);
}

static const char proc_devices[] = "Character devices:\n  1 mem\n  4 tty\n136 pts\n\n"
                                   "Block devices:\n  8 sd\n259 blkext\n";

static char *devices_text(const struct brig_device_rule *rules, size_t n)
{
    struct brig_systemd_props p = { 0 };
    brig_error_t err = NULL;
    if (brig_systemd_props_devices(rules, n, proc_devices, &p, &err) < 0) {
        brig_error_release(&err);
        return strdup("ERROR");
    }
    return props_text(&p);
}

static void test_devices(void)
{
    char *got = devices_text(NULL, 0);
    CHECK(got && strstr(got, "DevicePolicy='strict'; DeviceAllow=[") == got,
          "the defaults: strict with a list");
    CHECK(got && strstr(got, "('/dev/char/1:3', 'rwm')"), "the defaults allow /dev/null");
    CHECK(got && strstr(got, "('char-pts', 'rwm')"), "the defaults allow every pty, by name");
    struct brig_variant v;
    char *name = NULL;
    brig_error_t err = NULL;
    const char *list = got ? strstr(got, "DeviceAllow=") : NULL;
    CHECK(list && brig_systemd_prop_parse(list, &name, &v, &err) == 0
              && strcmp(v.sig, "a(ss)") == 0,
          "the list is an a(ss)");
    if (name) {
        free(name);
        brig_variant_free(&v);
    }
    brig_error_release(&err);
    free(got);
    struct brig_device_rule mknod_all = { .allow = true,
                                          .type = (char *) "c",
                                          .access = (char *) "m" };
    got = devices_text(&mknod_all, 1);
    CHECK(got && strstr(got, "('char-*', 'm')"), "c *:* m is char-*");
    free(got);
    struct brig_device_rule allow_all = { .allow = true };
    got = devices_text(&allow_all, 1);
    CHECK_STR(got, "DevicePolicy='auto'; DeviceAllow=@a(ss) []", "allow all: auto, no list");
    free(got);
    struct brig_device_rule odd_major = { .allow = true,
                                          .type = (char *) "c",
                                          .has_major = true,
                                          .major = 200,
                                          .access = (char *) "r" };
    got = devices_text(&odd_major, 1);
    CHECK_STR(got, "DevicePolicy='auto'; DeviceAllow=@a(ss) []",
              "a major /proc/devices doesn't name: auto, brig's own rules enforce");
    free(got);
}

static char *annotations_text(const char *key, const char *value)
{
    struct brig_kv kv[2] = { { (char *) "other", (char *) "x" }, { (char *) key, (char *) value } };
    struct brig_kv_list l = { kv, 2 };
    struct brig_systemd_props p = { 0 };
    brig_error_t err = NULL;
    char *text = NULL;
    if (brig_systemd_props_annotations(&l, &p, &err) < 0) {
        if (asprintf(&text, "ERROR: %s", err->msg) < 0)
            text = NULL;
        brig_error_release(&err);
        brig_systemd_props_free(&p);
        return text;
    }
    return props_text(&p);
}

static void test_annotations(void)
{
    char *got = annotations_text("org.systemd.property.CollectMode", "'inactive-or-failed'");
    CHECK_STR(got, "CollectMode='inactive-or-failed'", "a string property");
    free(got);
    got = annotations_text("org.systemd.property.TimeoutStopUSec", "uint64 15000000");
    CHECK_STR(got, "TimeoutStopUSec=uint64 15000000", "a USec property as is");
    free(got);
    got = annotations_text("org.systemd.property.TimeoutStopSec", "15");
    CHECK_STR(got, "TimeoutStopUSec=uint64 15000000", "Sec becomes USec");
    free(got);
    got = annotations_text("org.systemd.property.RuntimeMaxSec", "uint64 2");
    CHECK_STR(got, "RuntimeMaxUSec=uint64 2000000", "typed seconds");
    free(got);
    got = annotations_text("io.kubernetes.cri.x", "1");
    CHECK_STR(got, "", "other annotations ignored");
    free(got);
    unit_check_error("Sec from a string",
                     annotations_text("org.systemd.property.TimeoutStopSec", "'x'"),
                     "no number of seconds");
    unit_check_error("bad value", annotations_text("org.systemd.property.Foo", "[1,"), "GVariant");
    unit_check_error("bad name", annotations_text("org.systemd.property.a-b", "1"), "Name=value");
}

int main(void)
{
    test_scopes();
    test_variants();
    test_resources();
    test_devices();
    test_annotations();
    return unit_done();
}
