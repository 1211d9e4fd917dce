#define _GNU_SOURCE
#include "process/identity.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"

/* Capabilities are handled as 64-bit masks: the kernel defines 41 today
 * and the capability ABI itself stops at 64. */
#define CAPS_MASK_BITS 64

/* ---- rlimits ----------------------------------------------------------- */

/* One list feeds both the name table and the lookup, so `brig features`
 * prints exactly what brig_rlimit_from_name() accepts. */
/* clang-format off */
#define BRIG_RLIMITS(X)                                                        \
    X(AS) X(CORE) X(CPU) X(DATA) X(FSIZE) X(LOCKS) X(MEMLOCK) X(MSGQUEUE)      \
    X(NICE) X(NOFILE) X(NPROC) X(RSS) X(RTPRIO) X(RTTIME) X(SIGPENDING) X(STACK)
/* clang-format on */

#define RLIMIT_NAME(n) "RLIMIT_" #n,
#define RLIMIT_VALUE(n) RLIMIT_##n,
static const char *const rlimit_names[] = { BRIG_RLIMITS(RLIMIT_NAME) NULL };
static const int rlimit_values[] = { BRIG_RLIMITS(RLIMIT_VALUE) };

int brig_rlimit_from_name(const char *name)
{
    if (name == NULL)
        return -1;
    for (size_t i = 0; rlimit_names[i]; i++)
        if (strcmp(name, rlimit_names[i]) == 0)
            return rlimit_values[i];
    return -1;
}

const char *const *brig_rlimit_names(void)
{
    return rlimit_names;
}

int brig_rlimits_apply(const struct brig_process *process, brig_error_t *err)
{
    for (size_t i = 0; i < process->n_rlimits; i++) {
        const struct brig_rlimit *rl = &process->rlimits[i];
        const char *type = rl->type ? rl->type : "?";
        if (rl->soft > rl->hard)
            return brig_error_set(err, EINVAL,
                                  "setrlimit `%s`: soft limit %llu is above hard limit %llu", type,
                                  (unsigned long long) rl->soft, (unsigned long long) rl->hard);
        /* rlim_t is 64-bit and RLIM_INFINITY is all ones, the same as the
         * spec's "unlimited" 2^64-1, so the values pass through unchanged. */
        struct rlimit lim = { .rlim_cur = (rlim_t) rl->soft, .rlim_max = (rlim_t) rl->hard };
        if (setrlimit((__rlimit_resource_t) rl->resource, &lim) < 0)
            return brig_error_set(err, errno, "setrlimit `%s` (soft %llu, hard %llu)", type,
                                  (unsigned long long) rl->soft, (unsigned long long) rl->hard);
    }
    return 0;
}

/* ---- capability names -------------------------------------------------- */

/* "CAP_" followed by upper-case letters, digits and underscores. */
static bool is_cap_shaped(const char *name)
{
    if (name == NULL || strncmp(name, "CAP_", 4) != 0 || name[4] == '\0')
        return false;
    for (const char *p = name + 4; *p; p++)
        if (!(isupper((unsigned char) *p) || isdigit((unsigned char) *p) || *p == '_'))
            return false;
    return true;
}

int brig_cap_from_name(const char *name)
{
    /* libcap also accepts lower case and bare numbers; the spec uses only
     * the canonical "CAP_XXX" form, so anything else is unknown here. */
    if (!is_cap_shaped(name))
        return -1;
    cap_value_t cap;
    if (cap_from_name(name, &cap) < 0 || cap < 0 || cap >= CAPS_MASK_BITS)
        return -1;
    return cap;
}

static const char *cap_name_table[CAPS_MASK_BITS + 1];
static char cap_name_storage[CAPS_MASK_BITS][32];
static pthread_once_t cap_names_once = PTHREAD_ONCE_INIT;

static void build_cap_names(void)
{
    size_t n = 0;
    for (cap_value_t cap = 0; cap < CAPS_MASK_BITS; cap++) {
        char *name = cap_to_name(cap);
        if (name == NULL)
            break;
        /* libcap spells a capability it has no name for as its number:
         * that is where its table ends. */
        bool known = strncmp(name, "cap_", 4) == 0;
        if (known) {
            char *out = cap_name_storage[n];
            snprintf(out, sizeof cap_name_storage[n], "%s", name);
            for (char *p = out; *p; p++)
                *p = (char) toupper((unsigned char) *p);
            cap_name_table[n++] = out;
        }
        cap_free(name);
        if (!known)
            break;
    }
    cap_name_table[n] = NULL;
}

