/* The packages-only network (brig-egress(8)): a sandbox has only `lo`, and
 * an HTTP forward proxy answers at 127.0.0.1:3128 inside it. The proxy is
 * one process for the whole host (brig-egress, src/egress/), outside every
 * sandbox: it makes a listening socket in each sandbox's network namespace
 * and connects out from the host's, to the hosts of an allow-list only.
 *
 * This header holds what the runtime and the proxy share, all pure:
 *   - the allow-list (`egress.conf`): parsed, and matched against a host
 *     and port; or made from the host's own package sources;
 *   - a request head: CONNECT host:port, or an absolute-URI plain HTTP
 *     request, parsed, and the latter rewritten for the origin server;
 *   - addresses: which a sandbox may reach (public ones only, unless the
 *     allow-list names the host as private). */
#ifndef BRIG_SANDBOX_EGRESS_H
#define BRIG_SANDBOX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

#define BRIG_EGRESS_CONF "/etc/brig/egress.conf"
#define BRIG_EGRESS_ADDR "127.0.0.1"
#define BRIG_EGRESS_PORT 3128
#define BRIG_EGRESS_URL "http://127.0.0.1:3128"
#define BRIG_EGRESS_HOST_MAX 253
#define BRIG_EGRESS_HEAD_MAX 16384 /* a request head longer than this is refused */

/* ---- the allow-list ---- */

struct brig_egress_rule {
    char *host;      /* lower case: a name, "*.suffix", an IPv4 literal or an IPv6 one */
    int port;        /* 0: 443 for CONNECT, 80 for plain HTTP */
    bool private_ok; /* allow-private: may be, or resolve to, a non-public address */
    /* A package source's rule lets through only its scheme's way: plain
     * HTTP for http://, CONNECT for https:// (a CONNECT to an http://
     * source's port 80 would be a raw tunnel to a shared front end, past
     * the Host the proxy writes). A rule of egress.conf lets both. */
    bool http_only, connect_only;
};

struct brig_egress_conf {
    struct brig_egress_rule *rules;
    size_t n;
    /* `download` entries: what `brig sandbox download` may fetch from
     * besides the rules above. Never the proxy's. */
    struct brig_egress_rule *downloads;
    size_t n_downloads;
    uint64_t download_max_size; /* bytes; the default cap of a download */
    int max_connections;        /* per sandbox */
    int idle_timeout;           /* seconds without a byte either way */
    int connect_timeout;        /* seconds to resolve and connect */
};

#define BRIG_EGRESS_MAX_CONNECTIONS 64
#define BRIG_EGRESS_IDLE_TIMEOUT 120
#define BRIG_EGRESS_CONNECT_TIMEOUT 15
#define BRIG_EGRESS_DOWNLOAD_MAX_SIZE (UINT64_C(1) << 30)

/* Parses egress.conf:
 *   # comment
 *   allow HOST[:PORT]           a name, *.suffix (its subdomains), or IP
 *   allow-private HOST[:PORT]   a name or IP that may be non-public
 *   download HOST[:PORT]        as allow, for `brig sandbox download` only
 *   download-max-size SIZE      a download's default cap (K, M, G, T)
 *   max-connections N           per sandbox at once
 *   idle-timeout SECONDS
 *   connect-timeout SECONDS
 * An error names the file and the line. */
int brig_egress_conf_parse(const char *text, const char *file, struct brig_egress_conf *c,
                           brig_error_t *err);
void brig_egress_conf_free(struct brig_egress_conf *c);

/* Adds a rule for the host (and port, when not the scheme's) of a URL
 * (`http://host[:port]/...`, `https://...`); other schemes are passed
 * over. -1 on ENOMEM. */
int brig_egress_conf_add_url(struct brig_egress_conf *c, const char *url);

/* The rule that lets `host` (lower case, as requested) on `port` through,
 * CONNECT or plain HTTP; NULL when none does. */
const struct brig_egress_rule *brig_egress_match(const struct brig_egress_conf *c, const char *host,
                                                 int port, bool connect);

/* The rule that lets `brig sandbox download` fetch from `host` on `port`
 * (an https:// URL as CONNECT, an http:// one as plain HTTP): an allow
 * rule or a download rule; NULL when none does. */
const struct brig_egress_rule *brig_egress_download_match(const struct brig_egress_conf *c,
                                                          const char *host, int port, bool https);

/* The host's own package sources as a list (no egress.conf): the hosts of
 * apt's sources (`apt` texts: sources.list lines and deb822 URIs), npm's
 * registry and pip's index (`npm` and `pip` texts: `registry=URL`,
 * `index-url = URL` lines, as `npm config get` and pip.conf say them).
 * Any text may be NULL. */
int brig_egress_conf_from_sources(const char *const *apt, size_t n_apt, const char *npm,
                                  const char *pip, struct brig_egress_conf *c, brig_error_t *err);

/* apt's sources: the one file, and the dir whose *.list (one-line) and
 * *.sources (deb822) files are more of them. */
#define BRIG_EGRESS_APT_LIST "/etc/apt/sources.list"
#define BRIG_EGRESS_APT_DIR "/etc/apt/sources.list.d"
bool brig_egress_apt_file(const char *name);

/* ---- a request head ---- */

enum brig_egress_kind {
    BRIG_EGRESS_CONNECT,
    BRIG_EGRESS_HTTP,
};

struct brig_egress_request {
    enum brig_egress_kind kind;
    char host[BRIG_EGRESS_HOST_MAX + 1]; /* lower case; an IPv6 literal without brackets */
    int port;
    bool literal;    /* host is an IP literal */
    size_t head_len; /* bytes of the client's head, "\r\n\r\n" included */
    char *origin;    /* HTTP: the head to send the origin server (owned) */
    size_t origin_len;
};

/* Parses the head at buf: 1 when complete (r filled), 0 when it needs more
 * bytes, -1 when it must be refused: *status (400, 405, 431) and *reason
 * (a static one-line text) say why. Plain HTTP is a GET or HEAD without a
 * body, its path visible characters only: the proxy passes on that one
 * request and nothing after it. */
int brig_egress_request_parse(const char *buf, size_t len, struct brig_egress_request *r,
                              int *status, const char **reason);
void brig_egress_request_clear(struct brig_egress_request *r);

/* ---- addresses ---- */

/* The networks the host is on (its interfaces' own): never reachable from
 * a sandbox, whatever their range. */
struct brig_egress_net {
    int family;
    unsigned char addr[16];
    int prefix;
};

/* Whether a sandbox may reach `sa` when the rule does not say private:
 * not loopback, unspecified, private (RFC 1918, fc00::/7), shared (CGNAT),
 * link-local (169.254/16, the cloud metadata address among them;
 * fe80::/10), multicast, reserved or broadcast, nor on a network of
 * `local`. The documentation ranges count as public: some networks route
 * real traffic through them. */
bool brig_egress_addr_public(const struct sockaddr *sa, const struct brig_egress_net *local,
                             size_t n_local);

#endif
