/* The allow-list of egress.h: egress.conf, matching, and the list made
 * from the host's package sources. Pure: the texts come from the caller. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/egress.h"
#include "sandbox/profile.h"

void brig_egress_conf_free(struct brig_egress_conf *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->rules[i].host);
    free(c->rules);
    for (size_t i = 0; i < c->n_downloads; i++)
        free(c->downloads[i].host);
    free(c->downloads);
    *c = (struct brig_egress_conf){ 0 };
}

static void conf_defaults(struct brig_egress_conf *c)
{
    *c = (struct brig_egress_conf){
        .max_connections = BRIG_EGRESS_MAX_CONNECTIONS,
        .idle_timeout = BRIG_EGRESS_IDLE_TIMEOUT,
        .connect_timeout = BRIG_EGRESS_CONNECT_TIMEOUT,
        .download_max_size = BRIG_EGRESS_DOWNLOAD_MAX_SIZE,
    };
}

/* A host name: labels of letters, digits, `-` and `_`, dot-separated. */
static bool valid_name(const char *h)
{
    size_t len = strlen(h);
    if (len == 0 || len > BRIG_EGRESS_HOST_MAX || h[0] == '.' || h[len - 1] == '.')
        return false;
    for (const char *p = h; *p; p++)
        if (!(isalnum((unsigned char) *p) || *p == '-' || *p == '.' || *p == '_')
            || (*p == '.' && p[1] == '.'))
            return false;
    return true;
}

static bool valid_ipv6(const char *h)
{
    size_t len = strlen(h);
    if (len < 2 || len > 45)
        return false;
    for (const char *p = h; *p; p++)
        if (!(isxdigit((unsigned char) *p) || *p == ':' || *p == '.'))
            return false;
    return strchr(h, ':') != NULL;
}

/* "host", "*.suffix", "[v6]", each with ":port" or not, into a rule. */
static int parse_target(const char *word, bool wildcard_ok, struct brig_egress_rule *rule)
{
    char host[BRIG_EGRESS_HOST_MAX + 3];
    const char *port = NULL;
    if (word[0] == '[') {
        const char *close = strchr(word, ']');
        if (close == NULL || (size_t) (close - word - 1) >= sizeof host)
            return -1;
        memcpy(host, word + 1, (size_t) (close - word - 1));
        host[close - word - 1] = '\0';
        if (!valid_ipv6(host) || (close[1] && close[1] != ':'))
            return -1;
        port = close[1] ? close + 2 : NULL;
    } else {
        const char *colon = strchr(word, ':');
        size_t n = colon ? (size_t) (colon - word) : strlen(word);
        if (n >= sizeof host)
            return -1;
        memcpy(host, word, n);
        host[n] = '\0';
        port = colon ? colon + 1 : NULL;
        bool wild = strncmp(host, "*.", 2) == 0;
        if ((wild && !wildcard_ok) || !valid_name(wild ? host + 2 : host))
            return -1;
    }
    rule->port = 0;
    if (port) {
        char *end;
        errno = 0;
        long p = strtol(port, &end, 10);
        if (errno || end == port || *end || p < 1 || p > 65535)
            return -1;
        rule->port = (int) p;
    }
    for (char *p = host; *p; p++)
        *p = (char) tolower((unsigned char) *p);
    rule->host = strdup(host);
    return rule->host ? 0 : -2;
}