const char *const *brig_cap_names(void)
{
    pthread_once(&cap_names_once, build_cap_names);
    return cap_name_table;
}

/* ---- dropping privileges ----------------------------------------------- */

/* For messages: "CAP_KILL", or the number of a cap libcap has no name for. */
static const char *cap_label(int cap, char *buf, size_t size)
{
    const char *const *names = brig_cap_names();
    for (int i = 0; names[i]; i++)
        if (i == cap)
            return names[i];
    snprintf(buf, size, "capability %d", cap);
    return buf;
}

struct cap_masks {
    uint64_t bounding, effective, permitted, inheritable, ambient;
};

/* Number of capabilities the running kernel knows (not the build's
 * headers: a binary built on an old system may run on a newer kernel). */
static int kernel_cap_count(void)
{
    int n = (int) cap_max_bits();
    if (n <= 0)
        n = CAP_LAST_CAP + 1;
    return n > CAPS_MASK_BITS ? CAPS_MASK_BITS : n;
}

/* Specs are written for many kernels, so a well-formed name this system
 * doesn't know is skipped: it can't be granted here anyway. A name that
 * isn't capability-shaped is a mistake in the spec and is refused. */
static int parse_cap_set(const struct brig_strv *names, const char *set, int ncaps, uint64_t *mask,
                         brig_error_t *err)
{
    *mask = 0;
    for (size_t i = 0; i < names->n; i++) {
        const char *name = names->v[i];
        if (!is_cap_shaped(name))
            return brig_error_set(err, EINVAL,
                                  "capabilities.%s: `%s` is not a capability name (CAP_...)", set,
                                  name ? name : "");
        int cap = brig_cap_from_name(name);
        if (cap < 0 || cap >= ncaps)
            continue;
        *mask |= UINT64_C(1) << cap;
    }
    return 0;
}

static int parse_cap_masks(const struct brig_capabilities *caps, int ncaps, struct cap_masks *m,
                           brig_error_t *err)
{
    memset(m, 0, sizeof *m);
    if (caps == NULL)
        return 0;
    if (parse_cap_set(&caps->bounding, "bounding", ncaps, &m->bounding, err) < 0
        || parse_cap_set(&caps->effective, "effective", ncaps, &m->effective, err) < 0
        || parse_cap_set(&caps->permitted, "permitted", ncaps, &m->permitted, err) < 0
        || parse_cap_set(&caps->inheritable, "inheritable", ncaps, &m->inheritable, err) < 0
        || parse_cap_set(&caps->ambient, "ambient", ncaps, &m->ambient, err) < 0)
        return -1;
    return 0;
}

/* Needs CAP_SETPCAP, so it runs while we are still fully privileged. Caps
 * already outside the bounding set are left alone: dropping them again
 * would fail for no gain in a runtime that lacks CAP_SETPCAP. The drop comes
 * first and the read only when it fails: one system call per capability in
 * the usual case rather than two. */
static int drop_bounding(uint64_t keep, int ncaps, brig_error_t *err)
{
    for (int cap = 0; cap < ncaps; cap++) {
        if (keep & (UINT64_C(1) << cap))
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0)
            continue;
        char label[32];
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
            return brig_error_set(err, errno, "drop `%s` from the bounding set",
                                  cap_label(cap, label, sizeof label));
    }
    return 0;
}

/* In a user namespace whose setgroups file says "deny" (the unprivileged
 * way to map a gid), setgroups() always fails with EPERM. */
static bool setgroups_denied(void)
{
    cleanup_file FILE *f = fopen("/proc/self/setgroups", "re");
    char buf[16] = "";
    if (f == NULL || fgets(buf, sizeof buf, f) == NULL)
        return false;
    return strncmp(buf, "deny", 4) == 0;
}

static int set_groups(const struct brig_user *user, brig_error_t *err)
{
    size_t n = user->n_additional_gids;
    /* Always called, even with no additional gids: the runtime's own
     * supplementary groups (often root's) must not leak into the container. */
    if (setgroups(n, (const gid_t *) user->additional_gids) == 0)
        return 0;
    int saved = errno;
    if (saved == EPERM && setgroups_denied()) {
        if (n == 0)
            return 0;
        return brig_error_set(err, EPERM,
                              "setgroups: %zu additional gids requested but "
                              "`/proc/self/setgroups` is `deny` in this user namespace",
                              n);
    }
    return brig_error_set(err, saved, "setgroups (%zu additional gids)", n);
}

