/* Which addresses a sandbox may reach through the proxy (egress.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "sandbox/egress.h"

struct block {
    uint32_t net;
    int prefix;
};

/* IPv4 space that is not the public internet's. The documentation
 * ranges (192.0.2/24, 198.51.100/24, 203.0.113/24) are not here: some
 * networks route real traffic through them, and the host's own networks
 * are refused below whatever their range. */
static const struct block v4_blocked[] = {
    { 0x00000000, 8 },  /* "this" network, 0.0.0.0 */
    { 0x0a000000, 8 },  /* 10/8 */
    { 0x64400000, 10 }, /* 100.64/10, shared (CGNAT) */
    { 0x7f000000, 8 },  /* loopback */
    { 0xa9fe0000, 16 }, /* link-local, 169.254.169.254 among them */
    { 0xac100000, 12 }, /* 172.16/12 */
    { 0xc0000000, 24 }, /* 192.0.0/24, protocol assignments */
    { 0xc0a80000, 16 }, /* 192.168/16 */
    { 0xc6120000, 15 }, /* 198.18/15, benchmarking */
    { 0xe0000000, 4 },  /* multicast */
    { 0xf0000000, 4 },  /* reserved, broadcast */
};

static bool in_block(uint32_t a, uint32_t net, int prefix)
{
    uint32_t mask = prefix ? ~UINT32_C(0) << (32 - prefix) : 0;
    return (a & mask) == (net & mask);
}

static bool prefix_equal(const unsigned char *a, const unsigned char *b, int prefix)
{
    int bytes = prefix / 8, bits = prefix % 8;
    if (memcmp(a, b, (size_t) bytes) != 0)
        return false;
    if (bits == 0)
        return true;
    unsigned char mask = (unsigned char) (0xff << (8 - bits));
    return (a[bytes] & mask) == (b[bytes] & mask);
}

static bool on_local(int family, const unsigned char *addr, const struct brig_egress_net *local,
                     size_t n_local)
{
    for (size_t i = 0; i < n_local; i++)
        if (local[i].family == family && prefix_equal(addr, local[i].addr, local[i].prefix))
            return true;
    return false;
}

static bool v4_public(uint32_t a, const struct brig_egress_net *local, size_t n_local)
{
    for (size_t i = 0; i < sizeof v4_blocked / sizeof *v4_blocked; i++)
        if (in_block(a, v4_blocked[i].net, v4_blocked[i].prefix))
            return false;
    unsigned char bytes[4];
    uint32_t be = htonl(a);
    memcpy(bytes, &be, 4);
    return !on_local(AF_INET, bytes, local, n_local);
}

static bool v4_at(const unsigned char *a, const struct brig_egress_net *local, size_t n_local)
{
    uint32_t v4;
    memcpy(&v4, a, 4);
    return v4_public(ntohl(v4), local, n_local);
}

static bool v6_public(const unsigned char *a, const struct brig_egress_net *local, size_t n_local)
{
    static const unsigned char zero[12] = { 0 };
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    static const unsigned char translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
    static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };
    static const unsigned char nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
    /* Forms that carry an IPv4 address are judged as that: mapped
     * (::ffff:0:0/96), NAT64 (64:ff9b::/96, and the local 64:ff9b:1::/48:
     * its last 32 bits), 6to4 (2002::/16: bits 16-47). */
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0 || memcmp(a, nat64_local, 6) == 0)
        return v4_at(a + 12, local, n_local);
    if (a[0] == 0x20 && a[1] == 0x02)
        return v4_at(a + 2, local, n_local);
    /* ::/96 (:: and ::1 among them, and the old IPv4-compatible form),
     * ::ffff:0:0:0/96 (IPv4-translated), Teredo (2001::/32), the discard
     * prefix 100::/64: none is an internet host a package comes from. */
    if (memcmp(a, zero, 12) == 0 || memcmp(a, translated, 12) == 0)
        return false;
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0)
        return false;
    if (a[0] == 0x01 && a[1] == 0 && memcmp(a + 2, zero, 6) == 0)
        return false;
    if ((a[0] & 0xfe) == 0xfc) /* fc00::/7, unique local */
        return false;
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) /* fe80::/10, link-local */
        return false;
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) /* fec0::/10, site-local */
        return false;
    if (a[0] == 0xff) /* multicast */
        return false;
    return !on_local(AF_INET6, a, local, n_local);
}

bool brig_egress_addr_public(const struct sockaddr *sa, const struct brig_egress_net *local,
                             size_t n_local)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
        return v4_public(ntohl(in->sin_addr.s_addr), local, n_local);
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
        return v6_public(in6->sin6_addr.s6_addr, local, n_local);
    }
    return false;
}
