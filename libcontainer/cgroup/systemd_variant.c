#define _GNU_SOURCE
/* GVariant's text format, the part unit properties are written in
 * (systemd.h): a recursive descent over the text, each value parsed with
 * the type its context expects (an array's first element types the rest,
 * "@SIG" types what follows). */
#include "cgroup/systemd.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

struct parser {
    const char *p;
    const char *text;
    brig_error_t *err;
    int depth;
};

static int fail(struct parser *ps, const char *what)
{
    return brig_error_kind(ps->err, BRIG_E_INPUT, "GVariant text `%s`: %s at offset %zu", ps->text,
                           what, (size_t) (ps->p - ps->text));
}

static void skip_space(struct parser *ps)
{
    while (isspace((unsigned char) *ps->p))
        ps->p++;
}

static bool take_word(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(ps->p, word, n) != 0 || isalnum((unsigned char) ps->p[n]) || ps->p[n] == '_')
        return false;
    ps->p += n;
    skip_space(ps);
    return true;
}

void brig_variant_free(struct brig_variant *v)
{
    for (size_t i = 0; i < v->n; i++)
        brig_variant_free(&v->items[i]);
    free(v->items);
    free(v->sig);
    free(v->s);
    *v = (struct brig_variant){ 0 };
}

/* The length of the one complete type at the start of sig, 0 if none. */
static size_t type_len(const char *sig)
{
    if (*sig == '\0')
        return 0;
    if (strchr("bynqiuxtdsog", *sig))
        return 1;
    if (*sig == 'a') {
        size_t n = type_len(sig + 1);
        return n ? n + 1 : 0;
    }
    if (*sig == '(') {
        size_t at = 1;
        while (sig[at] != ')') {
            size_t n = type_len(sig + at);
            if (n == 0)
                return 0;
            at += n;
        }
        return at > 1 ? at + 1 : 0;
    }
    return 0;
}

static int parse_value(struct parser *ps, const char *hint, struct brig_variant *out);

static const struct {
    const char *word;
    char type;
} number_words[] = {
    { "byte", 'y' },   { "int16", 'n' }, { "uint16", 'q' }, { "int32", 'i' },
    { "uint32", 'u' }, { "int64", 'x' }, { "uint64", 't' }, { "double", 'd' },
};

static int number_in_range(char t, bool negative, unsigned long long mag)
{
    unsigned long long max;
    switch (t) {
    case 'y':
        max = UINT8_MAX;
        break;
    case 'q':
        max = UINT16_MAX;
        break;
    case 'u':
        max = UINT32_MAX;
        break;
    case 't':
        max = UINT64_MAX;
        break;
    case 'n':
        max = negative ? 32768ULL : INT16_MAX;
        break;
    case 'i':
        max = negative ? 2147483648ULL : INT32_MAX;
        break;
    default: /* x */
        max = negative ? 9223372036854775808ULL : INT64_MAX;
        break;
    }
    if (negative && strchr("yqut", t))
        return mag == 0;
    return mag <= max;
}

static int parse_number(struct parser *ps, char t, struct brig_variant *out)
{
    char *end;
    if ((out->sig = strndup(&t, 1)) == NULL)
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    errno = 0;
    if (t == 'd') {
        out->d = strtod(ps->p, &end);
    } else {
        bool negative = *ps->p == '-';
        const char *digits = ps->p + (negative || *ps->p == '+');
        if (!isdigit((unsigned char) *digits))
            return fail(ps, "a number expected");
        unsigned long long mag = strtoull(digits, &end, 0);
        if (errno == ERANGE || !number_in_range(t, negative, mag))
            return fail(ps, "number out of range for its type");
        out->u = negative ? (uint64_t) 0 - (uint64_t) mag : (uint64_t) mag;
    }
    if (end == ps->p || errno == ERANGE || isalnum((unsigned char) *end) || *end == '_')
        return fail(ps, "not a number");
    ps->p = end;
    skip_space(ps);
    return 0;
}

