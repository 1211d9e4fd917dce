#define _GNU_SOURCE
/* libFuzzer target: a lone linux.resources object, as `update -r FILE`
 * reads it (brig_resources_parse), then what the cgroup plans make of it:
 * v2's files, v1's files and v1's device lists. */
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cgroup/cgroup.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brig_resources *r = NULL;
    brig_error_t err = NULL;

    if (brig_resources_parse((const char *) data, size, "resources.json", &r, &err) < 0) {
        brig_error_release(&err);
        return 0;
    }
    int (*const plans[])(const struct brig_resources *, struct brig_cgroup_write **, size_t *,
                         brig_error_t *) = { brig_cgroup_plan, brig_cgroup_v1_plan };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        struct brig_cgroup_write *w = NULL;
        size_t n = 0;
        if (plans[i](r, &w, &n, &err) < 0)
            brig_error_release(&err);
        else
            brig_cgroup_plan_free(w, n);
    }
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_v1_devices_plan(r->devices, r->n_devices, &w, &n, &err) < 0)
        brig_error_release(&err);
    else
        brig_cgroup_plan_free(w, n);
    brig_resources_free(r);
    return 0;
}
