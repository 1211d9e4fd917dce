/* sandbox/template_path.c: the names of an image's entries made relative
 * to its root, `..` refused; symlink targets that climb out of it;
 * whiteouts. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sandbox/template_path.h"
#include "unit.h"

/* The clean path of `name`, or "ERROR: message". */
static char *entry(const char *name)
{
    char *out = NULL;
    brig_error_t err = NULL;
    if (brig_template_entry_path(name, &out, &err) == 0)
        return out;
    char *msg = NULL;
    if (asprintf(&msg, "ERROR: %s", err->msg) < 0)
        msg = NULL;
    brig_error_release(&err);
    return msg;
}

static void check_entry(const char *name, const char *want)
{
    char *got = entry(name);
    char what[128];
    snprintf(what, sizeof what, "entry `%s` is `%s`", name, want);
    CHECK_STR(got, want, what);
    free(got);
}

static void test_entry_paths(void)
{
    check_entry("usr/bin/env", "usr/bin/env");
    check_entry("./usr/bin/", "usr/bin");
    check_entry("/etc//passwd", "etc/passwd");
    check_entry("./", "");
    check_entry(".", "");
    check_entry("a/./b/.", "a/b");
    check_entry("..a/b..", "..a/b..");
    check_entry("a/...", "a/...");
    unit_check_error("`..` first is refused, naming the entry", entry("../etc/passwd"),
                     "entry `../etc/passwd`: a `..` component");
    unit_check_error("`..` inside is refused", entry("usr/../../x"), "`..` component");
    unit_check_error("`..` last is refused", entry("a/.."), "`..` component");
    unit_check_error("`/..` is refused", entry("/../x"), "`..` component");
    char *long_name = malloc(BRIG_TEMPLATE_NAME_MAX + 2);
    memset(long_name, 'a', BRIG_TEMPLATE_NAME_MAX + 1);
    long_name[BRIG_TEMPLATE_NAME_MAX + 1] = '\0';
    unit_check_error("an over-long name is refused", entry(long_name), "name longer than");
    free(long_name);
}

static void test_links(void)
{
    CHECK(brig_template_link_inside("lib64/ld-linux-x86-64.so.2",
                                    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
          "an absolute target is inside (resolved in the sandbox's root)");
    CHECK(brig_template_link_inside("usr/lib/a", "../../etc/x"), "up to the root is inside");
    CHECK(!brig_template_link_inside("usr/lib/a", "../../../etc"), "above the root is out");
    CHECK(!brig_template_link_inside("a/b", "../../../etc"), "a/b -> ../../../etc is out");
    CHECK(!brig_template_link_inside("a", ".."), "a link at the top to `..` is out");
    CHECK(brig_template_link_inside("a", "."), "a link to its own dir is inside");
    CHECK(brig_template_link_inside("a/b", "c/../../d"), "down then up is counted lexically");
    CHECK(!brig_template_link_inside("a/b", "c/../../../d"), "down then too far up is out");
    CHECK(brig_template_link_inside("bin", "usr/bin"), "a relative link down is inside");
    CHECK(!brig_template_link_inside("x", ""), "an empty target is refused");
    CHECK(brig_template_link_inside("a/b", "./../c//d"), "`.` and doubled slashes are nothing");
}

static void test_whiteouts(void)
{
    const char *victim;
    bool bad;
    CHECK(brig_template_whiteout(".wh..wh..opq", &victim, &bad) == BRIG_WHITEOUT_OPAQUE && !bad,
          "the opaque marker");
    CHECK(brig_template_whiteout(".wh.passwd", &victim, &bad) == BRIG_WHITEOUT_FILE && !bad
              && strcmp(victim, "passwd") == 0,
          "a whiteout names its victim");
    CHECK(brig_template_whiteout("passwd", &victim, &bad) == BRIG_WHITEOUT_NONE && !bad
              && victim == NULL,
          "a plain name is no whiteout");
    CHECK(brig_template_whiteout(".wh.", &victim, &bad) == BRIG_WHITEOUT_NONE && bad,
          "a whiteout of nothing is bad");
    CHECK(brig_template_whiteout(".wh...", &victim, &bad) == BRIG_WHITEOUT_NONE && bad,
          "a whiteout of `..` is bad");
    CHECK(brig_template_whiteout(".wh..", &victim, &bad) == BRIG_WHITEOUT_NONE && bad,
          "a whiteout of `.` is bad");
}

int main(void)
{
    test_entry_paths();
    test_links();
    test_whiteouts();
    return unit_done();
}
