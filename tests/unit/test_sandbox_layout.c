/* sandbox/layout.c and the parts of manage.c that need no root: where
 * sandboxes live, which ids may name one, and exists/list/remove against
 * a home in a temporary dir with an empty state root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/layout.h"
#include "sandbox/manage.h"
#include "unit.h"

static char tmp[64], home[128], state_root[128];

/* The message of a failure, or "ok"; the error is released. */
static const char *outcome(int r, brig_error_t *err)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s", r < 0 ? (*err ? (*err)->msg : "(no message)") : "ok");
    brig_error_release(err);
    return buf;
}

static void test_home(void)
{
    unsetenv(BRIG_SANDBOX_HOME_ENV);
    CHECK_STR(brig_sandbox_home(), "/var/lib/brig/sandboxes", "home: the default");
    setenv(BRIG_SANDBOX_HOME_ENV, "", 1);
    CHECK_STR(brig_sandbox_home(), "/var/lib/brig/sandboxes", "home: an empty variable is unset");
    setenv(BRIG_SANDBOX_HOME_ENV, home, 1);
    CHECK_STR(brig_sandbox_home(), home, "home: $BRIG_SANDBOX_DIR");
}

static void test_ids(void)
{
    static const struct {
        const char *id;
        const char *want;
    } cases[] = {
        { "s1", "ok" },
        { "a.b-c_d", "ok" },
        { "...", "invalid id `...` (letters, digits and _+-., not first a `.`)" },
        { "..a", "invalid id `..a` (letters, digits and _+-., not first a `.`)" },
        { ".containers", "invalid id `.containers` (letters, digits and _+-., not first a `.`)" },
        { "a.", "ok" },
        { "", "invalid id `` (letters, digits and _+-., not first a `.`)" },
        { ".", "invalid id `.` (letters, digits and _+-., not first a `.`)" },
        { "..", "invalid id `..` (letters, digits and _+-., not first a `.`)" },
        { "a/b", "invalid id `a/b` (letters, digits and _+-., not first a `.`)" },
        { "/", "invalid id `/` (letters, digits and _+-., not first a `.`)" },
        { "../x", "invalid id `../x` (letters, digits and _+-., not first a `.`)" },
        { "x/", "invalid id `x/` (letters, digits and _+-., not first a `.`)" },
        { "a b", "invalid id `a b` (letters, digits and _+-., not first a `.`)" },
        { "a\nb", "invalid id: a control character in it" },
        { "a+b", "ok" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        brig_error_t err = NULL;
        char name[64];
        snprintf(name, sizeof name, "id \"%s\"", cases[i].id);
        CHECK_STR(outcome(brig_sandbox_id_validate(cases[i].id, &err), &err), cases[i].want, name);
    }
}

static void test_paths(void)
{
    brig_error_t err = NULL;
    char *p = NULL, want[256];
    snprintf(want, sizeof want, "%s/s1", home);
    CHECK(brig_sandbox_dir("s1", &p, &err) == 0, "dir: ok");
    CHECK_STR(p, want, "dir: HOME/ID");
    free(p);
    snprintf(want, sizeof want, "%s/s1/bundle", home);
    CHECK(brig_sandbox_path("s1", BRIG_SANDBOX_BUNDLE, &p, &err) == 0, "path: ok");
    CHECK_STR(p, want, "path: HOME/ID/bundle");
    free(p);
    p = (char *) "unchanged";
    CHECK_STR(outcome(brig_sandbox_dir("a/b", &p, &err), &err),
              "sandbox: invalid id `a/b` (letters, digits and _+-., not first a `.`)",
              "dir: a bad id, as the CLI prints it");
    CHECK(p == NULL, "dir: nothing out after a bad id");
    CHECK_STR(outcome(brig_sandbox_path("..", BRIG_SANDBOX_CHECKPOINT, &p, &err), &err),
              "sandbox: invalid id `..` (letters, digits and _+-., not first a `.`)",
              "path: a bad id");
}

static void mk(const char *rel, bool dir)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", home, rel);
    if (dir ? mkdir(p, 0700) : close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)))
        perror(p);
}

static bool present(const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", home, rel);
    return access(p, F_OK) == 0;
}

/* No sandbox has a container here (the state root is empty), so each is
 * what a failed create leaves: listed as such, and removable. */
static void test_manage(void)
{
    brig_error_t err = NULL;
    struct brig_sandbox_entry *e = NULL;
    size_t n = 99;
    CHECK(brig_sandbox_list(state_root, &e, &n, &err) == 0 && n == 0 && e == NULL,
          "list: no home, no sandboxes");
    brig_error_release(&err);
    mkdir(home, 0711);
    mk("zeta", true);
    mk("alpha", true);
    mk("alpha/bundle", true);
    mk(".hidden", true);
    CHECK(brig_sandbox_list(state_root, &e, &n, &err) == 0, "list: ok");
    brig_error_release(&err);
    CHECK(n == 2, "list: two sandboxes, dot files skipped");
    if (n == 2) {
        CHECK_STR(e[0].id, "alpha", "list: sorted by id (first)");
        CHECK_STR(e[1].id, "zeta", "list: sorted by id (second)");
        CHECK(!e[0].has_container && !e[1].has_container, "list: no containers");
        CHECK(!e[0].data_mounted, "list: no data mounted");
        CHECK(e[0].mtime > 0, "list: the dir's time");
    }
    brig_sandbox_list_free(e, n);

    CHECK(brig_sandbox_exists(state_root, "alpha", &err) == 1, "exists: a dir");
    CHECK(brig_sandbox_exists(state_root, "nope", &err) == 0, "exists: neither dir nor container");
    CHECK_STR(outcome(brig_sandbox_exists(state_root, "..", &err), &err),
              "sandbox: invalid id `..` (letters, digits and _+-., not first a `.`)",
              "exists: a bad id");

    CHECK_STR(outcome(brig_sandbox_remove(state_root, "alpha", &err), &err), "ok", "remove: ok");
    CHECK(!present("alpha") && present("zeta"), "remove: that sandbox's dir, only");
    CHECK_STR(outcome(brig_sandbox_remove(state_root, "alpha", &err), &err), "ok",
              "remove: a missing sandbox is not an error");
    CHECK_STR(outcome(brig_sandbox_remove(state_root, "..", &err), &err),
              "sandbox: invalid id `..` (letters, digits and _+-., not first a `.`)",
              "remove: a bad id removes nothing");
    CHECK(present("zeta"), "remove: the home is intact");
}

static void test_checkpoint_ids(void)
{
    brig_error_t err = NULL, warning = NULL;
    CHECK_STR(outcome(brig_sandbox_checkpoint(state_root, "a/b", NULL, false, &err), &err),
              "sandbox: invalid id `a/b` (letters, digits and _+-., not first a `.`)",
              "checkpoint: a bad id");
    CHECK_STR(outcome(brig_sandbox_restore(state_root, ".", "/x", false, NULL, &warning, &err),
                      &err),
              "sandbox: invalid id `.` (letters, digits and _+-., not first a `.`)",
              "restore: a bad id, even with an image path");
    CHECK(warning == NULL, "restore: no warning for a restore that did not happen");
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/brig-test-sblayout-XXXXXX");
    if (mkdtemp(tmp) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(home, sizeof home, "%s/sandboxes", tmp);
    snprintf(state_root, sizeof state_root, "%s/state", tmp);
    test_home();
    test_ids();
    test_paths();
    test_manage();
    test_checkpoint_ids();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", tmp);
    return unit_done();
}
