/* linux.seccomp: compiling the spec into a libseccomp filter, loading it,
 * and handing a notify fd to the seccomp agent at listenerPath.
 *
 * Order of operations for the caller (init and exec alike):
 *   1. brig_seccomp_compile() in the runtime, before anything is cloned, so a
 *      bad profile fails `create` with no state left behind;
 *   2. in the container process, after capabilities and no_new_privs are set
 *      and right before execve(), brig_seccomp_load().
 * The kernel lets a process install a filter only if it has no_new_privs or
 * CAP_SYS_ADMIN in its user namespace. brig never sets no_new_privs on its own
 * (that is process.noNewPrivileges' call), so when the spec doesn't ask for
 * no_new_privs and drops CAP_SYS_ADMIN, the caller must load the filter
 * before dropping capabilities (runc does the same); the syscalls it makes
 * between load and execve (capset, prctl, close, execve, ...) then pass
 * through the filter, which every sane profile allows.
 *
 * With SCMP_ACT_NOTIFY rules, load returns a listener fd: the container
 * process must hand it over (to the runtime, which calls
 * brig_seccomp_send_to_listener()) before it makes a notified syscall, or it
 * waits on itself. A notified sendmsg/write/read/close would do exactly that;
 * don't use them on the hand-over path in profiles that notify them. */
#ifndef BRIG_SECCOMP_H
#define BRIG_SECCOMP_H

#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

struct brig_seccomp_filter;

/* Compiles linux.seccomp into a filter to be loaded later. Does not touch
 * the calling process. Syscall names this libseccomp doesn't know are
 * skipped; unknown actions, operators, architectures and flags are errors
 * naming the field: "linux.seccomp.syscalls[3].action: unknown action
 * `SCMP_ACT_FOO`". Known flags that this kernel or libseccomp can't apply
 * are skipped (as runc does): a profile written for a newer kernel still
 * loads, and `brig features` reports what is honoured. Known architectures
 * that this libseccomp can't name are skipped as well: such a process
 * couldn't run here. */
int brig_seccomp_compile(const struct brig_seccomp *s, struct brig_seccomp_filter **out,
                         brig_error_t *err);

/* The same through a cache of programs in the directory dir_fd (a state
 * root: the runtime's own, writable by nobody else; seccomp_cache.c): a
 * profile compiled once is read back by its key, not compiled again.
 * dir_fd -1: no cache. */
int brig_seccomp_compile_cached(const struct brig_seccomp *s, int dir_fd,
                                struct brig_seccomp_filter **out, brig_error_t *err);
/* That key: 64 hex digits of the SHA-256 of every field of the profile
 * and of this libseccomp's version. Pure. */
void brig_seccomp_key(const struct brig_seccomp *s, char out[65]);

/* Installs the filter in the calling process. *notify_fd is the listener fd
 * (O_CLOEXEC) when the profile has SCMP_ACT_NOTIFY rules, else -1. */
int brig_seccomp_load(struct brig_seccomp_filter *f, int *notify_fd, brig_error_t *err);
void brig_seccomp_free(struct brig_seccomp_filter *f);
/* A filter pointer freed when it goes out of scope (base/cleanup.h). */
static inline void brig_seccomp_freep(struct brig_seccomp_filter **f)
{
    brig_seccomp_free(*f);
}
#define cleanup_seccomp_filter __attribute__((cleanup(brig_seccomp_freep)))

/* Whether the filter has SCMP_ACT_NOTIFY rules (the caller needs a channel
 * for the fd). */
int brig_seccomp_has_notify(const struct brig_seccomp_filter *f);

/* Sends notify_fd (SCM_RIGHTS) and the container process state to the agent
 * listening on the unix socket listener_path, per the runtime spec:
 * {"ociVersion", "fds": ["seccompFd"], "pid", "metadata", "state"}.
 * state_json is the state object (as `brig state` prints it); metadata may
 * be NULL. */
int brig_seccomp_send_to_listener(const char *listener_path, const char *metadata, int notify_fd,
                                  pid_t pid, const char *state_json, brig_error_t *err);

/* For `brig features`: NULL-terminated static lists, from the tables the
 * compiler uses. */
const char *const *brig_seccomp_action_names(void);
const char *const *brig_seccomp_operator_names(void);
const char *const *brig_seccomp_arch_names(void);
const char *const *brig_seccomp_flag_names(void);
/* The known flags this kernel and libseccomp can apply (probed once). */
const char *const *brig_seccomp_supported_flag_names(void);

#endif
