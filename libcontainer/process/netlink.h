/* Network setup through rtnetlink. */
#ifndef BRIG_NETLINK_H
#define BRIG_NETLINK_H

#include "base/error.h"

/* Brings "lo" up in the calling process's network namespace. */
int brig_netlink_loopback_up(brig_error_t *err);

#endif
