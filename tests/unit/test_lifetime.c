/* sandbox/lifetime.c's pure parts: the deadline a record and its last
 * activity make, the record's text and back, and spans for people. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/lifetime.h"
#include "unit.h"

static void test_deadline(void)
{
    struct brig_sandbox_lifetime l = { .created_ms = 1000 };
    const char *why = "unset";
    CHECK(brig_sandbox_lifetime_deadline(&l, 0, &why) == INT64_MAX, "deadline: no limits, never");
    CHECK(why == NULL, "deadline: no limits, no reason");
    l.ttl_ms = 5000;
    CHECK(brig_sandbox_lifetime_deadline(&l, 3000, &why) == 6000, "deadline: ttl from created");
    CHECK_STR(why, "ttl", "deadline: ttl's reason");
    l.ttl_ms = 0;
    l.idle_ms = 2000;
    CHECK(brig_sandbox_lifetime_deadline(&l, 4000, &why) == 6000, "deadline: idle from activity");
    CHECK_STR(why, "idle", "deadline: idle's reason");
    CHECK(brig_sandbox_lifetime_deadline(&l, 0, &why) == 3000,
          "deadline: idle from created when nothing happened");
    CHECK(brig_sandbox_lifetime_deadline(&l, 500, NULL) == 3000,
          "deadline: activity before created counts as created (why may be NULL)");
    l.ttl_ms = 10000;
    CHECK(brig_sandbox_lifetime_deadline(&l, 4000, &why) == 6000, "deadline: idle comes first");
    CHECK_STR(why, "idle", "deadline: the first one's reason");
    CHECK(brig_sandbox_lifetime_deadline(&l, 10000, &why) == 11000, "deadline: ttl comes first");
    CHECK_STR(why, "ttl", "deadline: ttl wins when sooner");
    l = (struct brig_sandbox_lifetime){ .created_ms = INT64_MAX - 10, .ttl_ms = 100 };
    CHECK(brig_sandbox_lifetime_deadline(&l, 0, &why) == INT64_MAX,
          "deadline: held at INT64_MAX, no overflow");
    l = (struct brig_sandbox_lifetime){ .created_ms = 1000, .exec_timeout_ms = 60000 };
    CHECK(brig_sandbox_lifetime_deadline(&l, 0, &why) == INT64_MAX,
          "deadline: an exec timeout alone removes nothing");
}

static void test_round_trip(void)
{
    struct brig_sandbox_lifetime in = {
        .created_ms = 1764301365123,
        .ttl_ms = 300000,
        .idle_ms = 60000,
        .exec_timeout_ms = 120000,
        .root = "/run/brig",
    };
    char *text = NULL;
    brig_error_t err = NULL;
    CHECK(brig_sandbox_lifetime_format(&in, &text, &err) == 0, "format: ok");
    CHECK_STR(
        text,
        "created=1764301365123\nttl=300000\nidle=60000\nexec_timeout=120000\nroot=/run/brig\n",
        "format: the record's lines");
    struct brig_sandbox_lifetime out;
    CHECK(brig_sandbox_lifetime_parse(text, &out, &err) == 0, "parse: ok");
    CHECK(out.created_ms == in.created_ms && out.ttl_ms == in.ttl_ms && out.idle_ms == in.idle_ms
              && out.exec_timeout_ms == in.exec_timeout_ms,
          "parse: every number back");
    CHECK_STR(out.root, in.root, "parse: the root back");
    brig_sandbox_lifetime_clear(&out);
    CHECK(out.root == NULL && out.ttl_ms == 0, "clear: nothing left");
    free(text);
    in.root = NULL;
    CHECK(brig_sandbox_lifetime_format(&in, &text, &err) == 0 && strstr(text, "root=") == NULL,
          "format: no root, no root line");
    CHECK(brig_sandbox_lifetime_parse(text, &out, &err) == 0 && out.root == NULL,
          "parse: no root reads NULL");
    free(text);
    in.root = "/run/x\nttl=1";
    CHECK(brig_sandbox_lifetime_format(&in, &text, &err) < 0 && text == NULL,
          "format: a root with a newline refused");
    brig_error_release(&err);
}

/* The parser's error for `text`, or "ok". */
static char *parse_outcome(const char *text)
{
    struct brig_sandbox_lifetime l;
    brig_error_t err = NULL;
    char *out;
    if (brig_sandbox_lifetime_parse(text, &l, &err) == 0) {
        brig_sandbox_lifetime_clear(&l);
        return strdup("ok");
    }
    if (asprintf(&out, "ERROR: %s", err->msg) < 0)
        out = NULL;
    brig_error_release(&err);
    return out;
}

static void test_parse(void)
{
    struct brig_sandbox_lifetime l;
    brig_error_t err = NULL;
    CHECK(brig_sandbox_lifetime_parse("created=5\n\nfuture=yes\nttl=7\n", &l, &err) == 0
              && l.created_ms == 5 && l.ttl_ms == 7 && l.idle_ms == 0,
          "parse: blank lines and unknown keys skipped, missing limits 0");
    brig_sandbox_lifetime_clear(&l);
    unit_check_error("parse: no created", parse_outcome("ttl=5\n"), "no created= line");
    unit_check_error("parse: not key=value", parse_outcome("created=1\nttl\n"),
                     "line 2: not key=value");
    unit_check_error("parse: negative", parse_outcome("created=1\nidle=-5\n"),
                     "line 2: idle `-5` is not a count of ms");
    unit_check_error("parse: garbage", parse_outcome("created=1x\n"),
                     "line 1: created `1x` is not a count of ms");
    unit_check_error("parse: empty value", parse_outcome("created=\n"), "line 1: created ``");
    unit_check_error("parse: overflow", parse_outcome("created=99999999999999999999\n"),
                     "not a count of ms");
}

static void test_span(void)
{
    static const struct {
        int64_t ms;
        const char *want;
    } cases[] = {
        { -5000, "0s" },     { 0, "0s" },        { 999, "0s" },
        { 45000, "45s" },    { 119999, "119s" }, { 120000, "2m" },
        { 7199999, "119m" }, { 7200000, "2h" },  { 172800000, "2d" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[16], name[64];
        brig_sandbox_span(cases[i].ms, buf, sizeof buf);
        snprintf(name, sizeof name, "span: %lld ms", (long long) cases[i].ms);
        CHECK_STR(buf, cases[i].want, name);
    }
}

int main(void)
{
    test_deadline();
    test_round_trip();
    test_parse();
    test_span();
    return unit_done();
}
