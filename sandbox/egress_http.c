/* A request head as the proxy reads it from a sandbox (egress.h): the
 * request line and headers, strictly; an absolute-URI request rewritten
 * for the origin server. Pure. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sandbox/egress.h"

void brig_egress_request_clear(struct brig_egress_request *r)
{
    free(r->origin);
    *r = (struct brig_egress_request){ 0 };
}

static int refuse(int *status, const char **reason, int code, const char *why)
{
    *status = code;
    *reason = why;
    return -1;
}

/* The "\r\n" that ends the line at p, before `end`. The head is not
 * NUL-terminated (the proxy's buffer may be full): strstr could read on
 * past it. */
static const char *line_end(const char *p, const char *end)
{
    return memmem(p, (size_t) (end - p), "\r\n", 2);
}

/* A method is an RFC 9110 token. */
static bool is_token(const char *s, size_t n)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char) s[i]) && !strchr(extra, s[i]))
            return false;
    return true;
}

/* "host[:port]" or "[v6][:port]" of n bytes; the port default given. */
static int parse_authority(const char *a, size_t n, int default_port, struct brig_egress_request *r)
{
    const char *host = a, *port = NULL;
    size_t hlen;
    if (n > 0 && a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (close == NULL)
            return -1;
        host = a + 1;
        hlen = (size_t) (close - host);
        if (close + 1 < a + n) {
            if (close[1] != ':')
                return -1;
            port = close + 2;
        }
        r->literal = true;
    } else {
        const char *colon = memchr(a, ':', n);
        hlen = colon ? (size_t) (colon - a) : n;
        port = colon ? colon + 1 : NULL;
    }
    if (hlen == 0 || hlen > BRIG_EGRESS_HOST_MAX)
        return -1;
    for (size_t i = 0; i < hlen; i++) {
        char ch = (char) tolower((unsigned char) host[i]);
        bool ok = isalnum((unsigned char) ch) || ch == '-' || ch == '.' || ch == '_'
                  || (r->literal && ch == ':');
        if (!ok)
            return -1;
        r->host[i] = ch;
    }
    r->host[hlen] = '\0';
    /* A trailing dot names the same host: matched without it. */
    if (!r->literal && r->host[hlen - 1] == '.')
        r->host[hlen - 1] = '\0';
    if (!r->literal) {
        bool digits = true;
        for (const char *p = r->host; *p; p++)
            digits = digits && (isdigit((unsigned char) *p) || *p == '.');
        /* Every all-numeric host is an IPv4 literal (in any of its forms). */
        r->literal = digits;
    }
    r->port = default_port;
    if (port) {
        size_t plen = (size_t) (a + n - port);
        if (plen == 0 || plen > 5)
            return -1;
        int p = 0;
        for (size_t i = 0; i < plen; i++) {
            if (!isdigit((unsigned char) port[i]))
                return -1;
            p = p * 10 + (port[i] - '0');
        }
        if (p < 1 || p > 65535)
            return -1;
        r->port = p;
    }
    return r->host[0] ? 0 : -1;
}

/* Headers a proxy consumes, or that the origin must not get from the
 * client: replaced by the proxy's own. */
static bool hop_header(const char *line, size_t n)
{
    static const char *const drop[] = {
        "proxy-connection:", "proxy-authorization:", "connection:", "keep-alive:", "host:", NULL
    };
    for (size_t i = 0; drop[i]; i++) {
        size_t d = strlen(drop[i]);
        if (n >= d && strncasecmp(line, drop[i], d) == 0)
            return true;
    }
    return false;
}

/* The origin's head: METHOD PATH VERSION, the client's headers but the
 * hop ones, its own Host, and Connection: close (one request per
 * connection: a second one could name another host). */
static int rewrite(const char *method, size_t mlen, const char *path, size_t plen,
                   const char *version, const char *headers, const char *end,
                   struct brig_egress_request *r)
{
    size_t cap = (size_t) (end - headers) + mlen + plen + BRIG_EGRESS_HOST_MAX + 96;
    char *out = malloc(cap);
    if (out == NULL)
        return -1;
    int n = snprintf(out, cap, "%.*s %.*s %.8s\r\n", (int) mlen, method, (int) plen, path, version);
    size_t used = (size_t) n;
    for (const char *line = headers; line < end;) {
        const char *eol = line_end(line, end);
        size_t len = (size_t) (eol - line);
        if (!hop_header(line, len)) {
            memcpy(out + used, line, len + 2);
            used += len + 2;
        }
        line = eol + 2;
    }
    bool v6 = strchr(r->host, ':') != NULL;
    char port[8] = "";
    if (r->port != 80)
        snprintf(port, sizeof port, ":%d", r->port);
    used += (size_t) snprintf(out + used, cap - used, "Host: %s%s%s%s\r\nConnection: close\r\n\r\n",
                              v6 ? "[" : "", r->host, v6 ? "]" : "", port);
    r->origin = out;
    r->origin_len = used;
    return 0;
}

