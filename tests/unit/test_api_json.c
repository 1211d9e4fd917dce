/* brig-api's JSON: bodies checked field by field, output bytes made into
 * valid JSON strings, and the durations the API and the CLI take. */
#define _GNU_SOURCE
#include <stdint.h>
#include <yajl/yajl_gen.h>

#include "base/utils.h"
#include "src/api/api.h"
#include "unit.h"

/* The JSON text of api_gen_bytes(data). */
static char *gen_bytes(const char *data, size_t len)
{
    yajl_gen g = api_gen();
    api_gen_bytes(g, data, len);
    const unsigned char *buf;
    size_t n;
    char *out = NULL;
    if (yajl_gen_get_buf(g, &buf, &n) == yajl_gen_status_ok)
        out = strndup((const char *) buf, n);
    yajl_gen_free(g);
    return out;
}

static void test_bytes(void)
{
    char *s = gen_bytes("hi\n", 3);
    CHECK_STR(s, "\"hi\\n\"", "plain text with an escape");
    free(s);
    s = gen_bytes("\xc3\xa9", 2);
    CHECK_STR(s, "\"\xc3\xa9\"", "valid UTF-8 kept as it is");
    free(s);
    s = gen_bytes("a\xff"
                  "b",
                  3);
    CHECK_STR(s,
              "\"a\xc3\xbf"
              "b\"",
              "an invalid byte becomes its Latin-1 character");
    free(s);
    s = gen_bytes("\xc0\xaf", 2);
    CHECK_STR(s, "\"\xc3\x80\xc2\xaf\"", "an overlong `/` is two Latin-1 characters, not `/`");
    free(s);
    s = gen_bytes("\xed\xa0\x80", 3);
    CHECK_STR(s, "\"\xc3\xad\xc2\xa0\xc2\x80\"", "a surrogate is not passed through");
    free(s);
    s = gen_bytes("\xf0\x9f\x98\x80", 4);
    CHECK_STR(s, "\"\xf0\x9f\x98\x80\"", "a 4-byte character kept");
    free(s);
    s = gen_bytes("x\0y", 3);
    CHECK_STR(s, "\"x\\u0000y\"", "NUL escaped, the rest kept");
    free(s);
}

static void test_tail(void)
{
    CHECK(api_utf8_incomplete_tail("abc", 3) == 0, "ASCII: nothing held back");
    CHECK(api_utf8_incomplete_tail("a\xc3", 2) == 1, "the first byte of a 2-byte character");
    CHECK(api_utf8_incomplete_tail("a\xf0\x9f\x98", 4) == 3, "3 of a 4-byte character");
    CHECK(api_utf8_incomplete_tail("a\xc3\xa9", 3) == 0, "a complete character");
    CHECK(api_utf8_incomplete_tail("\x80\x80\x80\x80", 4) == 0, "stray continuation bytes");
}

static struct api_request req(const char *body)
{
    struct api_request r = { .body = (char *) body, .body_len = body ? strlen(body) : 0 };
    return r;
}

