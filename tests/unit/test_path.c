/* brig_path_*: lexical cleaning, and resolution inside a root through both
 * openat2 and the user-space walk, against a tree full of escape attempts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "unit.h"

static void test_clean(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        { "", "." },
        { "/", "/" },
        { ".", "." },
        { "a/../..", "." },
        { "/../../etc", "/etc" },
        { "//a//b/", "/a/b" },
        { "./a/.", "a" },
        { "a/b/../c", "a/c" },
        { "/a/b/../../..", "/" },
        { "../x", "x" },
        { "/..", "/" },
        { "/a/./b/./", "/a/b" },
        { "abc/def/..", "abc" },
        { "/...", "/..." },
        { "..a/b..", "..a/b.." },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = brig_path_clean(cases[i].in);
        char name[96];
        snprintf(name, sizeof name, "clean \"%s\"", cases[i].in);
        CHECK_STR(got, cases[i].want, name);
        free(got);
    }
}

static char tmp[64];
static char root[128];
static int root_fd = -1;

static void at(const char *rel, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", root, rel);
}

static void mk_link(const char *target, const char *rel)
{
    char p[256];
    at(rel, p, sizeof p);
    if (symlink(target, p) < 0)
        perror(p);
}

static void mk_file(const char *path)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        perror(path);
    else
        close(fd);
}

static void build_tree(void)
{
    char p[256];
    snprintf(tmp, sizeof tmp, "/tmp/brig-test-path-XXXXXX");
    if (mkdtemp(tmp) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(root, sizeof root, "%s/root", tmp);
    mkdir(root, 0755);
    at("etc", p, sizeof p);
    mkdir(p, 0755);
    at("etc/passwd", p, sizeof p);
    mk_file(p);
    at("dir", p, sizeof p);
    mkdir(p, 0755);
    at("dir/sub", p, sizeof p);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/secret", tmp); /* outside the root */
    mk_file(p);
    mk_link("/etc", "abs_escape");
    mk_link("../../../etc", "rel_escape");
    mk_link("/etc/..", "dotdot");
    mk_link("../../../../", "dir/up");
    mk_link("loop2", "loop1");
    mk_link("loop1", "loop2");
    mk_link("self", "self");
    mk_link("etc/passwd", "file_link");
    mk_link("/../../escape_dir", "esc_dir");
    mk_link("../../../../escape_file", "esc_file");
    mk_link("/../secret", "secret_link");
    /* c1 -> c2 -> ... -> c40 -> /etc is 40 links, the limit; c0 is one
     * more. */
    for (int i = 0; i < 41; i++) {
        char name[16], target[16];
        snprintf(name, sizeof name, "c%d", i);
        if (i == 40)
            snprintf(target, sizeof target, "/etc");
        else
            snprintf(target, sizeof target, "c%d", i + 1);
        mk_link(target, name);
    }
    root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void remove_tree(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", tmp);
    close(root_fd);
}

static int same_file(int fd, const char *rel)
{
    char p[256];
    struct stat a, b;
    at(rel, p, sizeof p);
    if (fd < 0 || fstat(fd, &a) < 0 || stat(p, &b) < 0)
        return 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static const char *mode_name(void)
{
    return brig_path_force_fallback ? "walk" : "openat2";
}

/* Opens `path` in the root; wants either the file root/<want> or errno. */
static void check_open(const char *path, int flags, const char *want, int want_errno)
{
    brig_error_t err = NULL;
    char name[160];
    int fd = brig_path_open_in_root(root_fd, path, flags, 0, &err);
    if (want != NULL) {
        snprintf(name, sizeof name, "%s: open \"%s\" is root/%s", mode_name(), path, want);
        CHECK(same_file(fd, want), name);
        if (err)
            printf("#   %s\n", err->msg);
    } else {
        snprintf(name, sizeof name, "%s: open \"%s\" fails with %s", mode_name(), path,
                 strerrorname_np(want_errno));
        CHECK(fd < 0 && err != NULL && err->errnum == want_errno, name);
        if (err && err->errnum != want_errno)
            printf("#   %s\n", err->msg);
    }
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);
}

