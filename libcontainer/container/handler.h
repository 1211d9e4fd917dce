/* Handlers: what a layer above the library adds to a container's life
 * beyond rewriting its spec.
 *
 * Most of a special kind of container is a transform of the parsed spec,
 * which its layer applies before brig_container_create().
 * What a transform cannot say goes through a handler: a few hooks the
 * library calls at fixed points of the lifecycle, named so that later
 * commands (exec, delete, checkpoint), run by other processes, find them
 * again. The library records the handler's name in the container's state
 * dir at create; a program that drives such containers registers the
 * handlers it links (brig_handlers_register) before its first call.
 *
 * Every hook may be NULL. Each returns <0 with *err on failure, and the
 * library adds the container and the step to the message. */
#ifndef BRIG_HANDLER_H
#define BRIG_HANDLER_H

#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

struct brig_handler {
    const char *name; /* a file name: [a-z0-9-]+ */
    /* Files whose presence says a dir is this handler's where no name was
     * recorded (containers and images made before names were): in a state
     * dir, and in a checkpoint's image dir. NULL: none. */
    const char *state_marker;
    const char *image_marker;
    /* create and restore, once the state dir exists and before the cgroup
     * and the init: make what the container needs outside its spec and
     * keep in dir_fd what the other hooks need. `data` is what the caller
     * gave create (brig_create_options.handler_data); NULL at restore,
     * where `restore` has run first. `spec` is the one create or restore
     * goes on with: setup may complete it with what only exists now (a
     * resource it has just allocated), provided load_spec gives the same
     * spec back later. */
    int (*setup)(const void *data, int dir_fd, struct brig_spec *spec, brig_error_t *err);
    /* create and restore, once the init exists and its pid is in the
     * state, before the caller hears of the container: attach what needs
     * the container's namespaces (a service outside that must reach them
     * through the init's pid). A failure fails the create. */
    int (*spawned)(int dir_fd, pid_t pid, brig_error_t *err);
    /* The spec read back from the state dir (the defaults of exec, the
     * post* hooks): the layer's transform again, as at create. */
    int (*load_spec)(int dir_fd, struct brig_spec *spec, brig_error_t *err);
    /* Every exec: `p` is the library's own copy of the process the caller
     * asked for, `spec` the container's (after load_spec). The handler
     * rewrites p to what its containers allow, whatever the caller said. */
    int (*exec_process)(int dir_fd, const struct brig_spec *spec, struct brig_process *p,
                        brig_error_t *err);
    /* delete, and a create or restore that failed: undo setup. Whatever
     * setup reached; a missing part is not an error. */
    int (*teardown)(int dir_fd, brig_error_t *err);
    /* checkpoint: the handler's state into the image dir (refuse what
     * would not survive the container's removal). */
    int (*checkpoint)(int dir_fd, int image_fd, brig_error_t *err);
    /* restore: back from the image dir, with the bundle's spec rewritten
     * as create's caller would have; then setup(NULL, ...) runs. */
    int (*restore)(int image_fd, int dir_fd, struct brig_spec *spec, brig_error_t *err);
};

/* The handlers this program knows, NULL-terminated; kept (not copied)
 * for the life of the process. A later call replaces the list. */
void brig_handlers_register(const struct brig_handler *const *handlers);

/* The handler recorded in a container's state dir (or an image dir, when
 * `file` is BRIG_HANDLER_IMAGE_FILE), or else the one whose marker is
 * there: *h NULL when it has none; an error when it names one not
 * registered, or when the dir can't be read. */
int brig_handler_of(int dir_fd, const char *file, const struct brig_handler **h, brig_error_t *err);
/* Records h's name in dir_fd under `file`. */
int brig_handler_record(int dir_fd, const char *file, const struct brig_handler *h,
                        brig_error_t *err);

#define BRIG_HANDLER_FILE "handler"            /* in the state dir */
#define BRIG_HANDLER_IMAGE_FILE "brig-handler" /* in a checkpoint's image dir */

#endif