static void test_body(void)
{
    static const char *const allowed[] = { "cmd", "env", "timeout", "cwd", NULL };
    yajl_val v = NULL;
    brig_error_t err = NULL;
    struct api_request r = req(
        "{\"cmd\": [\"a\", \"b\"], \"env\": {\"X\": \"1\"}, \"timeout\": 1.5}");
    CHECK(api_body_object(&r, allowed, &v, &err) == 0, "a body of known fields");
    char **argv = NULL, **env = NULL;
    int64_t ms = 0;
    const char *cwd = "unset";
    CHECK(api_field_strv(v, "cmd", &argv, &err) == 1 && argv && strcmp(argv[1], "b") == 0
              && argv[2] == NULL,
          "cmd as a NULL-terminated list");
    CHECK(api_field_env(v, "env", &env, &err) == 1 && env && strcmp(env[0], "X=1") == 0,
          "env as NAME=VALUE");
    CHECK(api_field_seconds_ms(v, "timeout", &ms, &err) == 1 && ms == 1500, "1.5 s");
    CHECK(api_field_string(v, "cwd", &cwd, &err) == 0 && strcmp(cwd, "unset") == 0,
          "an absent field is left alone");
    free(argv);
    api_strv_free(env);
    yajl_tree_free(v);

    r = req("{\"cmd\": \"ls\"}");
    CHECK(api_body_object(&r, allowed, &v, &err) == 0 && api_field_strv(v, "cmd", &argv, &err) < 0
              && err->errnum == BRIG_E_INPUT && strstr(err->msg, "`cmd`"),
          "a string where an array is wanted is bad input naming the field");
    brig_error_release(&err);
    yajl_tree_free(v);

    r = req("{\"cmd\": [], \"rm\": 1}");
    CHECK(api_body_object(&r, allowed, &v, &err) < 0 && strstr(err->msg, "unknown field `rm`"),
          "an unknown field is refused");
    brig_error_release(&err);
    r = req("[1]");
    CHECK(api_body_object(&r, allowed, &v, &err) < 0 && strstr(err->msg, "not a JSON object"),
          "an array is not a body");
    brig_error_release(&err);
    r = req("{\"cmd\": [");
    CHECK(api_body_object(&r, allowed, &v, &err) < 0 && err->errnum == BRIG_E_INPUT,
          "broken JSON is bad input");
    brig_error_release(&err);
    r = req(NULL);
    CHECK(api_body_object(&r, allowed, &v, &err) == 0 && v && v->u.object.len == 0,
          "no body is an empty object");
    yajl_tree_free(v);
    r = req("{\"env\": {\"A=B\": \"x\"}, \"timeout\": -1}");
    CHECK(api_body_object(&r, allowed, &v, &err) == 0 && api_field_env(v, "env", &env, &err) < 0,
          "a name with `=` is refused");
    brig_error_release(&err);
    CHECK(api_field_seconds_ms(v, "timeout", &ms, &err) < 0, "a negative timeout is refused");
    brig_error_release(&err);
    yajl_tree_free(v);
}

static void test_durations(void)
{
    int ms = 0;
    CHECK(brig_parse_duration_ms("500ms", &ms) == 0 && ms == 500, "500ms");
    CHECK(brig_parse_duration_ms("5", &ms) == 0 && ms == 5000, "bare seconds");
    CHECK(brig_parse_duration_ms("2m", &ms) == 0 && ms == 120000, "minutes");
    CHECK(brig_parse_duration_ms("1.5h", &ms) == 0 && ms == 5400000, "hours");
    CHECK(brig_parse_duration_ms("0", &ms) < 0, "zero is no duration");
    CHECK(brig_parse_duration_ms("-5s", &ms) < 0, "negative");
    CHECK(brig_parse_duration_ms("5x", &ms) < 0, "unknown unit");
    CHECK(brig_parse_duration_ms("31d", &ms) < 0 && brig_parse_duration_ms("721h", &ms) < 0,
          "past 30 days");
    /* Past what an int holds (24.8 days): refused, not cast (UBSan's
     * float-cast-overflow: fuzz_api_request found "2222220", seconds, read
     * as a duration). */
    CHECK(brig_parse_duration_ms("2222220", &ms) < 0 && brig_parse_duration_ms("700h", &ms) < 0
              && brig_parse_duration_ms("577h", &ms) < 0,
          "past 24 days");
    CHECK(brig_parse_duration_ms("576h", &ms) == 0 && ms == 2073600000, "24 days");
    CHECK(brig_parse_duration_ms("nan", &ms) < 0 && brig_parse_duration_ms("", &ms) < 0,
          "not a number");
}

int main(void)
{
    test_bytes();
    test_tail();
    test_body();
    test_durations();
    return unit_done();
}
