#define _GNU_SOURCE
#include "container/handler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

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

/* No name recorded: a handler's container or images from before names
 * were recorded still get their handler (failing closed: a dir we can't
 * look into is an error, not a plain container). */
static int by_marker(int dir_fd, bool image, const struct brig_handler **h, brig_error_t *err)
{
    for (size_t i = 0; registered && registered[i]; i++) {
        const char *marker = image ? registered[i]->image_marker : registered[i]->state_marker;
        if (marker == NULL)
            continue;
        if (faccessat(dir_fd, marker, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
            *h = registered[i];
            return 0;
        }
        if (errno != ENOENT)
            return brig_error_set(err, errno, "handler marker `%s`", marker);
    }
    return 0;
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
        return by_marker(dir_fd, strcmp(file, BRIG_HANDLER_IMAGE_FILE) == 0, h, err);
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
