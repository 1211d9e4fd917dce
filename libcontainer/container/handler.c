#define _GNU_SOURCE
#include "container/handler.h"

#include <errno.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utils.h"

/* Set once at start-up by the program (brig, the shim), read by every
 * lifecycle call after: no lock, as with the rest of a process's set-up. */
static const struct brig_handler *const *registered;

void brig_handlers_register(const struct brig_handler *const *handlers)
{
    registered = handlers;
}

static const struct brig_handler *find(const char *name)
{
    for (size_t i = 0; registered && registered[i]; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return registered[i];
    return NULL;
}

int brig_handler_of(int dir_fd, const char *file, const struct brig_handler **h, brig_error_t *err)
{
    cleanup_free char *name = NULL;
    size_t len = 0;
    *h = NULL;
    if (brig_read_file_at(dir_fd, file, &name, &len, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return -1;
        brig_error_release(err);
        return 0;
    }
    if (len && name[len - 1] == '\n')
        name[len - 1] = '\0';
    if ((*h = find(name)) == NULL)
        return brig_error_set(err, 0, "handler `%s` (in `%s`) is not one this program has", name,
                              file);
    return 0;
}

int brig_handler_record(int dir_fd, const char *file, const struct brig_handler *h,
                        brig_error_t *err)
{
    cleanup_free char *line = NULL;
    if (asprintf(&line, "%s\n", h->name) < 0)
        return brig_error_set(err, ENOMEM, "handler");
    return brig_write_file_atomic_at(dir_fd, file, line, strlen(line), 0600, err);
}
