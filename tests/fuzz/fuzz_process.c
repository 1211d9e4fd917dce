#define _GNU_SOURCE
/* libFuzzer target: a lone process object, as `exec --process FILE` reads
 * it (brig_process_parse). */
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brig_process *process = NULL;
    brig_error_t err = NULL;

    if (brig_process_parse((const char *) data, size, "process.json", &process, &err) < 0)
        brig_error_release(&err);
    else
        brig_process_free(process);
    return 0;
}
