/* sandbox/transfer.c: paths as a sandbox names them, and their resolution
 * inside a data tree whose symlinks point out of it at a host file beside
 * it, through openat2 and through the user-space walk. Nothing may be read
 * from or written to outside the tree. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "sandbox/layout.h"
#include "sandbox/transfer.h"
#include "unit.h"

static char tmp[64], tree[128], outside[128];
static int tree_fd = -1;

static const char *outcome(int r, brig_error_t *err)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s", r < 0 ? (*err ? (*err)->msg : "(no message)") : "ok");
    brig_error_release(err);
    return buf;
}

static void test_relpath(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        { "/mnt/data", "." },
        { "/mnt/data/", "." },
        { "/mnt/data//a/b", "a/b" },
        { "a/b", "a/b" },
        { "", "." },
        { "dir/", "dir/" },
        { "../x", "../x" }, /* resolution keeps it inside */
        { "/mnt/database", "only /mnt/data is reachable" },
        { "/etc/passwd", "only /mnt/data is reachable" },
        { "/mnt", "only /mnt/data is reachable" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        brig_error_t err = NULL;
        char *rel = NULL, name[64];
        int r = brig_sandbox_data_relpath(cases[i].in, &rel, &err);
        snprintf(name, sizeof name, "relpath \"%s\"", cases[i].in);
        CHECK_STR(r == 0 ? rel : outcome(r, &err), cases[i].want, name);
        free(rel);
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0)
        perror(path);
    if (f)
        fclose(f);
}

static void in_tree(const char *rel, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", tree, rel);
}

static void link_in_tree(const char *target, const char *rel)
{
    char p[256];
    in_tree(rel, p, sizeof p);
    if (symlink(target, p) < 0)
        perror(p);
}

/* tmp/outside/victim is the host's; tmp/data is the sandbox's, with
 * links at the victim and its dir, absolute and relative. */
