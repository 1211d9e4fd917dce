/* sandbox/download.c, as far as it goes without root: the file name a
 * URL gives, the schemes, and the errors found before the sandbox's data
 * is touched (a scheme, a path out of /mnt/data, a sandbox that isn't
 * there). The download itself is tests/integration/sandbox_download.bats'. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/download.h"
#include "sandbox/layout.h"
#include "unit.h"

static void test_name(void)
{
    static const struct {
        const char *url, *want; /* want NULL: no name */
    } cases[] = {
        { "https://example.com/a/b/file.tar.gz", "file.tar.gz" },
        { "http://example.com/data.csv?x=1&y=/z", "data.csv" },
        { "http://example.com/chart.png#top", "chart.png" },
        { "http://example.com:8080/p%20q", "p%20q" },
        { "https://example.com", NULL },
        { "https://example.com/", NULL },
        { "https://example.com/dir/", NULL },
        { "https://example.com?q=/etc/passwd", NULL },
        { "https://example.com/a/..", NULL },
        { "https://example.com/a/.", NULL },
        { "https://user@example.com/f", "f" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *name = NULL;
        int r = brig_sandbox_download_name(cases[i].url, &name);
        CHECK_STR(r == 0 ? name : "(failed)", cases[i].want, cases[i].url);
        free(name);
    }
    CHECK(brig_sandbox_download_scheme_ok("https://example.com/x")
              && brig_sandbox_download_scheme_ok("HTTP://example.com/x"),
          "scheme: http and https, any case");
    CHECK(!brig_sandbox_download_scheme_ok("ftp://example.com/x")
              && !brig_sandbox_download_scheme_ok("file:///etc/passwd")
              && !brig_sandbox_download_scheme_ok("example.com/x"),
          "scheme: nothing else");
}

static const char *outcome(const char *id, const char *url, const char *path)
{
    static char buf[512];
    brig_error_t err = NULL;
    char *final = NULL;
    uint64_t bytes = 0;
    struct brig_sandbox_download_options o = { 0 };
    int r = brig_sandbox_download(id, url, path, &o, &final, &bytes, &err);
    snprintf(buf, sizeof buf, "%s", r < 0 ? err->msg : "ok");
    brig_error_release(&err);
    free(final);
    return buf;
}

static void test_early_errors(void)
{
    char home[] = "/tmp/brig-test-dl-XXXXXX";
    if (mkdtemp(home) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    setenv(BRIG_SANDBOX_HOME_ENV, home, 1);
    const char *url = "https://example.com/f.txt";
    CHECK_STR(outcome("s1", "ftp://example.com/f", "x"),
              "sandbox download: `ftp://example.com/f`: only http:// and https:// URLs",
              "an ftp URL");
    CHECK_STR(outcome("s1", url, "../x"), "sandbox download: `../x`: `..` is not allowed in a path",
              "a path with ..");
    CHECK_STR(outcome("s1", url, "/mnt/data/a/../b"),
              "sandbox download: `/mnt/data/a/../b`: `..` is not allowed in a path",
              "a path with .. inside /mnt/data");
    CHECK_STR(outcome("s1", url, "/etc/x"),
              "sandbox download: `/etc/x`: only /mnt/data is reachable", "an absolute path");
    char want[256];
    snprintf(
        want, sizeof want,
        "sandbox download: sandbox `s1`: `%s/s1/data` is not mounted: No such file or directory",
        home);
    CHECK_STR(outcome("s1", url, "x"), want, "a sandbox that isn't there");
    CHECK_STR(
        outcome("../s1", url, "x"),
        "sandbox download: sandbox: invalid id `../s1` (letters, digits and _+-., not first a `.`)",
        "a bad id");
    rmdir(home);
}

int main(void)
{
    test_name();
    test_early_errors();
    return unit_done();
}