/* Whether a header announces a body (Content-Length but 0,
 * Transfer-Encoding). */
static bool has_body_header(const char *h, const char *end)
{
    for (const char *line = h; line < end;) {
        const char *eol = line_end(line, end);
        size_t n = (size_t) (eol - line);
        if (n >= 18 && strncasecmp(line, "transfer-encoding:", 18) == 0)
            return true;
        if (n >= 15 && strncasecmp(line, "content-length:", 15) == 0) {
            const char *v = line + 15;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            if (eol - v != 1 || *v != '0')
                return true;
        }
        line = eol + 2;
    }
    return false;
}

/* Each header line `name: value`, the name a token; no obs-fold. */
static bool headers_valid(const char *h, const char *end)
{
    for (const char *line = h; line < end;) {
        const char *eol = line_end(line, end);
        const char *colon = memchr(line, ':', (size_t) (eol - line));
        if (colon == NULL || !is_token(line, (size_t) (colon - line)))
            return false;
        for (const char *p = line; p < eol; p++)
            if (*p == '\0' || *p == '\r' || *p == '\n')
                return false;
        line = eol + 2;
    }
    return true;
}

int brig_egress_request_parse(const char *buf, size_t len, struct brig_egress_request *r,
                              int *status, const char **reason)
{
    *r = (struct brig_egress_request){ 0 };
    const char *stop = memmem(buf, len, "\r\n\r\n", 4);
    if (stop == NULL)
        return len >= BRIG_EGRESS_HEAD_MAX
                   ? refuse(status, reason, 431, "request head too large")
                   : (memchr(buf, '\0', len) ? refuse(status, reason, 400, "NUL in request") : 0);
    if (memchr(buf, '\0', (size_t) (stop - buf)))
        return refuse(status, reason, 400, "NUL in request");
    const char *eol = line_end(buf, stop + 2);
    /* METHOD SP TARGET SP HTTP/1.x */
    const char *sp1 = memchr(buf, ' ', (size_t) (eol - buf));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t) (eol - sp1 - 1)) : NULL;
    if (sp2 == NULL || !is_token(buf, (size_t) (sp1 - buf)) || sp2 == sp1 + 1
        || (size_t) (eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0
        || (sp2[8] != '0' && sp2[8] != '1'))
        return refuse(status, reason, 400, "malformed request line");
    const char *target = sp1 + 1;
    size_t tlen = (size_t) (sp2 - target), mlen = (size_t) (sp1 - buf);
    const char *headers = eol + 2, *hend = stop + 2;
    if (!headers_valid(headers, hend))
        return refuse(status, reason, 400, "malformed header");
    r->head_len = (size_t) (stop + 4 - buf);
    if (mlen == 7 && strncmp(buf, "CONNECT", 7) == 0) {
        r->kind = BRIG_EGRESS_CONNECT;
        if (memchr(target, '/', tlen) || parse_authority(target, tlen, 0, r) < 0 || r->port == 0)
            return refuse(status, reason, 400, "CONNECT wants host:port");
        return 1;
    }
    r->kind = BRIG_EGRESS_HTTP;
    if (tlen < 8 || strncasecmp(target, "http://", 7) != 0)
        return refuse(status, reason, 400,
                      strncasecmp(target, "https://", 8) == 0
                          ? "https:// goes through CONNECT"
                          : "a proxy request needs an absolute http:// URI");
    const char *auth = target + 7;
    size_t alen = strcspn(auth, "/?# ");
    if (alen > (size_t) (sp2 - auth))
        alen = (size_t) (sp2 - auth);
    if (memchr(auth, '@', alen) || parse_authority(auth, alen, 80, r) < 0)
        return refuse(status, reason, 400, "malformed host in URI");
    const char *path = auth + alen;
    size_t plen = (size_t) (sp2 - path);
    /* One request and no body: a GET or HEAD, passed on alone (what
     * follows its head is never relayed), so nothing can ride along to
     * the origin under another Host; its path of visible characters only. */
    if (!((mlen == 3 && strncmp(buf, "GET", 3) == 0)
          || (mlen == 4 && strncmp(buf, "HEAD", 4) == 0)))
        return refuse(status, reason, 405, "only GET and HEAD go as plain HTTP (use CONNECT)");
    for (size_t i = 0; i < plen; i++)
        if (path[i] < 0x21 || path[i] > 0x7e)
            return refuse(status, reason, 400, "malformed URI");
    if (has_body_header(headers, hend))
        return refuse(status, reason, 400, "a plain HTTP request can't have a body");
    if (plen == 0 || path[0] != '/') {
        if (plen && path[0] != '?')
            return refuse(status, reason, 400, "malformed URI");
    }
    char slash[] = "/";
    if (rewrite(buf, mlen, plen && path[0] == '/' ? path : slash, plen && path[0] == '/' ? plen : 1,
                sp2 + 1, headers, hend, r)
        < 0)
        return refuse(status, reason, 500, "out of memory");
    return 1;
}
