/* brig_mount_parse_options and brig_propagation_from_name: option strings of
 * config.json → mount(2) flags, cleared flags, propagation, data. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "rootfs/mounts.h"
#include "unit.h"

struct option_case {
    const char *opts; /* comma-separated, split into a brig_strv */
    unsigned long flags, clear, propagation;
    const char *data;
    unsigned long long rec_set, rec_clr;
};

static const struct option_case cases[] = {
    { "", 0, 0, 0, NULL, 0, 0 },
    { "defaults", 0, 0, 0, NULL, 0, 0 },
    { "ro", MS_RDONLY, 0, 0, NULL, 0, 0 },
    { "rw", 0, MS_RDONLY, 0, NULL, 0, 0 },
    { "ro,rw", 0, MS_RDONLY, 0, NULL, 0, 0 },
    { "rw,ro", MS_RDONLY, 0, 0, NULL, 0, 0 },
    { "nosuid,nodev,noexec", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0, 0, NULL, 0, 0 },
    { "suid,dev,exec", 0, MS_NOSUID | MS_NODEV | MS_NOEXEC, 0, NULL, 0, 0 },
    { "bind", MS_BIND, 0, 0, NULL, 0, 0 },
    { "rbind", MS_BIND | MS_REC, 0, 0, NULL, 0, 0 },
    { "rbind,ro,rprivate", MS_BIND | MS_REC | MS_RDONLY, 0, MS_PRIVATE | MS_REC, NULL, 0, 0 },
    { "shared", 0, 0, MS_SHARED, NULL, 0, 0 },
    { "rslave", 0, 0, MS_SLAVE | MS_REC, NULL, 0, 0 },
    { "private", 0, 0, MS_PRIVATE, NULL, 0, 0 },
    { "runbindable", 0, 0, MS_UNBINDABLE | MS_REC, NULL, 0, 0 },
    { "rshared,private", 0, 0, MS_PRIVATE, NULL, 0, 0 },
    { "nosuid,strictatime,mode=755,size=65536k", MS_NOSUID | MS_STRICTATIME, 0, 0,
      "mode=755,size=65536k", 0, 0 },
    { "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5", MS_NOSUID | MS_NOEXEC, 0, 0,
      "newinstance,ptmxmode=0666,mode=0620,gid=5", 0, 0 },
    { "frobnicate", 0, 0, 0, "frobnicate", 0, 0 },
    { "x-systemd.automount,ro", MS_RDONLY, 0, 0, NULL, 0, 0 },
    { "noatime,relatime,nodiratime", MS_NOATIME | MS_RELATIME | MS_NODIRATIME, 0, 0, NULL, 0, 0 },
    { "sync,dirsync,remount,mand", MS_SYNCHRONOUS | MS_DIRSYNC | MS_REMOUNT | MS_MANDLOCK, 0, 0,
      NULL, 0, 0 },
    { "lazytime,silent,nosymfollow", MS_LAZYTIME | MS_SILENT | MS_NOSYMFOLLOW, 0, 0, NULL, 0, 0 },
    { "rro,rnosuid", 0, 0, 0, NULL, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0 },
    { "rro,rrw", 0, 0, 0, NULL, 0, MOUNT_ATTR_RDONLY },
    { "rnodev,rnoexec,rdev", 0, 0, 0, NULL, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NODEV },
    { "rnoatime", 0, 0, 0, NULL, MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME },
    { "rnoatime,rstrictatime", 0, 0, 0, NULL, MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME },
    { "rbind,rro,size=1", MS_BIND | MS_REC, 0, 0, "size=1", MOUNT_ATTR_RDONLY, 0 },
};

/* Splits "a,b,c" into a NULL-terminated brig_strv backed by `buf`. */
static void split(const char *s, char *buf, size_t len, char **v, struct brig_strv *out)
{
    snprintf(buf, len, "%s", s);
    out->n = 0;
    out->v = v;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        v[out->n++] = tok;
    v[out->n] = NULL;
}

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct option_case *c = &cases[i];
        char buf[256], *v[16], name[160];
        struct brig_strv opts;
        struct brig_mount_flags f;
        brig_error_t err = NULL;
        split(c->opts, buf, sizeof buf, v, &opts);
        int r = brig_mount_parse_options(&opts, &f, &err);
        snprintf(name, sizeof name, "\"%s\" parses", c->opts);
        CHECK(r == 0 && err == NULL, name);
        snprintf(name, sizeof name, "\"%s\" flags", c->opts);
        CHECK(f.flags == c->flags, name);
        snprintf(name, sizeof name, "\"%s\" clear", c->opts);
        CHECK(f.clear == c->clear, name);
        snprintf(name, sizeof name, "\"%s\" propagation", c->opts);
        CHECK(f.propagation == c->propagation, name);
        snprintf(name, sizeof name, "\"%s\" data", c->opts);
        CHECK_STR(f.data, c->data, name);
        snprintf(name, sizeof name, "\"%s\" recursive attrs", c->opts);
        CHECK(f.rec_attr_set == c->rec_set && f.rec_attr_clr == c->rec_clr, name);
        brig_mount_flags_free(&f);
        CHECK(f.data == NULL, "flags_free clears data");
        brig_error_release(&err);
    }
}

