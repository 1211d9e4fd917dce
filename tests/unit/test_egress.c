/* sandbox/egress_conf.c, egress_http.c, egress_addr.c: the allow-list and
 * its matching (the proxy's, and downloads' with their `download`
 * rules), the list made from the host's package sources, request heads
 * (and the rewrite for the origin), and which addresses count as public.
 * All pure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sandbox/egress.h"
#include "unit.h"

/* An egress.conf text refused with `want` in the error. */
static void check_refused(const char *text, const char *want)
{
    struct brig_egress_conf c;
    brig_error_t err = NULL;
    int rc = brig_egress_conf_parse(text, "egress.conf", &c, &err);
    bool ok = rc < 0 && err && strstr(err->msg, want);
    CHECK(ok, want);
    if (!ok)
        printf("#   got \"%s\"\n", err ? err->msg : "(none)");
    if (rc == 0)
        brig_egress_conf_free(&c);
    brig_error_release(&err);
}

static void test_conf(void)
{
    struct brig_egress_conf c;
    brig_error_t err = NULL;
    const char *text = "# the sources\n"
                       "allow deb.mirror.example\n"
                       "allow *.registry.example   # a comment after\n"
                       "allow Mirror.Example:8080\n"
                       "allow-private 127.0.0.1:8000\n"
                       "allow-private [::1]:9000\n"
                       "\n"
                       "max-connections 12\n"
                       "idle-timeout 7\n";
    CHECK(brig_egress_conf_parse(text, "egress.conf", &c, &err) == 0, "conf: parses");
    CHECK(c.n == 5 && c.max_connections == 12 && c.idle_timeout == 7
              && c.connect_timeout == BRIG_EGRESS_CONNECT_TIMEOUT,
          "conf: rules and limits");
    CHECK(brig_egress_match(&c, "deb.mirror.example", 80, false) != NULL,
          "match: plain HTTP on 80");
    CHECK(brig_egress_match(&c, "deb.mirror.example", 443, true) != NULL, "match: CONNECT on 443");
    CHECK(brig_egress_match(&c, "deb.mirror.example", 22, true) == NULL,
          "match: CONNECT elsewhere");
    CHECK(brig_egress_match(&c, "deb.mirror.example", 443, false) == NULL,
          "match: plain HTTP on 443 is not the rule's");
    CHECK(brig_egress_match(&c, "npm.registry.example", 443, true) != NULL, "match: *.suffix");
    CHECK(brig_egress_match(&c, "registry.example", 443, true) == NULL,
          "match: *.suffix is not the suffix itself");
    CHECK(brig_egress_match(&c, "evilregistry.example", 443, true) == NULL,
          "match: *.suffix needs the dot");
    CHECK(brig_egress_match(&c, "mirror.example", 8080, false) != NULL
              && brig_egress_match(&c, "mirror.example", 80, false) == NULL,
          "match: an explicit port, lower-cased host");
    const struct brig_egress_rule *r = brig_egress_match(&c, "127.0.0.1", 8000, false);
    CHECK(r && r->private_ok, "match: allow-private");
    CHECK(brig_egress_match(&c, "::1", 9000, true) != NULL, "match: an IPv6 literal");
    brig_egress_conf_free(&c);

    static const struct {
        const char *text, *want;
    } bad[] = {
        { "allow\n", "egress.conf: line 1: expected `KEY VALUE`" },
        { "\n\nallow a b\n", "egress.conf: line 3: expected `KEY VALUE`" },
        { "allow bad_host!\n", "line 1: expected a host, *.suffix or IP" },
        { "allow-private *.x.org\n", "line 1: expected an exact host or IP" },
        { "allow x.org:99999\n", "line 1: expected a host" },
        { "allow x..org\n", "line 1: expected a host" },
        { "max-connections 0\n", "line 1: expected a whole number" },
        { "frobnicate yes\n", "line 1: unknown key" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        check_refused(bad[i].text, bad[i].want);
}

/* `download` entries: their own list, seen by downloads only. */
static void test_download_conf(void)
{
    struct brig_egress_conf c;
    brig_error_t err = NULL;
    const char *text = "allow deb.mirror.example\n"
                       "download Files.Example\n"
                       "download *.cdn.example:8443   # a comment after\n"
                       "download [2001:db8::7]\n"
                       "allow-private 127.0.0.1:8000\n"
                       "download-max-size 512M\n";
    CHECK(brig_egress_conf_parse(text, "egress.conf", &c, &err) == 0, "download: parses");
    CHECK(c.n == 2 && c.n_downloads == 3, "download: its own list, apart from the proxy's rules");
    CHECK(c.download_max_size == (UINT64_C(512) << 20), "download-max-size: 512M");
    CHECK(brig_egress_match(&c, "files.example", 443, true) == NULL
              && brig_egress_match(&c, "files.example", 80, false) == NULL,
          "download: the proxy never lets a download-only host through");
    CHECK(brig_egress_download_match(&c, "files.example", 443, true) != NULL
              && brig_egress_download_match(&c, "files.example", 80, false) != NULL,
          "download: https and http, lower-cased, on the schemes' ports");
    CHECK(brig_egress_download_match(&c, "files.example", 8080, false) == NULL,
          "download: another port is not the rule's");
    CHECK(brig_egress_download_match(&c, "a.cdn.example", 8443, true) != NULL
              && brig_egress_download_match(&c, "cdn.example", 8443, true) == NULL
              && brig_egress_download_match(&c, "a.cdn.example", 443, true) == NULL,
          "download: *.suffix and its port");
    CHECK(brig_egress_download_match(&c, "2001:db8::7", 443, true) != NULL,
          "download: an IPv6 literal");
    CHECK(brig_egress_download_match(&c, "deb.mirror.example", 443, true) != NULL,
          "download: an allow rule lets a download through too");
    const struct brig_egress_rule *r = brig_egress_download_match(&c, "127.0.0.1", 8000, false);
    CHECK(r && r->private_ok, "download: allow-private holds for downloads");
    CHECK(brig_egress_download_match(&c, "other.example", 443, true) == NULL,
          "download: a host on neither list");
    brig_egress_conf_free(&c);
    CHECK(brig_egress_conf_parse("allow x.example\n", "egress.conf", &c, &err) == 0
              && c.n_downloads == 0 && c.download_max_size == BRIG_EGRESS_DOWNLOAD_MAX_SIZE,
          "download: none, and the 1G cap by default");
    brig_egress_conf_free(&c);

    static const struct {
        const char *text, *want;
    } bad[] = {
        { "download\n", "line 1: expected `KEY VALUE`" },
        { "download bad_host!\n", "line 1: expected a host, *.suffix or IP" },
        { "download x.org:0\n", "line 1: expected a host" },
        { "\ndownload-max-size 0\n", "line 2: expected a size from 1" },
        { "download-max-size lots\n", "line 1: expected a size from 1" },
        { "download-max-size 5X\n", "line 1: expected a size from 1" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        check_refused(bad[i].text, bad[i].want);
}

static void test_sources(void)
{
    const char *apt[] = {
        "deb http://deb.example/debian bookworm main\n"
        "deb [signed-by=/k.gpg] https://sec.example:8443/debian-security bookworm-security main\n"
        "# deb http://commented.example/ x y\n",
        "Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm\n",
    };
    struct brig_egress_conf c;
    brig_error_t err = NULL;
    CHECK(brig_egress_conf_from_sources(apt, 2, "registry=https://npm.example/\n",
                                        "[global]\nindex-url = https://pypi.example/simple\n", &c,
                                        &err)
              == 0,
          "sources: made");
    CHECK(c.n == 4, "sources: four hosts, the repeated one once, the comment none");
    CHECK(brig_egress_match(&c, "deb.example", 80, false) != NULL, "sources: apt's http on 80");
    CHECK(brig_egress_match(&c, "sec.example", 8443, true) != NULL, "sources: apt's https port");
    CHECK(brig_egress_match(&c, "npm.example", 443, true) != NULL, "sources: npm's registry");
    CHECK(brig_egress_match(&c, "pypi.example", 443, true) != NULL, "sources: pip's index");
    CHECK(brig_egress_match(&c, "commented.example", 80, false) == NULL,
          "sources: a commented line is not a source");
    CHECK(brig_egress_match(&c, "deb.example", 80, true) == NULL,
          "sources: an http:// source is not a tunnel (CONNECT to its port 80)");
    CHECK(brig_egress_match(&c, "npm.example", 443, false) == NULL,
          "sources: an https:// source takes no plain HTTP");
    brig_egress_conf_free(&c);
}

/* The head, parsed: "kind host port literal" or "refused STATUS". */
static const char *parse(const char *head, char **origin)
{
    static char out[400];
    struct brig_egress_request r;
    int status = 0;
    const char *reason = NULL;
    int rc = brig_egress_request_parse(head, strlen(head), &r, &status, &reason);
    if (rc < 0)
        snprintf(out, sizeof out, "refused %d", status);
    else if (rc == 0)
        snprintf(out, sizeof out, "incomplete");
    else
        snprintf(out, sizeof out, "%s %s %d%s", r.kind == BRIG_EGRESS_CONNECT ? "CONNECT" : "HTTP",
                 r.host, r.port, r.literal ? " literal" : "");
    if (origin)
        *origin = r.origin ? strndup(r.origin, r.origin_len) : NULL;
    if (rc > 0)
        brig_egress_request_clear(&r);
    return out;
}

static void test_requests(void)
{
    CHECK_STR(parse("CONNECT NPM.Registry.Example:443 HTTP/1.1\r\nHost: x\r\n\r\n", NULL),
              "CONNECT npm.registry.example 443", "request: CONNECT, lower-cased");
    CHECK_STR(parse("CONNECT [::1]:22 HTTP/1.1\r\n\r\n", NULL), "CONNECT ::1 22 literal",
              "request: CONNECT to an IPv6 literal");
    CHECK_STR(parse("CONNECT 2130706433:22 HTTP/1.1\r\n\r\n", NULL),
              "CONNECT 2130706433 22 literal", "request: a numeric host is a literal");
    CHECK_STR(parse("CONNECT deb.mirror.example.:443 HTTP/1.1\r\n\r\n", NULL),
              "CONNECT deb.mirror.example 443", "request: a trailing dot matched without");
    CHECK_STR(parse("CONNECT deb.mirror.example:443 HTTP/1.1\r\n", NULL), "incomplete",
              "request: head not ended yet");
    char *origin = NULL;
    CHECK_STR(parse("GET http://deb.mirror.example/debian/x?y=1 HTTP/1.1\r\nHost: evil\r\n"
                    "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
                    &origin),
              "HTTP deb.mirror.example 80", "request: absolute-URI GET");
    CHECK_STR(origin,
              "GET /debian/x?y=1 HTTP/1.1\r\nAccept: */*\r\nHost: deb.mirror.example\r\n"
              "Connection: close\r\n\r\n",
              "request: rewritten for the origin, its own Host, no hop headers");
    free(origin);
    CHECK_STR(parse("GET http://h.example:8080 HTTP/1.0\r\n\r\n", &origin), "HTTP h.example 8080",
              "request: a port and no path");
    CHECK(origin && strncmp(origin, "GET / HTTP/1.0\r\n", 16) == 0
              && strstr(origin, "Host: h.example:8080"),
          "request: no path is /");
    free(origin);

    static const struct {
        const char *head;
        const char *want;
    } bad[] = {
        { "GARBAGE\r\n\r\n", "refused 400" },
        { "GET /relative HTTP/1.1\r\n\r\n", "refused 400" },
        { "GET https://x/ HTTP/1.1\r\n\r\n", "refused 400" },
        { "GET http://user@x/ HTTP/1.1\r\n\r\n", "refused 400" },
        { "CONNECT x HTTP/1.1\r\n\r\n", "refused 400" },
        { "CONNECT x:0 HTTP/1.1\r\n\r\n", "refused 400" },
        { "CONNECT x:443/p HTTP/1.1\r\n\r\n", "refused 400" },
        { "CONNECT x:443 HTTP/2.0\r\n\r\n", "refused 400" },
        { "CONNECT x:443 HTTP/1.1\r\nno colon here\r\n\r\n", "refused 400" },
        { "CONNECT x y:443 HTTP/1.1\r\n\r\n", "refused 400" },
        { "CONNECT b@d:443 HTTP/1.1\r\n\r\n", "refused 400" },
        { "POST http://x/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "refused 405" },
        { "GET http://x/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "refused 400" },
        { "GET http://x/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "refused 400" },
        { "GET http://x/a\x01b HTTP/1.1\r\n\r\n", "refused 400" },
        { "GET http://x/a\nHost:evil\t HTTP/1.1\r\n\r\n", "refused 400" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char name[64];
        snprintf(name, sizeof name, "request: bad head %zu refused", i);
        CHECK_STR(parse(bad[i].head, NULL), bad[i].want, name);
    }
    char *big = malloc(BRIG_EGRESS_HEAD_MAX + 16);
    memset(big, 'a', BRIG_EGRESS_HEAD_MAX + 15);
    big[BRIG_EGRESS_HEAD_MAX + 15] = '\0';
    CHECK_STR(parse(big, NULL), "refused 431", "request: a head past the limit");
    free(big);
}

/* A head read into a full buffer has no NUL after it: the parser must
 * stay inside its bytes (fuzz_egress_http found strstr reading on). The
 * head ends a page whose next one can't be read. */
static void test_unterminated(void)
{
    static const char head[] = "GET http://deb.example/x HTTP/1.1\r\nAccept: */*\r\n\r\n";
    size_t page = (size_t) sysconf(_SC_PAGESIZE), n = sizeof head - 1;
    char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED && mprotect(map + page, page, PROT_NONE) == 0,
          "unterminated: a guard page");
    if (map == MAP_FAILED)
        return;
    char *buf = memcpy(map + page - n, head, n);
    struct brig_egress_request r;
    int status = 0;
    const char *reason = NULL;
    CHECK(brig_egress_request_parse(buf, n, &r, &status, &reason) == 1
              && strcmp(r.host, "deb.example") == 0 && r.head_len == n,
          "unterminated: a head up to the buffer's end parses");
    brig_egress_request_clear(&r);
    munmap(map, 2 * page);
}

static bool public4(const char *a)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    inet_pton(AF_INET, a, &sin.sin_addr);
    struct brig_egress_net local = { .family = AF_INET, .prefix = 24 };
    inet_pton(AF_INET, "192.0.2.0", local.addr);
    return brig_egress_addr_public((struct sockaddr *) &sin, &local, 1);
}

static bool public6(const char *a)
{
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
    inet_pton(AF_INET6, a, &sin6.sin6_addr);
    return brig_egress_addr_public((struct sockaddr *) &sin6, NULL, 0);
}

static void test_addresses(void)
{
    static const char *const blocked4[] = { "127.0.0.1",
                                            "10.1.2.3",
                                            "172.16.0.1",
                                            "192.168.1.1",
                                            "169.254.169.254",
                                            "100.64.0.1",
                                            "0.0.0.0",
                                            "224.0.0.1",
                                            "255.255.255.255",
                                            "192.0.2.1",
                                            /* on the host's own network */ NULL };
    for (size_t i = 0; blocked4[i]; i++)
        CHECK(!public4(blocked4[i]), blocked4[i]);
    CHECK(public4("151.101.2.132") && public4("203.0.113.80"),
          "public: an internet address, and a documentation one off the host's networks");
    static const char *const blocked6[] = { "::1",
                                            "::",
                                            "fd00::2",
                                            "fe80::1",
                                            "ff02::1",
                                            "::ffff:127.0.0.1",
                                            "64:ff9b::a9fe:a9fe",
                                            "::7f00:1",
                                            "::ffff:0:a9fe:a9fe",
                                            "64:ff9b:1::a9fe:a9fe",
                                            "2002:a9fe:a9fe::1",
                                            "2001:0:4136:e378::1",
                                            "100::1",
                                            NULL };
    for (size_t i = 0; blocked6[i]; i++)
        CHECK(!public6(blocked6[i]), blocked6[i]);
    CHECK(public6("2a04:4e42::644") && public6("::ffff:151.101.2.132")
              && public6("2002:9765:284::1"),
          "public: IPv6, and public IPv4 carried in it");
}

int main(void)
{
    test_conf();
    test_download_conf();
    test_sources();
    test_requests();
    test_unterminated();
    test_addresses();
    return unit_done();
}