static void cap_freep(cap_t *c)
{
    if (*c)
        cap_free(*c);
}

static int set_cap_flag(cap_t c, cap_flag_t flag, uint64_t mask)
{
    cap_value_t list[CAPS_MASK_BITS];
    int n = 0;
    for (int cap = 0; cap < CAPS_MASK_BITS; cap++)
        if (mask & (UINT64_C(1) << cap))
            list[n++] = cap;
    return n == 0 ? 0 : cap_set_flag(c, flag, n, list, CAP_SET);
}

static int set_process_caps(const struct cap_masks *m, brig_error_t *err)
{
    __attribute__((cleanup(cap_freep))) cap_t c = cap_init();
    if (c == NULL)
        return brig_error_set(err, errno, "cap_init");
    if (set_cap_flag(c, CAP_EFFECTIVE, m->effective) < 0
        || set_cap_flag(c, CAP_PERMITTED, m->permitted) < 0
        || set_cap_flag(c, CAP_INHERITABLE, m->inheritable) < 0)
        return brig_error_set(err, errno, "cap_set_flag");
    if (cap_set_proc(c) < 0)
        return brig_error_set(err, errno,
                              "set capabilities (effective %#llx, permitted %#llx, "
                              "inheritable %#llx)",
                              (unsigned long long) m->effective, (unsigned long long) m->permitted,
                              (unsigned long long) m->inheritable);
    return 0;
}

/* The kernel only lets a capability into the ambient set when it is both
 * permitted and inheritable. As in other runtimes, a requested ambient cap
 * outside those sets is skipped rather than failing the container: it
 * could never be used, and the spec asked for less than that anyway. */
static int set_ambient(uint64_t ambient, uint64_t permitted, uint64_t inheritable,
                       brig_error_t *err)
{
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
        /* EINVAL: a kernel without ambient capabilities (before 4.3). */
        if (errno == EINVAL && ambient == 0)
            return 0;
        return brig_error_set(err, errno, "clear the ambient capabilities");
    }
    uint64_t raise = ambient & permitted & inheritable;
    for (int cap = 0; cap < CAPS_MASK_BITS; cap++) {
        if (!(raise & (UINT64_C(1) << cap)))
            continue;
        char label[32];
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
            return brig_error_set(err, errno, "raise ambient capability `%s`",
                                  cap_label(cap, label, sizeof label));
    }
    return 0;
}

int brig_process_drop_privileges(const struct brig_process *process, brig_error_t *err)
{
    const struct brig_user *user = &process->user;
    int ncaps = kernel_cap_count();
    struct cap_masks m;
    /* Parse before touching anything, so a bad name fails cleanly. */
    if (parse_cap_masks(process->capabilities, ncaps, &m, err) < 0)
        return -1;

    /* Without KEEPCAPS, setresuid() away from uid 0 would empty the
     * permitted set, and the capabilities the spec grants to a non-root
     * user could not be set afterwards. */
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        return brig_error_set(err, errno, "prctl(PR_SET_KEEPCAPS, 1)");

    /* The bounding set limits what any later execve() of a file with
     * capabilities can gain; it is shrunk first, while CAP_SETPCAP is
     * still effective. */
    if (drop_bounding(m.bounding, ncaps, err) < 0)
        return -1;

    /* Groups before gid before uid: each step needs CAP_SETGID/CAP_SETUID
     * in the effective set, which the uid change clears. */
    if (set_groups(user, err) < 0)
        return -1;
    if (setresgid(user->gid, user->gid, user->gid) < 0)
        return brig_error_set(err, errno, "setresgid(%u)", user->gid);
    if (setresuid(user->uid, user->uid, user->uid) < 0)
        return brig_error_set(err, errno, "setresuid(%u)", user->uid);

    /* Permitted survived thanks to KEEPCAPS; now narrow it to exactly what
     * the spec asks for and make the effective set match. */
    if (set_process_caps(&m, err) < 0)
        return -1;

    /* Ambient capabilities are what a non-root process keeps across
     * execve() of an ordinary binary; they need inheritable to be set. */
    if (set_ambient(m.ambient, m.permitted, m.inheritable, err) < 0)
        return -1;

    if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
        return brig_error_set(err, errno, "prctl(PR_SET_KEEPCAPS, 0)");

    /* no_new_privs stops setuid binaries and file capabilities from
     * raising privileges at execve(); it is also what lets an
     * unprivileged process install a seccomp filter. */
    if (process->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return brig_error_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");

    umask(user->has_umask ? (mode_t) user->umask : 0022);
    return 0;
}