/* An untyped number: the hint's type, else int32, or double with a point. */
static int parse_bare_number(struct parser *ps, const char *hint, struct brig_variant *out)
{
    if (hint && strchr("ynqiuxtd", *hint) && hint[1] == '\0')
        return parse_number(ps, *hint, out);
    if (hint)
        return fail(ps, "a number where the type wants something else");
    size_t span = strspn(ps->p, "+-0123456789xXabcdefABCDEF");
    bool real = ps->p[span] == '.'
                || ((ps->p[span] == 'e' || ps->p[span] == 'E') && strncmp(ps->p, "0x", 2) != 0);
    return parse_number(ps, real ? 'd' : 'i', out);
}

static int parse_string(struct parser *ps, struct brig_variant *out, bool bytes)
{
    char quote = *ps->p++;
    size_t cap = strlen(ps->p) + 1, n = 0;
    cleanup_free char *s = malloc(cap);
    if (s == NULL)
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    for (; *ps->p != quote; ps->p++) {
        char c = *ps->p;
        if (c == '\0')
            return fail(ps, "an unterminated string");
        if (c == '\\') {
            c = *++ps->p;
            switch (c) {
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            case 'r':
                c = '\r';
                break;
            case '\\':
            case '\'':
            case '"':
                break;
            default:
                return fail(ps, "an escape it does not know");
            }
        }
        s[n++] = c;
    }
    ps->p++;
    s[n] = '\0';
    skip_space(ps);
    if (!bytes) {
        out->s = brig_steal_ptr(s);
        return (out->sig = strdup("s")) ? 0 : brig_error_set(ps->err, ENOMEM, "GVariant text");
    }
    /* b"..." is an ay with one element per byte */
    if ((out->sig = strdup("ay")) == NULL
        || (n && (out->items = calloc(n, sizeof *out->items)) == NULL))
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    for (; out->n < n; out->n++) {
        out->items[out->n].u = (unsigned char) s[out->n];
        if ((out->items[out->n].sig = strdup("y")) == NULL)
            return brig_error_set(ps->err, ENOMEM, "GVariant text");
    }
    return 0;
}

/* Appends one more item to v (an array or a tuple being read). */
static struct brig_variant *push(struct parser *ps, struct brig_variant *v)
{
    struct brig_variant *items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (items == NULL) {
        brig_error_set(ps->err, ENOMEM, "GVariant text");
        return NULL;
    }
    v->items = items;
    items[v->n] = (struct brig_variant){ 0 };
    return &items[v->n++];
}

static int parse_array(struct parser *ps, const char *hint, struct brig_variant *out)
{
    if (hint && *hint != 'a')
        return fail(ps, "an array where the type wants something else");
    cleanup_free char *elem = hint ? strdup(hint + 1) : NULL;
    if (hint && elem == NULL)
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    ps->p++;
    skip_space(ps);
    while (*ps->p != ']') {
        if (out->n && *ps->p++ != ',')
            return fail(ps, "`,` or `]` expected");
        skip_space(ps);
        struct brig_variant *item = push(ps, out);
        if (item == NULL || parse_value(ps, elem, item) < 0)
            return -1;
        if (elem == NULL && (elem = strdup(item->sig)) == NULL)
            return brig_error_set(ps->err, ENOMEM, "GVariant text");
        if (strcmp(elem, item->sig) != 0)
            return fail(ps, "array elements of different types");
    }
    ps->p++;
    skip_space(ps);
    if (elem == NULL)
        return fail(ps, "an empty array needs its type (`@as []`)");
    if (asprintf(&out->sig, "a%s", elem) < 0) {
        out->sig = NULL;
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    }
    return 0;
}

static int parse_tuple(struct parser *ps, const char *hint, struct brig_variant *out)
{
    if (hint && *hint != '(')
        return fail(ps, "a tuple where the type wants something else");
    const char *field = hint ? hint + 1 : NULL;
    size_t cap = 3;
    ps->p++;
    skip_space(ps);
    while (*ps->p != ')') {
        if (out->n && *ps->p++ != ',')
            return fail(ps, "`,` or `)` expected");
        skip_space(ps);
        if (*ps->p == ')' && out->n)
            break; /* a trailing comma */
        size_t flen = field ? type_len(field) : 0;
        cleanup_free char *fhint = flen ? strndup(field, flen) : NULL;
        if (field && flen == 0)
            return fail(ps, "more fields than the tuple's type has");
        struct brig_variant *item = push(ps, out);
        if (item == NULL || parse_value(ps, fhint, item) < 0)
            return -1;
        if (field)
            field += flen;
        cap += strlen(item->sig);
    }
    ps->p++;
    skip_space(ps);
    if (out->n == 0 || (field && *field != ')'))
        return fail(ps, "a tuple with too few fields");
    if ((out->sig = malloc(cap)) == NULL)
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    strcpy(out->sig, "(");
    for (size_t i = 0; i < out->n; i++)
        strcat(out->sig, out->items[i].sig);
    strcat(out->sig, ")");
    return 0;
}