static int push_rule(struct brig_egress_rule **rules, size_t *n,
                     const struct brig_egress_rule *rule)
{
    struct brig_egress_rule *bigger = realloc(*rules, (*n + 1) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    *rules = bigger;
    bigger[(*n)++] = *rule;
    return 0;
}

static int add_rule(struct brig_egress_conf *c, const struct brig_egress_rule *rule)
{
    return push_rule(&c->rules, &c->n, rule);
}

static int parse_number(const char *word, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(word, &end, 10);
    if (errno || end == word || *end || v < 1 || v > 1000000)
        return -1;
    *out = (int) v;
    return 0;
}

/* `allow`, `allow-private` and `download`: a rule into its list. 1 when
 * `key` is none of them. */
static int parse_rule(const char *key, const char *word, struct brig_egress_conf *c,
                      const char **why)
{
    bool allow = strcmp(key, "allow") == 0, priv = strcmp(key, "allow-private") == 0;
    bool download = strcmp(key, "download") == 0;
    if (!allow && !priv && !download)
        return 1;
    struct brig_egress_rule rule = { .private_ok = priv };
    int r = parse_target(word, !priv, &rule);
    if (r == -1)
        *why = priv ? "expected an exact host or IP, with an optional :PORT"
                    : "expected a host, *.suffix or IP, with an optional :PORT";
    if (r == 0
        && (download ? push_rule(&c->downloads, &c->n_downloads, &rule) : add_rule(c, &rule)) < 0) {
        free(rule.host);
        r = -2;
    }
    if (r == -2)
        *why = "out of memory";
    return r < 0 ? -1 : 0;
}

/* `download-max-size SIZE`, with K, M, G, T as brig's other sizes. */
static int parse_max_size(const char *word, struct brig_egress_conf *c, const char **why)
{
    int64_t size;
    if (brig_profile_parse_size(word, &size) < 0) {
        *why = "expected a size from 1 (K, M, G, T suffixes)";
        return -1;
    }
    c->download_max_size = (uint64_t) size;
    return 0;
}

/* One line, cut into its words (at most three looked at). */
static int parse_line(char *line, struct brig_egress_conf *c, const char **why)
{
    char *save = NULL, *words[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 3; i++)
        words[i] = strtok_r(i ? NULL : line, " \t\r", &save);
    if (words[0] == NULL || words[0][0] == '#')
        return 0;
    if (words[1] == NULL || (words[2] && words[2][0] != '#')) {
        *why = "expected `KEY VALUE`";
        return -1;
    }
    int r = parse_rule(words[0], words[1], c, why);
    if (r <= 0)
        return r;
    if (strcmp(words[0], "download-max-size") == 0)
        return parse_max_size(words[1], c, why);
    int *field = strcmp(words[0], "max-connections") == 0   ? &c->max_connections
                 : strcmp(words[0], "idle-timeout") == 0    ? &c->idle_timeout
                 : strcmp(words[0], "connect-timeout") == 0 ? &c->connect_timeout
                                                            : NULL;
    if (field == NULL) {
        *why = "unknown key (allow, allow-private, download, download-max-size, "
               "max-connections, idle-timeout, connect-timeout)";
        return -1;
    }
    if (parse_number(words[1], field) < 0) {
        *why = "expected a whole number from 1";
        return -1;
    }
    return 0;
}

struct parse_ctx {
    struct brig_egress_conf *c;
    const char *why;
    unsigned lineno;
};

static int conf_line(char *line, unsigned lineno, void *opaque)
{
    struct parse_ctx *ctx = opaque;
    ctx->lineno = lineno;
    return parse_line(line, ctx->c, &ctx->why) < 0 ? -2 : 0;
}

int brig_egress_conf_parse(const char *text, const char *file, struct brig_egress_conf *c,
                           brig_error_t *err)
{
    conf_defaults(c);
    struct parse_ctx ctx = { c, NULL, 0 };
    int r = brig_each_line(text, conf_line, &ctx);
    if (r == 0)
        return 0;
    brig_egress_conf_free(c);
    if (r == -1)
        return brig_error_set(err, ENOMEM, "%s", file);
    return brig_error_set(err, 0, "%s: line %u: %s", file, ctx.lineno, ctx.why);
}

/* ---- matching ---- */

static bool host_matches(const char *pattern, const char *host)
{
    if (strncmp(pattern, "*.", 2) != 0)
        return strcmp(pattern, host) == 0;
    size_t plen = strlen(pattern + 1), hlen = strlen(host); /* ".suffix" */
    return hlen > plen && strcmp(host + hlen - plen, pattern + 1) == 0;
}

const struct brig_egress_rule *brig_egress_match(const struct brig_egress_conf *c, const char *host,
                                                 int port, bool connect)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct brig_egress_rule *r = &c->rules[i];
        int want = r->port ? r->port : (connect ? 443 : 80);
        if ((connect && r->http_only) || (!connect && r->connect_only))
            continue;
        if (port == want && host_matches(r->host, host))
            return r;
    }
    return NULL;
}

