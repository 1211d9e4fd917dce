#define _GNU_SOURCE
/* libFuzzer target: a lone linux.resources object, as `update -r FILE`
 * reads it (brig_resources_parse). */
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brig_resources *r = NULL;
    brig_error_t err = NULL;

    if (brig_resources_parse((const char *) data, size, "resources.json", &r, &err) < 0)
        brig_error_release(&err);
    else
        brig_resources_free(r);
    return 0;
}
