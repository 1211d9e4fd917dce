/* Events to containerd: each is wrapped in an Envelope and forwarded over
 * ttrpc to containerd's events service (Events.Forward on $TTRPC_ADDRESS),
 * one at a time and in the order published, retried while containerd is
 * away. */
#ifndef SHIM_PUBLISH_H
#define SHIM_PUBLISH_H

#include <protobuf-c/protobuf-c.h>

#include "base/error.h"
#include "loop.h"

struct shim_publisher;

/* address: containerd's ttrpc socket path (NULL or "": events are dropped). */
int shim_publisher_new(struct shim_loop *loop, const char *address, const char *ns,
                       struct shim_publisher **out, brig_error_t *err);
/* topic e.g. "/tasks/exit"; type_url e.g. "containerd.events.TaskExit". */
void shim_publish(struct shim_publisher *p, const char *topic, const char *type_url,
                  const ProtobufCMessage *event);
/* Sends what is queued, waiting up to timeout_ms (before the shim exits). */
void shim_publisher_flush(struct shim_publisher *p, int timeout_ms);
void shim_publisher_free(struct shim_publisher *p);

#endif
