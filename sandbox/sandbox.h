/* The sandbox product as the CLI and the shim use it: the profile chosen
 * at create (by flag, by runtime option or by annotation) turns the
 * bundle's spec into a sandbox's, and the sandbox handler carries the
 * rest through the container's life (its settings in the state dir, the
 * /mnt/data image, the rules every exec must follow, checkpoint and
 * restore). See docs/architecture.md for the seam. What `brig sandbox`
 * does with sandboxes of its own is in layout.h (where they live),
 * manage.h (create, remove, list, checkpoint, restore) and transfer.h
 * (files in and out of /mnt/data). */
#ifndef BRIG_SANDBOX_H
#define BRIG_SANDBOX_H

#include "base/error.h"
#include "container/container.h"
#include "container/handler.h"
#include "sandbox/profile.h"

/* The handler, and a NULL-terminated list of every handler this layer
 * has, for brig_handlers_register(). */
extern const struct brig_handler brig_sandbox_handler;
extern const struct brig_handler *const brig_sandbox_handlers[];

/* A create's sandbox part. When `profile` (a flag: NULL or "sandbox"),
 * `settings` (a caller's own knobs) or the spec's run.brig.profile
 * annotation asks for the sandbox, the settings are resolved (brig-init,
 * the seccomp profile, the data dir: o->root/o->id unless set), o->config's
 * spec is rewritten, and o->handler / o->handler_data point at the handler
 * and `use`, which must outlive the create. Otherwise nothing changes. */
int brig_sandbox_prepare(struct brig_create_options *o, const char *profile,
                         const struct brig_profile_settings *settings,
                         struct brig_profile_settings *use, brig_error_t *err);

/* The settings of the sandbox container `id` in the state root (its
 * limits, network, ...): ENOENT when there is no such container, or it
 * is not a sandbox. Clear them with brig_profile_settings_clear. */
int brig_sandbox_settings_read(const char *root, const char *id, struct brig_profile_settings *s,
                               brig_error_t *err);

/* Before an exec through the init's port (exec_port.h), in the sandbox's
 * state dir: 1 with the environment the exec can't change put in
 * *forced, and a packages proxy that died started again, as every exec
 * does; 0 when the sandbox has no such port (a pod's container, an init
 * that runs a command). */
int brig_sandbox_port_prepare(int dir_fd, struct brig_strv *forced, brig_error_t *err);

/* Sets the knob `key` (data-size, memory, pids, cpus, network, userns,
 * malloc-conf, template (template.h: its tree, user and defaults); with
 * `paths` also rootfs, services, and a network namespace's path for
 * network) from a user's text, checked: a bad value
 * is BRIG_E_INPUT, its message naming it as `shown` ("--memory",
 * "memory"). A path is made absolute. */
int brig_sandbox_setting(struct brig_profile_settings *s, const char *key, const char *shown,
                         const char *value, bool paths, brig_error_t *err);

/* Sets the limit `key` (ttl, idle-timeout, exec-timeout) of a create to
 * `ms`, checked (ttl and idle-timeout at least a second, none over 30
 * days); BRIG_E_INPUT naming it as `shown`, with the user's `text` when
 * there is one, otherwise. */
struct brig_sandbox_create_options;
int brig_sandbox_lifetime_setting(struct brig_sandbox_create_options *o, const char *key,
                                  const char *shown, const char *text, int64_t ms,
                                  brig_error_t *err);

#endif
