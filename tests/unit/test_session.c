/* The pure parts of sessions: the C escapes of `session input`, which
 * names may name a session, and the bounded ring of unread output with
 * its count of what it dropped. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/session.h"
#include "sandbox/session_int.h"
#include "unit.h"

/* "ok:" and the bytes as hex, or the error's message; the error released. */
static const char *unescaped(const char *text)
{
    static char buf[512];
    char *out = NULL;
    size_t len = 0;
    brig_error_t err = NULL;
    if (brig_session_unescape(text, &out, &len, &err) < 0) {
        snprintf(buf, sizeof buf, "%s%s", err->errnum == BRIG_E_INPUT ? "" : "(not input) ",
                 err->msg);
        brig_error_release(&err);
        return buf;
    }
    size_t n = (size_t) snprintf(buf, sizeof buf, "ok:");
    for (size_t i = 0; i < len && n + 3 < sizeof buf; i++)
        n += (size_t) snprintf(buf + n, sizeof buf - n, "%02x", (unsigned char) out[i]);
    free(out);
    return buf;
}

static void test_unescape(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        { "", "ok:" },
        { "ab", "ok:6162" },
        { "x=5\\n", "ok:783d350a" },
        { "\\t\\r\\\\\\e\\a\\b", "ok:090d5c1b0708" },
        { "\\x03", "ok:03" },
        { "\\x3", "ok:03" },
        { "\\x4g", "ok:0467" },
        { "\\xFf", "ok:ff" },
        { "\\0", "ok:00" },
        { "a\\0b", "ok:610062" },
        { "\\012", "ok:0a" },
        { "\\1234", "ok:5334" },
        { "\\'\\\"", "ok:2722" },
        { "\\q", "unknown escape `\\q` at character 1" },
        { "ab\\q", "unknown escape `\\q` at character 3" },
        { "\\xg", "`\\x` without hex digits at character 1" },
        { "abc\\", "a lone `\\` at the end" },
        { "\\400", "octal escape over \\377 at character 1" },
        { "\\\x01", "unknown escape at character 1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[96];
        snprintf(name, sizeof name, "unescape `%s`", cases[i].text);
        CHECK_STR(unescaped(cases[i].text), cases[i].want, name);
    }
}

static void test_names(void)
{
    static const struct {
        const char *name;
        int ok;
    } cases[] = {
        { "sh1", 1 }, { "py.main-2_x", 1 }, { "a.", 1 }, { "-x", 1 },   { "", 0 },
        { ".x", 0 },  { ".", 0 },           { "..", 0 }, { "../x", 0 }, { "a/b", 0 },
        { "a b", 0 }, { "a\tb", 0 },        { "é", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        brig_error_t err = NULL;
        char label[64];
        int r = brig_session_name_validate(cases[i].name, &err);
        snprintf(label, sizeof label, "name `%s` is %s", cases[i].name,
                 cases[i].ok ? "valid" : "refused");
        CHECK((r == 0) == cases[i].ok && (r == 0 || err->errnum == BRIG_E_INPUT), label);
        brig_error_release(&err);
    }
    char longest[66];
    memset(longest, 'a', sizeof longest);
    longest[64] = '\0';
    brig_error_t err = NULL;
    CHECK(brig_session_name_validate(longest, &err) == 0, "name: 64 characters are valid");
    longest[64] = 'a';
    longest[65] = '\0';
    CHECK(brig_session_name_validate(longest, &err) < 0, "name: 65 characters are refused");
    CHECK(err && strstr(err->msg, "invalid session name"), "name: the error says what");
    brig_error_release(&err);
}

/* The unread bytes of b as a string, taken (b starts afresh). */
static char *take(struct brig_session_buf *b, uint64_t *dropped)
{
    char *out = NULL;
    size_t len;
    brig_error_t err = NULL;
    if (brig_session_buf_take(b, &out, &len, dropped, &err) < 0)
        brig_error_release(&err);
    return out;
}

static void test_buffer_bounds(void)
{
    struct brig_session_buf b;
    brig_error_t err = NULL;
    uint64_t dropped = 99;
    CHECK(brig_session_buf_init(&b, 8, &err) == 0, "buffer: made");
    brig_session_buf_append(&b, "abc", 3);
    brig_session_buf_append(&b, "def", 3);
    char *got = take(&b, &dropped);
    CHECK_STR(got, "abcdef", "buffer: what fits is kept in order");
    CHECK(dropped == 0, "buffer: nothing dropped");
    free(got);
    brig_session_buf_append(&b, "123456", 6);
    brig_session_buf_append(&b, "7890", 4); /* wraps, drops "12" */
    CHECK(b.len == 8 && b.dropped == 2, "buffer: overflow drops the oldest and counts them");
    got = take(&b, &dropped);
    CHECK_STR(got, "34567890", "buffer: the tail is intact across the wrap");
    CHECK(dropped == 2, "buffer: the count comes with the read");
    free(got);
    got = take(&b, &dropped);
    CHECK_STR(got, "", "buffer: a read takes everything");
    CHECK(dropped == 0, "buffer: the count is reset by the read");
    free(got);
    brig_session_buf_append(&b, "xy", 2);
    brig_session_buf_append(&b, "ABCDEFGHIJKL", 12); /* longer than the ring */
    got = take(&b, &dropped);
    CHECK_STR(got, "EFGHIJKL", "buffer: an append past the bound keeps its last bytes");
    CHECK(dropped == 6, "buffer: ... and counts the rest, old and new");
    free(got);
    brig_session_buf_free(&b);
}

static void test_buffer_linear(void)
{
    struct brig_session_buf b;
    brig_error_t err = NULL;
    CHECK(brig_session_buf_init(&b, 5, &err) == 0, "linear: made");
    brig_session_buf_append(&b, "abcde", 5);
    brig_session_buf_append(&b, "xy", 2); /* drops "ab", lands at the start */
    CHECK(b.head == 2 && b.len == 5, "linear: the ring has wrapped");
    const char *p = brig_session_buf_linear(&b);
    CHECK(b.len == 5 && memcmp(p, "cdexy", 5) == 0, "linear: one piece, in order");
    brig_session_buf_append(&b, "!", 1);
    uint64_t dropped;
    char *got = take(&b, &dropped);
    CHECK_STR(got, "dexy!", "linear: appends go on after a rotation");
    CHECK(dropped == 3, "linear: with the count of all it dropped");
    free(got);
    brig_session_buf_free(&b);
}

int main(void)
{
    test_unescape();
    test_names();
    test_buffer_bounds();
    test_buffer_linear();
    return unit_done();
}
