#define _GNU_SOURCE
#include "netlink.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* MNL_SOCKET_BUFFER_SIZE is computed at run time (a VLA); a request and its
 * ACK are a few dozen bytes, so a fixed 8 KiB, libmnl's upper bound, does. */
#define NETLINK_BUF_SIZE 8192

static void mnl_socket_closep(struct mnl_socket **nl)
{
    if (*nl) {
        int saved = errno;
        mnl_socket_close(*nl);
        errno = saved;
    }
}
#define cleanup_mnl __attribute__((cleanup(mnl_socket_closep)))

/* Sends one request that asks for an ACK and waits for that ACK: the
 * kernel answers NLMSG_ERROR with error 0 on success, -errno on failure,
 * which mnl_cb_run() turns into -1 with errno set. */
static int netlink_request(struct mnl_socket *nl, struct nlmsghdr *req)
{
    if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0)
        return -1;
    unsigned int portid = mnl_socket_get_portid(nl);
    char buf[NETLINK_BUF_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        int r = mnl_cb_run(buf, (size_t) n, req->nlmsg_seq, portid, NULL, NULL);
        if (r < 0)
            return -1;
        if (r == MNL_CB_STOP)
            return 0;
    }
}

int brig_netlink_loopback_up(brig_error_t *err)
{
    /* In a new network namespace lo always exists and is always index 1;
     * looking it up keeps this right in a namespace we merely joined. */
    unsigned int index = if_nametoindex("lo");
    if (index == 0)
        index = 1;

    cleanup_mnl struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
    if (nl == NULL)
        return brig_error_set(err, errno, "bring `lo` up: open rtnetlink socket");
    if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
        return brig_error_set(err, errno, "bring `lo` up: bind rtnetlink socket");

    char buf[NETLINK_BUF_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = (uint32_t) time(NULL);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = (int) index;
    /* Only IFF_UP changes: ifi_change masks every other flag out. */
    ifi->ifi_flags = IFF_UP;
    ifi->ifi_change = IFF_UP;

    if (netlink_request(nl, nlh) < 0)
        return brig_error_set(err, errno, "bring `lo` (index %u) up: RTM_NEWLINK", index);
    return 0;
}