static void build(void)
{
    char p[256];
    snprintf(tmp, sizeof tmp, "/tmp/brig-test-sbcp-XXXXXX");
    if (mkdtemp(tmp) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(tree, sizeof tree, "%s/data", tmp);
    snprintf(outside, sizeof outside, "%s/outside", tmp);
    mkdir(tree, 0755);
    mkdir(outside, 0755);
    snprintf(p, sizeof p, "%s/victim", outside);
    write_file(p, "host\n");
    in_tree("file", p, sizeof p);
    write_file(p, "mine\n");
    in_tree("sub", p, sizeof p);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/victim", outside);
    link_in_tree(p, "victim_link");
    link_in_tree(outside, "abs");
    link_in_tree("../outside", "rel");
    link_in_tree("../../../../", "up");
    tree_fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static bool victim_untouched(void)
{
    char p[256], buf[16] = { 0 };
    snprintf(p, sizeof p, "%s/victim", outside);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return false;
    bool same = fgets(buf, sizeof buf, f) && strcmp(buf, "host\n") == 0;
    fclose(f);
    snprintf(p, sizeof p, "%s/x", outside);
    return same && access(p, F_OK) != 0;
}

static const char *mode(void)
{
    return brig_path_force_fallback ? "walk" : "openat2";
}

static void check_read(const char *rel, bool want_ok)
{
    brig_error_t err = NULL;
    char name[96], buf[16] = { 0 };
    cleanup_close int fd = brig_sandbox_data_read(tree_fd, rel, &err);
    snprintf(name, sizeof name, "%s: read \"%s\" %s", mode(), rel, want_ok ? "opens" : "fails");
    CHECK((fd >= 0) == want_ok, name);
    if (fd >= 0) {
        snprintf(name, sizeof name, "%s: read \"%s\" is the tree's file", mode(), rel);
        CHECK(read(fd, buf, sizeof buf - 1) > 0 && strcmp(buf, "mine\n") == 0, name);
    }
    brig_error_release(&err);
}

static void test_read(void)
{
    check_read("file", true);
    check_read("./sub/../file", true);
    check_read("victim_link", false); /* a final symlink */
    check_read("abs/victim", false);  /* the host's path, taken inside */
    check_read("rel/victim", false);
    check_read("../outside/victim", false);
    check_read("up/outside/victim", false);
    check_read("nonexistent", false);
    brig_error_t err = NULL;
    CHECK_STR(outcome(brig_sandbox_data_read(tree_fd, "sub", &err), &err), "not a regular file",
              "read: a directory is refused");
    /* A fifo the sandbox planted: refused at once, in either direction,
     * instead of waiting for ever for its other end. */
    if (mkfifoat(tree_fd, "fifo", 0644) == 0) {
        CHECK_STR(outcome(brig_sandbox_data_read(tree_fd, "fifo", &err), &err),
                  "not a regular file", "read: a fifo is refused without blocking");
        /* A copy is written unseen and renamed over it: never opened. */
        struct brig_sandbox_data_file f = BRIG_SANDBOX_DATA_FILE_INIT;
        struct stat st;
        CHECK(brig_sandbox_data_create_unseen(tree_fd, "fifo", &f, &err) == 0
                  && brig_sandbox_data_publish(&f, &err) == 0
                  && fstatat(tree_fd, "fifo", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode),
              "create: an existing fifo is replaced without blocking");
        brig_sandbox_data_file_close(&f);
        brig_error_release(&err);
        unlinkat(tree_fd, "fifo", 0);
    }
}

static void check_target(const char *rel, const char *want)
{
    brig_error_t err = NULL;
    char *got = NULL, name[96];
    int r = brig_sandbox_data_target(tree_fd, rel, "/host/dir/x.csv", &got, &err);
    snprintf(name, sizeof name, "%s: target of \"%s\"", mode(), rel);
    CHECK_STR(r == 0 ? got : outcome(r, &err), want, name);
    free(got);
}

static void test_target(void)
{
    check_target(".", "./x.csv");
    check_target("sub", "sub/x.csv");
    check_target("new/", "new/x.csv");
    check_target("y.csv", "y.csv");
    /* Links to host dirs are no dirs inside the tree: the name stays. */
    check_target("abs", "abs");
    check_target("rel", "rel");
    check_target("up", "up/x.csv"); /* up is the tree's own top */
}

static void check_create(const char *name, bool want_ok)
{
    brig_error_t err = NULL;
    char label[96];
    struct brig_sandbox_data_file f = BRIG_SANDBOX_DATA_FILE_INIT;
    bool ok = brig_sandbox_data_create_unseen(tree_fd, name, &f, &err) == 0;
    if (ok && write(f.fd, "mine\n", 5) != 5)
        perror(name);
    ok = ok && brig_sandbox_data_publish(&f, &err) == 0;
    brig_sandbox_data_file_close(&f);
    snprintf(label, sizeof label, "%s: create \"%s\" %s, the host's file intact", mode(), name,
             want_ok ? "works" : "fails");
    CHECK(ok == want_ok && victim_untouched(), label);
    brig_error_release(&err);
}

static void test_create(void)
{
    char p[256];
    check_create("sub/new.txt", true);
    /* A link of the sandbox's at the name is replaced, never followed. */
    check_create("victim_link", true);
    check_create("abs", true);
    check_create("abs/x", false);
    check_create("rel/x", false);
    check_create("../outside/x", false);
    /* In-root: up/victim is the tree's own victim, made there. */
    check_create("up/victim", true);
    in_tree("victim", p, sizeof p);
    CHECK(access(p, F_OK) == 0, "create: up/victim landed in the tree");
    unlink(p);
}

/* A file made unseen in the tree: 1 when published, 0 when closed
 * before, -1 when it could not be made. */
static int unseen(const char *name, bool publish)
{
    brig_error_t err = NULL;
    struct brig_sandbox_data_file f = BRIG_SANDBOX_DATA_FILE_INIT;
    if (brig_sandbox_data_create_unseen(tree_fd, name, &f, &err) < 0) {
        brig_error_release(&err);
        return -1;
    }
    int r = write(f.fd, "new\n", 4) == 4 && (!publish || brig_sandbox_data_publish(&f, &err) == 0);
    brig_error_release(&err);
    brig_sandbox_data_file_close(&f);
    return r && publish ? 1 : 0;
}

/* What the tree holds at rel: its text, or "(none)"; a link, "(link)". */
static const char *tree_text(const char *rel)
{
    static char buf[64];
    char p[256];
    struct stat st;
    in_tree(rel, p, sizeof p);
    if (lstat(p, &st) < 0)
        return "(none)";
    if (S_ISLNK(st.st_mode))
        return "(link)";
    FILE *f = fopen(p, "r");
    buf[0] = '\0';
    if (f == NULL || fgets(buf, sizeof buf, f) == NULL)
        snprintf(buf, sizeof buf, "(unreadable)");
    if (f)
        fclose(f);
    return buf;
}

/* Nothing but what was there and what a test published. */
static bool tree_holds_only(const char *const *names)
{
    cleanup_dir DIR *d = opendir(tree);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        bool known = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        for (size_t i = 0; !known && names[i]; i++)
            known = strcmp(de->d_name, names[i]) == 0;
        if (!known)
            return false;
    }
    return d != NULL;
}

static void test_unseen(void)
{
    static const char *const before[] = { "file", "sub", "victim_link", "abs", "rel", "up", NULL };
    char label[96];
    CHECK(unseen("dropped.txt", false) == 0 && tree_holds_only(before),
          "unseen: closed unpublished, nothing is left");
    CHECK(unseen("sub/new.txt", true) == 1, "unseen: published in a subdirectory");
    CHECK_STR(tree_text("sub/new.txt"), "new\n", "unseen: its contents under its name");
    CHECK(unseen("file", true) == 1, "unseen: published over a file");
    CHECK_STR(tree_text("file"), "new\n", "unseen: the file replaced");
    /* A link as the name itself: replaced, the host's file intact. */
    CHECK(unseen("victim_link", true) == 1 && victim_untouched(),
          "unseen: over a link to the host");
    CHECK_STR(tree_text("victim_link"), "new\n", "unseen: the link replaced by the file");
    snprintf(label, sizeof label, "%s: unseen: no dir through a link out", mode());
    CHECK(unseen("abs/x", true) < 0 && unseen("rel/x", true) < 0 && victim_untouched(), label);
    CHECK(unseen("up/top.txt", true) == 1, "unseen: a link up stops at the tree's top");
    CHECK_STR(tree_text("top.txt"), "new\n", "unseen: landed in the tree");
    CHECK(unseen(".", true) < 0 && unseen("sub/..", true) < 0, "unseen: no file name");
    static const char *const after[] = { "file", "sub", "victim_link", "abs",
                                         "rel",  "up",  "top.txt",     NULL };
    CHECK(tree_holds_only(after), "unseen: no temporary name left");
    char p[256];
    in_tree("top.txt", p, sizeof p);
    unlink(p);
    in_tree("sub/new.txt", p, sizeof p);
    unlink(p);
    in_tree("victim_link", p, sizeof p);
    unlink(p);
    snprintf(p, sizeof p, "%s/victim", outside);
    link_in_tree(p, "victim_link");
    in_tree("file", p, sizeof p);
    write_file(p, "mine\n");
}

/* Copies by id, up to the point that needs a mounted image (root). */
static void test_copy_errors(void)
{
    char home[128], dir[192], want[512];
    snprintf(home, sizeof home, "%s/sandboxes", tmp);
    snprintf(dir, sizeof dir, "%s/s1/data", home);
    setenv(BRIG_SANDBOX_HOME_ENV, home, 1);
    mkdir(home, 0711);
    brig_error_t err = NULL;
    snprintf(want, sizeof want, "sandbox `s1`: `%s` is not mounted: No such file or directory",
             dir);
    CHECK_STR(outcome(brig_sandbox_data_open_tree("s1", &err), &err), want,
              "open tree: data not mounted");
    snprintf(want, sizeof want, "sandbox cp: `%s/none`: No such file or directory", tmp);
    snprintf(dir, sizeof dir, "%s/none", tmp);
    CHECK_STR(outcome(brig_sandbox_copy_in(dir, "s1", ".", &err), &err), want,
              "copy in: a missing host file");
    snprintf(want, sizeof want, "sandbox cp: `%s`: not a regular file", tree);
    CHECK_STR(outcome(brig_sandbox_copy_in(tree, "s1", ".", &err), &err), want,
              "copy in: a host dir");
    snprintf(dir, sizeof dir, "%s/file", tree);
    CHECK_STR(outcome(brig_sandbox_copy_in(dir, "..", ".", &err), &err),
              "sandbox: invalid id `..` (letters, digits and _+-., not first a `.`)",
              "copy in: a bad id");
    CHECK_STR(outcome(brig_sandbox_copy_out("a/b", "x", "/nonexistent", &err), &err),
              "sandbox: invalid id `a/b` (letters, digits and _+-., not first a `.`)",
              "copy out: a bad id");
}

int main(void)
{
    test_relpath();
    build();
    for (int fallback = 0; fallback <= 1; fallback++) {
        brig_path_force_fallback = fallback;
        test_read();
        test_target();
        test_create();
        test_unseen();
    }
    test_copy_errors();
    close(tree_fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", tmp);
    return unit_done();
}
