#define _GNU_SOURCE
/* libFuzzer target: config.json parsing and validation (brig_spec_parse).
 * Then, as `create` would before the clone, the rootfs plan is built and,
 * when the config carries linux.seccomp, the profile compiled (not loaded). */
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "process/seccomp.h"
#include "rootfs/plan.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brig_spec *spec = NULL;
    brig_error_t err = NULL;

    if (brig_spec_parse((const char *) data, size, "config.json", &spec, &err) < 0) {
        brig_error_release(&err);
        return 0;
    }
    struct brig_rootfs_plan *plan = NULL;
    if (brig_rootfs_plan_build(spec, "/rootfs", false, &plan, &err) < 0)
        brig_error_release(&err);
    brig_rootfs_plan_free(plan);
    if (spec->linux_ && spec->linux_->seccomp) {
        struct brig_seccomp_filter *f = NULL;

        if (brig_seccomp_compile(spec->linux_->seccomp, &f, &err) < 0)
            brig_error_release(&err);
        brig_seccomp_free(f);
    }
    brig_spec_free(spec);
    return 0;
}