static void test_unsupported(void)
{
    char buf[64], *v[4];
    struct brig_strv opts;
    struct brig_mount_flags f;
    brig_error_t err = NULL;
    split("rbind,idmap", buf, sizeof buf, v, &opts);
    int r = brig_mount_parse_options(&opts, &f, &err);
    /* A config error, not a system one: no strerror tacked on. */
    CHECK(r < 0 && err && err->errnum == 0, "idmap is refused");
    CHECK_STR(err ? err->msg : NULL, "mount option `idmap` is not supported",
              "the refusal names the option");
    brig_error_release(&err);
}

static void test_propagation_names(void)
{
    static const struct {
        const char *name;
        unsigned long want;
    } names[] = {
        { "shared", MS_SHARED | MS_REC },         { "rshared", MS_SHARED | MS_REC },
        { "slave", MS_SLAVE | MS_REC },           { "rslave", MS_SLAVE | MS_REC },
        { "private", MS_PRIVATE | MS_REC },       { "rprivate", MS_PRIVATE | MS_REC },
        { "unbindable", MS_UNBINDABLE | MS_REC }, { "runbindable", MS_UNBINDABLE | MS_REC },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        unsigned long got = 0;
        brig_error_t err = NULL;
        char name[64];
        snprintf(name, sizeof name, "propagation \"%s\"", names[i].name);
        CHECK(brig_propagation_from_name(names[i].name, &got, &err) == 0 && got == names[i].want,
              name);
        brig_error_release(&err);
    }
    static const char *bad[] = { "ro", "bind", "sharedx", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned long got = 0;
        brig_error_t err = NULL;
        char name[64];
        snprintf(name, sizeof name, "propagation \"%s\" is rejected", bad[i]);
        CHECK(brig_propagation_from_name(bad[i], &got, &err) < 0 && err
                  && strstr(err->msg, "rootfsPropagation"),
              name);
        brig_error_release(&err);
    }
}

static void test_option_names(void)
{
    const char *const *names = brig_mount_option_names();
    size_t n = 0;
    bool all_parse = true, has_rbind = false;
    for (; names[n]; n++) {
        char *v[2] = { (char *) names[n], NULL };
        struct brig_strv opts = { v, 1 };
        struct brig_mount_flags f;
        brig_error_t err = NULL;
        /* A listed name is understood: it never lands in data. */
        all_parse &= brig_mount_parse_options(&opts, &f, &err) == 0 && f.data == NULL;
        has_rbind |= strcmp(names[n], "rbind") == 0;
        brig_mount_flags_free(&f);
        brig_error_release(&err);
    }
    CHECK(n > 40 && has_rbind, "option names listed");
    CHECK(all_parse, "every listed option name is understood");
}

/* tmpcopyup is brig's to act on: it sets copy_up and never reaches the
 * kernel's data string (which would refuse it). */
static void test_copy_up(void)
{
    char buf[128], *v[16];
    struct brig_strv opts;
    struct brig_mount_flags f;
    brig_error_t err = NULL;
    split("size=64k,tmpcopyup,mode=755", buf, sizeof buf, v, &opts);
    CHECK(brig_mount_parse_options(&opts, &f, &err) == 0, "tmpcopyup parses");
    CHECK(f.copy_up, "tmpcopyup sets copy_up");
    CHECK_STR(f.data, "size=64k,mode=755", "tmpcopyup is not in the data");
    brig_mount_flags_free(&f);
    split("tmpcopyup,notmpcopyup", buf, sizeof buf, v, &opts);
    CHECK(brig_mount_parse_options(&opts, &f, &err) == 0 && !f.copy_up, "the last word wins");
    CHECK(f.data == NULL, "no data at all");
    brig_mount_flags_free(&f);
}

int main(void)
{
    test_copy_up();
    test_option_names();
    test_cases();
    test_unsupported();
    test_propagation_names();
    return unit_done();
}
