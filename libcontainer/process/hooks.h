/* OCI hooks: each hook is run with the container state JSON on stdin, its
 * own args and env, and killed when its timeout passes. */
#ifndef BRIG_HOOKS_H
#define BRIG_HOOKS_H

#include "base/error.h"
#include "spec/spec.h"

/* Runs every hook of the list in order; the first failure stops the list.
 * `kind` ("prestart", "createRuntime", ...) names the hook in errors. */
int brig_hooks_run(const struct brig_hook_list *hooks, const char *kind, const char *state_json,
                   brig_error_t *err);
/* The same with the hooks' stdout and stderr on out[0] and out[1] (the
 * container's own, for the hooks the runtime runs at create). */
int brig_hooks_run_with_output(const struct brig_hook_list *hooks, const char *kind,
                               const char *state_json, const int out[2], brig_error_t *err);

#endif
