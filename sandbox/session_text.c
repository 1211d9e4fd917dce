#define _GNU_SOURCE
/* The pure text of sessions: which names may name one (a name becomes a
 * dir under the sandbox's, so nothing but one plain component), and the
 * C escapes that `session input` reads its CHARS with. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/session_int.h"

/* Whether a name can be shown in a message as it is. */
static bool printable(const char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            return false;
    return true;
}

int brig_session_name_validate(const char *name, brig_error_t *err)
{
    static const char rule[] = "[A-Za-z0-9_.-], 1 to 64 of them, not starting with `.`";
    size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    if (name[n] == '\0' && n > 0 && n <= BRIG_SESSION_NAME_MAX && name[0] != '.')
        return 0;
    /* A name of the caller's could hold anything: shown only when it
     * holds nothing a terminal would act on, and not at any length. */
    if (!printable(name))
        return brig_error_kind(err, BRIG_E_INPUT, "invalid session name (%s)", rule);
    size_t len = strlen(name);
    return brig_error_kind(err, BRIG_E_INPUT, "invalid session name `%.*s%s` (%s)", 70, name,
                           len > 70 ? "..." : "", rule);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char) tolower((unsigned char) c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The byte a one-letter escape stands for, or -1. */
static int simple_escape(char c)
{
    static const char from[] = "ntr\\eabfv'\"?";
    static const char to[] = "\n\t\r\\\033\a\b\f\v'\"?";
    const char *p = c ? strchr(from, c) : NULL;
    return p ? (unsigned char) to[p - from] : -1;
}

/* One escape at text[*i] (just past its `\`): its byte in *c, *i past it. */
static int one_escape(const char *text, size_t *i, char *c, brig_error_t *err)
{
    size_t at = *i; /* the escape's position, 1-based from its `\` */
    int v = simple_escape(text[*i]);
    if (v >= 0) {
        *c = (char) v;
        (*i)++;
        return 0;
    }
    if (text[*i] == 'x') {
        int hi = hex_value(text[*i + 1]);
        if (hi < 0)
            return brig_error_kind(err, BRIG_E_INPUT, "`\\x` without hex digits at character %zu",
                                   at);
        int lo = hex_value(text[*i + 2]);
        *c = (char) (lo < 0 ? hi : hi * 16 + lo);
        *i += lo < 0 ? 2 : 3;
        return 0;
    }
    if (text[*i] >= '0' && text[*i] <= '7') {
        unsigned o = 0;
        for (int k = 0; k < 3 && text[*i] >= '0' && text[*i] <= '7'; k++)
            o = o * 8 + (unsigned) (text[(*i)++] - '0');
        if (o > 0377)
            return brig_error_kind(err, BRIG_E_INPUT, "octal escape over \\377 at character %zu",
                                   at);
        *c = (char) o;
        return 0;
    }
    if (text[*i] == '\0')
        return brig_error_kind(err, BRIG_E_INPUT, "a lone `\\` at the end");
    if (isprint((unsigned char) text[*i]))
        return brig_error_kind(err, BRIG_E_INPUT, "unknown escape `\\%c` at character %zu",
                               text[*i], at);
    return brig_error_kind(err, BRIG_E_INPUT, "unknown escape at character %zu", at);
}

int brig_session_unescape(const char *text, char **out, size_t *len, brig_error_t *err)
{
    size_t n = 0;
    char *buf = malloc(strlen(text) + 1);
    *out = NULL;
    *len = 0;
    if (buf == NULL)
        return brig_error_set(err, ENOMEM, "unescape");
    for (size_t i = 0; text[i];) {
        if (text[i] != '\\') {
            buf[n++] = text[i++];
            continue;
        }
        i++;
        if (one_escape(text, &i, &buf[n++], err) < 0) {
            free(buf);
            return -1;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
