#define _GNU_SOURCE
/* libFuzzer target: a seccomp profile, parsed (brig_seccomp_parse) and
 * compiled into a libseccomp filter in memory (brig_seccomp_compile). The
 * filter is never loaded: the fuzzer's own process stays unfiltered. */
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "process/seccomp.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brig_seccomp *profile = NULL;
    struct brig_seccomp_filter *f = NULL;
    brig_error_t err = NULL;

    if (brig_seccomp_parse((const char *) data, size, "profile.json", &profile, &err) < 0) {
        brig_error_release(&err);
        return 0;
    }
    if (brig_seccomp_compile(profile, &f, &err) < 0)
        brig_error_release(&err);
    brig_seccomp_free(f);
    brig_seccomp_free_spec(profile);
    return 0;
}