static void test_open(void)
{
    check_open("etc/passwd", O_PATH, "etc/passwd", 0);
    check_open("/etc/passwd", O_RDONLY, "etc/passwd", 0);
    check_open("abs_escape/passwd", O_RDONLY, "etc/passwd", 0);
    check_open("rel_escape/passwd", O_PATH, "etc/passwd", 0);
    check_open("dotdot/etc/passwd", O_PATH, "etc/passwd", 0);
    check_open("../../etc/passwd", O_PATH, "etc/passwd", 0);
    check_open("/../../../etc/../etc/passwd", O_PATH, "etc/passwd", 0);
    check_open("dir/up/etc/passwd", O_PATH, "etc/passwd", 0);
    check_open("dir/sub/../..", O_PATH, ".", 0);
    check_open("file_link", O_RDONLY, "etc/passwd", 0);
    check_open("", O_PATH | O_DIRECTORY, ".", 0);
    check_open("/", O_RDONLY | O_DIRECTORY, ".", 0);
    check_open("abs_escape/", O_PATH, "etc", 0);
    check_open("c1/passwd", O_PATH, "etc/passwd", 0);
    check_open("c0/passwd", O_PATH, NULL, ELOOP);
    check_open("../secret", O_PATH, NULL, ENOENT);
    check_open("secret_link", O_PATH, NULL, ENOENT);
    check_open("loop1", O_PATH, NULL, ELOOP);
    check_open("self/x", O_PATH, NULL, ELOOP);
    check_open("c1/../c0/passwd", O_PATH, NULL, ELOOP); /* 40 + 41 links */
    check_open("etc/passwd/x", O_PATH, NULL, ENOTDIR);
    check_open("etc/passwd/", O_RDONLY, NULL, ENOTDIR);
    check_open("missing", O_RDONLY, NULL, ENOENT);
    check_open("dir", O_WRONLY, NULL, EISDIR);

    /* O_NOFOLLOW on the last component gives the link itself. */
    brig_error_t err = NULL;
    int fd = brig_path_open_in_root(root_fd, "abs_escape", O_PATH | O_NOFOLLOW, 0, &err);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode),
          "O_PATH|O_NOFOLLOW opens the link");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    /* O_CREAT through an escaping link creates inside the root. */
    fd = brig_path_open_in_root(root_fd, "abs_escape/created", O_CREAT | O_WRONLY, 0600, &err);
    CHECK(fd >= 0 && same_file(fd, "etc/created"), "O_CREAT through /etc link lands in root/etc");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);
    CHECK(access("/etc/created", F_OK) < 0, "nothing created in the host's /etc");

    fd = brig_path_open_in_root(root_fd, "missing", O_RDONLY, 0, &err);
    CHECK(fd < 0 && err && strstr(err->msg, "`missing`") != NULL, "error names the path");
    brig_error_release(&err);
}

/* fd is what a make call returned for `rel`, which must now be there with
 * exactly this type and mode. Closes fd. */
static void check_made(int fd, const char *rel, mode_t want, const char *name)
{
    char p[256];
    struct stat st;
    at(rel, p, sizeof p);
    CHECK(fd >= 0 && same_file(fd, rel) && stat(p, &st) == 0
              && (st.st_mode & (S_IFMT | 07777)) == want,
          name);
    if (fd >= 0)
        close(fd);
}