const struct brig_egress_rule *brig_egress_download_match(const struct brig_egress_conf *c,
                                                          const char *host, int port, bool https)
{
    const struct brig_egress_rule *r = brig_egress_match(c, host, port, https);
    if (r)
        return r;
    const struct brig_egress_conf downloads = { .rules = c->downloads, .n = c->n_downloads };
    return brig_egress_match(&downloads, host, port, https);
}

/* ---- the host's package sources ---- */

int brig_egress_conf_add_url(struct brig_egress_conf *c, const char *url)
{
    int scheme_port;
    const char *rest;
    if (strncasecmp(url, "http://", 7) == 0) {
        scheme_port = 80;
        rest = url + 7;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        scheme_port = 443;
        rest = url + 8;
    } else {
        return 0;
    }
    /* user:password@ goes; host[:port] stays, up to the path. */
    size_t n = strcspn(rest, "/?#");
    char word[BRIG_EGRESS_HOST_MAX + 16];
    const char *at = memchr(rest, '@', n);
    if (at) {
        n -= (size_t) (at + 1 - rest);
        rest = at + 1;
    }
    if (n == 0 || n >= sizeof word)
        return 0;
    memcpy(word, rest, n);
    word[n] = '\0';
    struct brig_egress_rule rule = { 0 };
    if (parse_target(word, false, &rule) == -2)
        return -1;
    if (rule.host == NULL)
        return 0; /* not a host we can name: passed over */
    /* The scheme's own port: what a CONNECT (https) or plain request
     * (http) asks for anyway. */
    if (rule.port == 0)
        rule.port = scheme_port;
    rule.http_only = scheme_port == 80;
    rule.connect_only = scheme_port == 443;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rules[i].host, rule.host) == 0 && c->rules[i].port == rule.port
            && c->rules[i].http_only == rule.http_only) {
            free(rule.host);
            return 0;
        }
    if (add_rule(c, &rule) < 0) {
        free(rule.host);
        return -1;
    }
    return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

bool brig_egress_apt_file(const char *name)
{
    return ends_with(name, ".list") || ends_with(name, ".sources");
}

/* Every URL of a text: apt's `deb [opts] URL ...` lines and deb822
 * `URIs:` fields, npm's `registry=URL`, pip's `index-url = URL` and
 * `extra-index-url`. */
static int url_line(char *line, unsigned lineno, void *ctx)
{
    (void) lineno;
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line == '#')
        return 0;
    char *save = NULL;
    for (char *word = strtok_r(line, " \t=\"'", &save); word;
         word = strtok_r(NULL, " \t=\"'", &save))
        if (strstr(word, "://") && brig_egress_conf_add_url(ctx, word) < 0)
            return -1;
    return 0;
}

static int add_urls(struct brig_egress_conf *c, const char *text)
{
    return brig_each_line(text, url_line, c);
}

int brig_egress_conf_from_sources(const char *const *apt, size_t n_apt, const char *npm,
                                  const char *pip, struct brig_egress_conf *c, brig_error_t *err)
{
    conf_defaults(c);
    int r = 0;
    for (size_t i = 0; r == 0 && i < n_apt; i++)
        r = add_urls(c, apt[i]);
    if (r == 0 && add_urls(c, npm) == 0 && add_urls(c, pip) == 0)
        return 0;
    brig_egress_conf_free(c);
    return brig_error_set(err, ENOMEM, "egress allow-list");
}