/* "@SIG value": the value read with SIG as its type. */
static int parse_annotated(struct parser *ps, const char *hint, struct brig_variant *out)
{
    ps->p++;
    size_t n = type_len(ps->p);
    cleanup_free char *sig = n ? strndup(ps->p, n) : NULL;
    if (n == 0)
        return fail(ps, "a type after `@` expected");
    if (sig == NULL)
        return brig_error_set(ps->err, ENOMEM, "GVariant text");
    if (hint && strcmp(hint, sig) != 0)
        return fail(ps, "`@` type differs from the type wanted");
    ps->p += n;
    skip_space(ps);
    return parse_value(ps, sig, out);
}

static int parse_value(struct parser *ps, const char *hint, struct brig_variant *out)
{
    if (++ps->depth > 32)
        return fail(ps, "nested too deep");
    skip_space(ps);
    int r;
    char c = *ps->p;
    if (c == '@') {
        r = parse_annotated(ps, hint, out);
    } else if (c == '[') {
        r = parse_array(ps, hint, out);
    } else if (c == '(') {
        r = parse_tuple(ps, hint, out);
    } else if (c == '\'' || c == '"') {
        r = hint && strcmp(hint, "s") != 0 ? fail(ps, "a string where the type wants another")
                                           : parse_string(ps, out, false);
    } else if (c == 'b' && (ps->p[1] == '\'' || ps->p[1] == '"')) {
        ps->p++;
        r = hint && strcmp(hint, "ay") != 0 ? fail(ps, "bytes where the type wants another")
                                            : parse_string(ps, out, true);
    } else if (take_word(ps, "true") || take_word(ps, "false")) {
        out->u = c == 't';
        r = hint && strcmp(hint, "b") != 0 ? fail(ps, "a boolean where the type wants another")
            : (out->sig = strdup("b"))     ? 0
                                           : brig_error_set(ps->err, ENOMEM, "GVariant text");
    } else {
        r = 1;
        for (size_t i = 0; r == 1 && i < sizeof number_words / sizeof *number_words; i++) {
            if (!take_word(ps, number_words[i].word))
                continue;
            char t = number_words[i].type;
            r = hint && (hint[0] != t || hint[1]) ? fail(ps, "a number of another type")
                                                  : parse_number(ps, t, out);
        }
        if (r == 1)
            r = isdigit((unsigned char) c) || c == '-' || c == '+'
                    ? parse_bare_number(ps, hint, out)
                    : fail(ps, "a value expected");
    }
    ps->depth--;
    return r;
}

int brig_variant_parse(const char *text, struct brig_variant *out, brig_error_t *err)
{
    *out = (struct brig_variant){ 0 };
    struct parser ps = { .p = text, .text = text, .err = err };
    if (parse_value(&ps, NULL, out) < 0 || (*ps.p != '\0' && fail(&ps, "trailing text") < 0)) {
        brig_variant_free(out);
        return -1;
    }
    return 0;
}

int brig_systemd_prop_parse(const char *item, char **name, struct brig_variant *value,
                            brig_error_t *err)
{
    *name = NULL;
    const char *eq = strchr(item, '=');
    size_t n = eq ? (size_t) (eq - item) : 0;
    bool ok = n > 0 && n < 128 && isupper((unsigned char) *item);
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char) item[i]);
    if (!ok)
        return brig_error_kind(err, BRIG_E_INPUT, "unit property `%s`: wants Name=value", item);
    if (brig_variant_parse(eq + 1, value, err) < 0)
        return brig_error_wrap(err, "unit property %.*s", (int) n, item);
    if ((*name = strndup(item, n)) == NULL) {
        brig_variant_free(value);
        return brig_error_set(err, ENOMEM, "unit property");
    }
    return 0;
}