static void test_make(void)
{
    brig_error_t err = NULL;
    char p[256];
    struct stat st;

    int fd = brig_path_mkdir_in_root(root_fd, "a/b/c", 0755, &err);
    at("a/b/c", p, sizeof p);
    CHECK(fd >= 0 && same_file(fd, "a/b/c") && stat(p, &st) == 0 && S_ISDIR(st.st_mode),
          "mkdir -p a/b/c");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_mkdir_in_root(root_fd, "a/b/c", 0755, &err);
    CHECK(fd >= 0, "mkdir of an existing dir succeeds");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_mkdir_in_root(root_fd, "/esc_dir/inner", 0755, &err);
    CHECK(fd >= 0 && same_file(fd, "escape_dir/inner"),
          "mkdir through /../../x link stays in root");
    snprintf(p, sizeof p, "%s/escape_dir", tmp);
    CHECK(access(p, F_OK) < 0 && access("/escape_dir", F_OK) < 0, "no escape_dir outside the root");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_mkfile_in_root(root_fd, "esc_file", 0644, &err);
    at("escape_file", p, sizeof p);
    CHECK(fd >= 0 && stat(p, &st) == 0 && S_ISREG(st.st_mode) && same_file(fd, "escape_file"),
          "mkfile through ../../ link stays in root");
    snprintf(p, sizeof p, "%s/escape_file", tmp);
    CHECK(access(p, F_OK) < 0 && access("/escape_file", F_OK) < 0,
          "no escape_file outside the root");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_mkfile_in_root(root_fd, "x/y/file", 0644, &err);
    at("x/y/file", p, sizeof p);
    CHECK(fd >= 0 && stat(p, &st) == 0 && S_ISREG(st.st_mode), "mkfile x/y/file with parents");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_mkfile_in_root(root_fd, "etc/passwd", 0644, &err);
    CHECK(fd >= 0 && same_file(fd, "etc/passwd"), "mkfile of an existing file opens it");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_mkdir_in_root(root_fd, "etc/passwd/sub", 0755, &err);
    CHECK(fd < 0 && err && err->errnum == ENOTDIR, "mkdir under a file fails with ENOTDIR");
    brig_error_release(&err);

    fd = brig_path_mkdir_in_root(root_fd, "file_link", 0755, &err);
    CHECK(fd < 0 && err && err->errnum == ENOTDIR, "mkdir of a link to a file fails");
    brig_error_release(&err);

    fd = brig_path_mkfile_in_root(root_fd, "dir", 0644, &err);
    CHECK(fd < 0 && err && err->errnum == EISDIR, "mkfile of a directory fails with EISDIR");
    brig_error_release(&err);

    fd = brig_path_mkdir_in_root(root_fd, "loop1/x", 0755, &err);
    CHECK(fd < 0 && err && err->errnum == ELOOP, "mkdir through a loop fails with ELOOP");
    brig_error_release(&err);

    /* One missing entry under an existing directory: made where the parent
     * is, with the mode asked for (umask cleared for the check). */
    mode_t old_mask = umask(0);
    check_made(brig_path_mkdir_in_root(root_fd, "dir/one", 0711, &err), "dir/one", S_IFDIR | 0711,
               "mkdir of one missing entry, with its mode");
    brig_error_release(&err);
    check_made(brig_path_mkfile_in_root(root_fd, "/dir/one.txt", 0640, &err), "dir/one.txt",
               S_IFREG | 0640, "mkfile of one missing entry, with its mode");
    brig_error_release(&err);
    umask(old_mask);

    /* The parent is a link out of the root: the entry is made in the
     * root's /etc, never the host's. */
    fd = brig_path_mkdir_in_root(root_fd, "abs_escape/made_here", 0755, &err);
    CHECK(fd >= 0 && same_file(fd, "etc/made_here") && access("/etc/made_here", F_OK) < 0,
          "mkdir of one entry under an escaping link stays in root");
    if (fd >= 0)
        close(fd);
    brig_error_release(&err);

    fd = brig_path_try_open_in_root(root_fd, "dir/missing", O_PATH, 0);
    CHECK(fd < 0 && errno == ENOENT, "try_open of a missing path: -1 with ENOENT");
    fd = brig_path_try_open_in_root(root_fd, "abs_escape/passwd", O_PATH, 0);
    CHECK(fd >= 0 && same_file(fd, "etc/passwd"), "try_open resolves inside the root");
    if (fd >= 0)
        close(fd);
}

static void run_all(bool fallback)
{
    brig_path_force_fallback = fallback;
    build_tree();
    test_open();
    test_make();
    remove_tree();
}

int main(void)
{
    test_clean();

    char buf[BRIG_FD_PATH_MAX];
    brig_fd_path(7, buf);
    CHECK_STR(buf, "/proc/self/fd/7", "brig_fd_path");

    run_all(false);
    run_all(true);
    return unit_done();
}
