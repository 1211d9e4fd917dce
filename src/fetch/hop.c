/* brig-fetch's policy and transfer callbacks (fetch.h): the allow-list
 * for a hop's URL, the address check at every connect, the body to
 * stdout within the cap. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fetch.h"
#include "sandbox/download.h"
#include "sandbox/egress_sources.h"

#define NPM_WAIT_MS 10000

/* The URL's scheme, host (lower case, an IPv6 literal without brackets)
 * and port (the scheme's when it names none), as curl reads it. */
static int url_parts(const char *url, bool *https, char *host, size_t size, int *port)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *h = NULL, *p = NULL;
    int r = -1;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK
        && (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0)) {
        *https = strcasecmp(scheme, "https") == 0;
        size_t n = strlen(h);
        const char *start = h;
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
            start++;
            n -= 2;
        }
        if (n > 0 && n < size) {
            for (size_t i = 0; i < n; i++)
                host[i] = (char) tolower((unsigned char) start[i]);
            host[n] = '\0';
            *port = atoi(p);
            r = 0;
        }
    }
    curl_free(scheme);
    curl_free(h);
    curl_free(p);
    curl_url_cleanup(u);
    return r;
}

static bool ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* The rule for host:port, npm's registry asked for once when the list is
 * the host's package sources and nothing else lets the host through. */
static const struct brig_egress_rule *find_rule(struct fetch *f, const char *host, int port,
                                                bool https)
{
    const struct brig_egress_rule *rule = brig_egress_download_match(&f->conf, host, port, https);
    if (rule == NULL && f->from_sources && !f->npm_asked) {
        f->npm_asked = true;
        if (brig_egress_npm_add(&f->conf, NPM_WAIT_MS) > 0)
            rule = brig_egress_download_match(&f->conf, host, port, https);
    }
    return rule;
}

int fetch_allow(struct fetch *f, const char *url, char *why, size_t size)
{
    bool https;
    int port;
    char host[BRIG_EGRESS_HOST_MAX + 1];
    if (url_parts(url, &https, host, sizeof host, &port) < 0) {
        snprintf(why, size, "`%s`: not an http:// or https:// URL", url);
        return -1;
    }
    char shown[BRIG_EGRESS_HOST_MAX + 16];
    snprintf(shown, sizeof shown, port == (https ? 443 : 80) ? "%s" : "%s:%d", host, port);
    const struct brig_egress_rule *rule = find_rule(f, host, port, https);
    if (rule == NULL && f->from_sources)
        snprintf(why, size,
                 "host `%s` is not allowed (not one of the host's package sources; no %s)", shown,
                 f->conf_path);
    else if (rule == NULL)
        snprintf(why, size, "host `%s` is not allowed (%s: allow/download)", shown, f->conf_path);
    else if (ip_literal(host) && !rule->private_ok)
        snprintf(why, size, "host `%s`: an IP address must be listed with allow-private (%s)",
                 shown, f->conf_path);
    else {
        snprintf(f->host, sizeof f->host, "%s", host);
        f->private_ok = rule->private_ok;
        return 0;
    }
    return -1;
}

/* Every connection's socket: only to an address the rule lets us reach,
 * checked on the address curl is about to connect to. */
static curl_socket_t open_socket(void *opaque, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct fetch *f = opaque;
    if (purpose != CURLSOCKTYPE_IPCXN)
        return CURL_SOCKET_BAD;
    if (!f->private_ok && !brig_egress_addr_public(&a->addr, f->local, f->n_local)) {
        char ip[INET6_ADDRSTRLEN] = "?";
        const void *bytes = a->family == AF_INET6
                                ? (const void *) &((struct sockaddr_in6 *) &a->addr)->sin6_addr
                                : (const void *) &((struct sockaddr_in *) &a->addr)->sin_addr;
        inet_ntop(a->family, bytes, ip, sizeof ip);
        snprintf(f->refused, sizeof f->refused,
                 "host `%s`: %s is not a public address (it may be with allow-private)", f->host,
                 ip);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int write_all(const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t) n;
    }
    return 0;
}

/* The body of a 2xx answer goes to stdout; a redirect's or an error's
 * is not the file. Returning short stops the transfer. */
static size_t on_body(char *data, size_t size, size_t n, void *opaque)
{
    struct fetch *f = opaque;
    size_t len = size * n;
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &f->status);
    if (f->status < 200 || f->status > 299)
        return len;
    curl_off_t announced = -1;
    curl_easy_getinfo(f->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
    if ((announced > 0 && (uint64_t) announced > f->max_size) || len > f->max_size - f->written) {
        f->too_big = true;
        return 0;
    }
    if (write_all(data, len) < 0) {
        f->write_errno = errno;
        return 0;
    }
    f->written += len;
    return len;
}

int fetch_setup(struct fetch *f)
{
    CURL *c = f->curl;
    bool ok = curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK
              /* Never through a proxy the environment names. */
              && curl_easy_setopt(c, CURLOPT_PROXY, "") == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                                  (long) BRIG_SANDBOX_DOWNLOAD_CONNECT_TIMEOUT_MS)
                     == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_USERAGENT, "brig-fetch") == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_ERRORBUFFER, f->errbuf) == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket) == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, f) == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK
              && curl_easy_setopt(c, CURLOPT_WRITEDATA, f) == CURLE_OK;
    return ok ? 0 : -1;
}
