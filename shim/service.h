/* containerd's task service (containerd.task.v2.Task, also registered as
 * v3): one handler per method decodes the request, calls the core in
 * task.h, answers, and publishes the task events. */
#ifndef SHIM_SERVICE_H
#define SHIM_SERVICE_H

#include <stdbool.h>

#include "base/error.h"
#include "loop.h"
#include "publish.h"
#include "ttrpc.h"

struct shim_service_opts {
    struct shim_loop *loop;
    struct ttrpc_server *server;
    struct shim_publisher *publisher;
    const char *ns;
    const char *runtime_root;
    bool cgroups; /* false: containers get no cgroup (no cgroup v2 here) */
    bool debug;
};

struct shim_service;

int shim_service_new(const struct shim_service_opts *o, struct shim_service **out,
                     brig_error_t *err);
void shim_service_free(struct shim_service *s);

#endif
