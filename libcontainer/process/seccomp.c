/* linux.seccomp → a libseccomp filter; loading it; the notify fd hand-over.
 * The tables below are the single source for both the compiler and
 * `brig features`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "process/seccomp.h"
#include "process/seccomp_enosys.h"
#include "process/seccomp_int.h"

/* The kernel's seccomp(2) flag bits (linux/seccomp.h), spelled out so the
 * build doesn't depend on how new the installed kernel headers are. */
#define FLAG_TSYNC (1u << 0)
#define FLAG_LOG (1u << 1)
#define FLAG_SPEC_ALLOW (1u << 2)
#define FLAG_NEW_LISTENER (1u << 3)
#define FLAG_WAIT_KILLABLE_RECV (1u << 5)
#define SET_MODE_FILTER 1

/* errnoRet goes into the 16-bit data of the filter's return value, and the
 * kernel caps an errno at MAX_ERRNO: anything larger would be silently
 * changed, so refuse it. */
#define MAX_ERRNO_RET 4095
#define MAX_ARGS 6

/* ---- tables --------------------------------------------------------------------------- */

enum ret_kind { RET_NONE, RET_ERRNO, RET_TRACE };

#define ACTIONS(X)                                              \
    X("SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD, RET_NONE)          \
    X("SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, RET_NONE) \
    X("SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, RET_NONE)   \
    X("SCMP_ACT_TRAP", SCMP_ACT_TRAP, RET_NONE)                 \
    X("SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), RET_ERRNO)           \
    X("SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), RET_TRACE)           \
    X("SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, RET_NONE)               \
    X("SCMP_ACT_LOG", SCMP_ACT_LOG, RET_NONE)                   \
    X("SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY, RET_NONE)

#define OPERATORS(X)              \
    X("SCMP_CMP_NE", SCMP_CMP_NE) \
    X("SCMP_CMP_LT", SCMP_CMP_LT) \
    X("SCMP_CMP_LE", SCMP_CMP_LE) \
    X("SCMP_CMP_EQ", SCMP_CMP_EQ) \
    X("SCMP_CMP_GE", SCMP_CMP_GE) \
    X("SCMP_CMP_GT", SCMP_CMP_GT) \
    X("SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ)

/* Spec name → libseccomp's token for seccomp_arch_resolve_name(). */
#define ARCHES(X)                             \
    X("SCMP_ARCH_X86", "x86")                 \
    X("SCMP_ARCH_X86_64", "x86_64")           \
    X("SCMP_ARCH_X32", "x32")                 \
    X("SCMP_ARCH_ARM", "arm")                 \
    X("SCMP_ARCH_AARCH64", "aarch64")         \
    X("SCMP_ARCH_MIPS", "mips")               \
    X("SCMP_ARCH_MIPS64", "mips64")           \
    X("SCMP_ARCH_MIPS64N32", "mips64n32")     \
    X("SCMP_ARCH_MIPSEL", "mipsel")           \
    X("SCMP_ARCH_MIPSEL64", "mipsel64")       \
    X("SCMP_ARCH_MIPSEL64N32", "mipsel64n32") \
    X("SCMP_ARCH_PPC", "ppc")                 \
    X("SCMP_ARCH_PPC64", "ppc64")             \
    X("SCMP_ARCH_PPC64LE", "ppc64le")         \
    X("SCMP_ARCH_S390", "s390")               \
    X("SCMP_ARCH_S390X", "s390x")             \
    X("SCMP_ARCH_PARISC", "parisc")           \
    X("SCMP_ARCH_PARISC64", "parisc64")       \
    X("SCMP_ARCH_RISCV64", "riscv64")         \
    X("SCMP_ARCH_LOONGARCH64", "loongarch64") \
    X("SCMP_ARCH_M68K", "m68k")               \
    X("SCMP_ARCH_SH", "sh")                   \
    X("SCMP_ARCH_SHEB", "sheb")

/* libseccomp grew the attribute for WAIT_KILLABLE_RECV in 2.6. */
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 6)
#define ATTR_WAITKILL SCMP_FLTATR_CTL_WAITKILL
#else
#define ATTR_WAITKILL -1
#endif

#define FLAGS(X)                                                              \
    X("SECCOMP_FILTER_FLAG_TSYNC", SCMP_FLTATR_CTL_TSYNC, FLAG_TSYNC)         \
    X("SECCOMP_FILTER_FLAG_LOG", SCMP_FLTATR_CTL_LOG, FLAG_LOG)               \
    X("SECCOMP_FILTER_FLAG_SPEC_ALLOW", SCMP_FLTATR_CTL_SSB, FLAG_SPEC_ALLOW) \
    X("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", ATTR_WAITKILL,                \
      FLAG_WAIT_KILLABLE_RECV | FLAG_NEW_LISTENER)

#define NAME_OF(name, ...) name,

struct action_def {
    const char *name;
    uint32_t action;
    enum ret_kind ret;
};
#define ACTION_DEF(name, action, ret) { name, action, ret },
static const struct action_def action_defs[] = { ACTIONS(ACTION_DEF) };
static const char *const action_names[] = { ACTIONS(NAME_OF) NULL };

struct op_def {
    const char *name;
    enum scmp_compare op;
};
#define OP_DEF(name, op) { name, op },
static const struct op_def op_defs[] = { OPERATORS(OP_DEF) };
static const char *const op_names[] = { OPERATORS(NAME_OF) NULL };

struct arch_def {
    const char *name;
    const char *token;
};
#define ARCH_DEF(name, token) { name, token },
static const struct arch_def arch_defs[] = { ARCHES(ARCH_DEF) };
static const char *const arch_names[] = { ARCHES(NAME_OF) NULL };

struct flag_def {
    const char *name;
    int attr;           /* -1: this libseccomp can't set it */
    unsigned int probe; /* seccomp(2) flags that show kernel support */
};
#define FLAG_DEF(name, attr, probe) { name, (int) (attr), probe },
static const struct flag_def flag_defs[] = { FLAGS(FLAG_DEF) };
static const char *const flag_names[] = { FLAGS(NAME_OF) NULL };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *const *brig_seccomp_action_names(void)
{
    return action_names;
}

const char *const *brig_seccomp_operator_names(void)
{
    return op_names;
}

const char *const *brig_seccomp_arch_names(void)
{
    return arch_names;
}

const char *const *brig_seccomp_flag_names(void)
{
    return flag_names;
}

/* seccomp(SET_MODE_FILTER, flags, NULL) checks the flags before it reads
 * the program: EFAULT means the flags are understood, EINVAL that they
 * aren't. Nothing is installed either way. */
static bool kernel_has_flags(unsigned int flags)
{
    return syscall(SYS_seccomp, SET_MODE_FILTER, flags, NULL) < 0 && errno == EFAULT;
}

static bool flag_supported(const struct flag_def *d)
{
    return d->attr >= 0 && kernel_has_flags(d->probe);
}

const char *const *brig_seccomp_supported_flag_names(void)
{
    /* Probed once; concurrent first calls compute the same answer. */
    static const char *supported[N_OF(flag_defs) + 1];
    static bool probed;
    if (!probed) {
        size_t n = 0;
        for (size_t i = 0; i < N_OF(flag_defs); i++)
            if (flag_supported(&flag_defs[i]))
                supported[n++] = flag_defs[i].name;
        supported[n] = NULL;
        probed = true;
    }
    return supported;
}

/* ---- compiling ------------------------------------------------------------------------ */

void brig_seccomp_free(struct brig_seccomp_filter *f)
{
    if (f == NULL)
        return;
    if (f->ctx)
        seccomp_release(f->ctx);
    free(f->prog);
    free(f);
}

int brig_seccomp_has_notify(const struct brig_seccomp_filter *f)
{
    return f && f->notify;
}

/* `where` is the JSON path of the object holding the action ("linux.seccomp"
 * or "linux.seccomp.syscalls[3]"); errno_key names its errno field. */
static int resolve_action(const char *where, const char *action_key, const char *errno_key,
                          const char *name, bool has_errno, uint32_t errno_ret, uint32_t *out,
                          brig_error_t *err)
{
    const struct action_def *d = NULL;
    for (size_t i = 0; i < N_OF(action_defs) && d == NULL; i++)
        if (strcmp(action_defs[i].name, name) == 0)
            d = &action_defs[i];
    if (d == NULL)
        return brig_error_set(err, 0, "%s.%s: unknown action `%s`", where, action_key, name);
    if (d->ret == RET_NONE) {
        /* The runtime spec: an errno for an action that can't return one
         * is an error, not something to ignore. */
        if (has_errno)
            return brig_error_set(err, 0, "%s.%s: not valid with action `%s`", where, errno_key,
                                  name);
        *out = d->action;
        return 0;
    }
    if (has_errno && errno_ret > MAX_ERRNO_RET)
        return brig_error_set(err, 0, "%s.%s: %u is out of range (at most %d)", where, errno_key,
                              errno_ret, MAX_ERRNO_RET);
    uint32_t e = has_errno ? errno_ret : EPERM;
    *out = d->ret == RET_ERRNO ? SCMP_ACT_ERRNO(e) : SCMP_ACT_TRACE(e);
    return 0;
}

static int add_arches(scmp_filter_ctx ctx, const struct brig_strv *arches, brig_error_t *err)
{
    for (size_t i = 0; i < arches->n; i++) {
        const struct arch_def *d = NULL;
        for (size_t j = 0; j < N_OF(arch_defs) && d == NULL; j++)
            if (strcmp(arch_defs[j].name, arches->v[i]) == 0)
                d = &arch_defs[j];
        if (d == NULL)
            return brig_error_set(err, 0,
                                  "linux.seccomp.architectures[%zu]: unknown architecture `%s`", i,
                                  arches->v[i]);
        uint32_t token = seccomp_arch_resolve_name(d->token);
        if (token == 0)
            continue; /* this libseccomp predates it: no such process can run here */
        int rc = seccomp_arch_add(ctx, token);
        if (rc < 0 && rc != -EEXIST)
            return brig_error_set(err, -rc, "linux.seccomp.architectures[%zu]: add `%s`", i,
                                  arches->v[i]);
    }
    return 0;
}

static int set_flags(scmp_filter_ctx ctx, const struct brig_strv *flags, bool notify,
                     unsigned int *kernel_flags, brig_error_t *err)
{
    for (size_t i = 0; i < flags->n; i++) {
        const struct flag_def *d = NULL;
        for (size_t j = 0; j < N_OF(flag_defs) && d == NULL; j++)
            if (strcmp(flag_defs[j].name, flags->v[i]) == 0)
                d = &flag_defs[j];
        if (d == NULL)
            return brig_error_set(err, 0, "linux.seccomp.flags[%zu]: unknown flag `%s`", i,
                                  flags->v[i]);
        /* Known but not available here: skipped, like runc, so that one
         * profile serves old and new kernels; `brig features` tells. */
        if (!flag_supported(d))
            continue;
        /* WAIT_KILLABLE_RECV qualifies the listener; the kernel refuses it
         * on a filter without one. */
        if ((d->probe & FLAG_NEW_LISTENER) && !notify)
            continue;
        int rc = seccomp_attr_set(ctx, (enum scmp_filter_attr) d->attr, 1);
        if (rc < 0)
            return brig_error_set(err, -rc, "linux.seccomp.flags[%zu]: set `%s`", i, flags->v[i]);
        *kernel_flags |= d->probe;
    }
    if (notify)
        *kernel_flags |= FLAG_NEW_LISTENER;
    return 0;
}

static int convert_args(const struct brig_seccomp_syscall *sc, size_t i, struct scmp_arg_cmp *cmps,
                        bool *same_index, brig_error_t *err)
{
    unsigned int seen = 0;
    *same_index = false;
    for (size_t j = 0; j < sc->n_args; j++) {
        const struct brig_seccomp_arg *a = &sc->args[j];
        const struct op_def *d = NULL;
        for (size_t k = 0; k < N_OF(op_defs) && d == NULL; k++)
            if (strcmp(op_defs[k].name, a->op) == 0)
                d = &op_defs[k];
        if (d == NULL)
            return brig_error_set(err, 0,
                                  "linux.seccomp.syscalls[%zu].args[%zu].op: unknown operator `%s`",
                                  i, j, a->op);
        if (a->index >= MAX_ARGS)
            return brig_error_set(err, 0,
                                  "linux.seccomp.syscalls[%zu].args[%zu].index: %u is out of range"
                                  " (at most %d)",
                                  i, j, a->index, MAX_ARGS - 1);
        if (seen & (1u << a->index))
            *same_index = true;
        seen |= 1u << a->index;
        /* For MASKED_EQ, value is the mask and valueTwo the datum:
         * (arg & value) == valueTwo. */
        cmps[j] = (struct scmp_arg_cmp){ .arg = a->index,
                                         .op = d->op,
                                         .datum_a = a->value,
                                         .datum_b = a->value_two };
    }
    return 0;
}

/* libseccomp ANDs the conditions of one rule. runc's convention, which
 * profiles in the wild rely on: when two conditions test the same argument
 * (which an AND would make contradictory for EQ), each condition becomes a
 * rule of its own, so they are ORed. */
static int add_syscall_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, size_t i,
                            const struct scmp_arg_cmp *cmps, size_t n, bool same_index,
                            brig_error_t *err)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0; /* unknown to this libseccomp: skipped, as the spec allows */
    size_t rules = same_index ? n : 1;
    for (size_t r = 0; r < rules; r++) {
        int rc = same_index ? seccomp_rule_add_array(ctx, action, nr, 1, &cmps[r])
                            : seccomp_rule_add_array(ctx, action, nr, (unsigned int) n, cmps);
        if (rc < 0)
            return brig_error_set(err, -rc, "linux.seccomp.syscalls[%zu]: add a rule for `%s`", i,
                                  name);
    }
    return 0;
}

static int add_rules(struct brig_seccomp_filter *f, const struct brig_seccomp *s, uint32_t def,
                     brig_error_t *err)
{
    for (size_t i = 0; i < s->n_syscalls; i++) {
        const struct brig_seccomp_syscall *sc = &s->syscalls[i];
        char where[64];
        snprintf(where, sizeof where, "linux.seccomp.syscalls[%zu]", i);
        uint32_t action;
        if (resolve_action(where, "action", "errnoRet", sc->action, sc->has_errno_ret,
                           sc->errno_ret, &action, err)
            < 0)
            return -1;
        if (action == SCMP_ACT_NOTIFY && s->listener_path == NULL)
            return brig_error_set(err, 0,
                                  "%s.action: SCMP_ACT_NOTIFY needs linux.seccomp.listenerPath",
                                  where);
        cleanup_free struct scmp_arg_cmp *cmps = calloc(sc->n_args + 1, sizeof *cmps);
        if (cmps == NULL)
            return brig_error_set(err, ENOMEM, "%s", where);
        bool same_index;
        if (convert_args(sc, i, cmps, &same_index, err) < 0)
            return -1;
        /* libseccomp refuses a rule that repeats the default; it is a no-op. */
        if (action == def)
            continue;
        if (action == SCMP_ACT_NOTIFY)
            f->notify = true;
        for (size_t k = 0; k < sc->names.n; k++)
            if (add_syscall_rule(f->ctx, action, sc->names.v[k], i, cmps, sc->n_args, same_index,
                                 err)
                < 0)
                return -1;
    }
    return 0;
}

int brig_seccomp_compile(const struct brig_seccomp *s, struct brig_seccomp_filter **out,
                         brig_error_t *err)
{
    *out = NULL;
    uint32_t def;
    if (resolve_action("linux.seccomp", "defaultAction", "defaultErrnoRet", s->default_action,
                       s->has_default_errno_ret, s->default_errno_ret, &def, err)
        < 0)
        return -1;
    /* The process would wait on its own execve before it could hand the
     * listener fd to anyone. */
    if (def == SCMP_ACT_NOTIFY)
        return brig_error_set(err, 0,
                              "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY can't be"
                              " the default action");

    cleanup_seccomp_filter struct brig_seccomp_filter *f = calloc(1, sizeof *f);
    if (f == NULL)
        return brig_error_set(err, ENOMEM, "seccomp filter");
    f->ctx = seccomp_init(def);
    if (f->ctx == NULL)
        return brig_error_set(err, 0,
                              "linux.seccomp.defaultAction: `%s` is not supported by this kernel",
                              s->default_action);
    /* no_new_privs is process.noNewPrivileges' decision, not libseccomp's
     * (which would set it on load); and report the kernel's own errno. */
    int rc = seccomp_attr_set(f->ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (rc == 0)
        rc = seccomp_attr_set(f->ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
    /* The syscalls in a binary tree, not a list: the kernel runs the
     * filter once per syscall number when it attaches it (its cache of
     * the always-allowed ones), and every process pays for that walk. */
    if (rc == 0)
        rc = seccomp_attr_set(f->ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc < 0)
        return brig_error_set(err, -rc, "seccomp filter attributes");
    if (add_arches(f->ctx, &s->architectures, err) < 0 || add_rules(f, s, def, err) < 0
        || set_flags(f->ctx, &s->flags, f->notify, &f->kernel_flags, err) < 0)
        return -1;
    f->n_enosys = brig_seccomp_enosys_arches(f->ctx, s, def, f->enosys);
    *out = brig_steal_ptr(f);
    return 0;
}

/* ---- loading -------------------------------------------------------------------------- */

int brig_seccomp_load(struct brig_seccomp_filter *f, int *notify_fd, brig_error_t *err)
{
    *notify_fd = -1;
    if (f->prog == NULL && f->n_enosys > 0
        && brig_seccomp_program(f->ctx, f->enosys, f->n_enosys, &f->prog, &f->len, err) < 0)
        return -1;
    if (f->prog) {
        int listener = -1;
        if (brig_seccomp_load_program(f->prog, f->len, f->kernel_flags, &listener, err) < 0)
            return -1;
        if (listener < 0)
            return 0;
        *notify_fd = fcntl(listener, F_DUPFD_CLOEXEC, 3);
        close(listener);
        return *notify_fd < 0 ? brig_error_set(err, errno, "seccomp notify fd") : 0;
    }
    int rc = seccomp_load(f->ctx);
    if (rc == -EACCES)
        return brig_error_set(err, EACCES,
                              "load seccomp filter (it needs no_new_privs or CAP_SYS_ADMIN)");
    if (rc < 0)
        return brig_error_set(err, -rc, "load seccomp filter");
    if (!f->notify)
        return 0;
    int fd = seccomp_notify_fd(f->ctx);
    if (fd < 0)
        return brig_error_set(err, fd == -1 ? EBADF : -fd, "seccomp notify fd");
    /* libseccomp keeps its copy and closes it on release: the caller gets
     * one of its own. */
    *notify_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (*notify_fd < 0)
        return brig_error_set(err, errno, "seccomp notify fd");
    return 0;
}

/* ---- the listener --------------------------------------------------------------------- */

/* A JSON string literal of s, written to f. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The runtime spec's "container process state". */
static int process_state_json(const char *metadata, pid_t pid, const char *state_json, char **out,
                              size_t *len, brig_error_t *err)
{
    *out = NULL;
    FILE *f = open_memstream(out, len);
    if (f == NULL)
        return brig_error_set(err, errno, "seccomp listener message");
    fprintf(f, "{\"ociVersion\":\"%s\",\"fds\":[\"seccompFd\"],\"pid\":%d,", BRIG_OCI_VERSION,
            (int) pid);
    if (metadata) {
        fputs("\"metadata\":", f);
        json_string(f, metadata);
        fputc(',', f);
    }
    fprintf(f, "\"state\":%s}", state_json);
    if (fclose(f) != 0) {
        free(*out);
        *out = NULL;
        return brig_error_set(err, ENOMEM, "seccomp listener message");
    }
    return 0;
}

int brig_seccomp_send_to_listener(const char *listener_path, const char *metadata, int notify_fd,
                                  pid_t pid, const char *state_json, brig_error_t *err)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(listener_path) >= sizeof addr.sun_path)
        return brig_error_set(err, ENAMETOOLONG, "seccomp listener `%s`", listener_path);
    strcpy(addr.sun_path, listener_path);

    cleanup_free char *msg = NULL;
    size_t len;
    if (process_state_json(metadata, pid, state_json ? state_json : "{}", &msg, &len, err) < 0)
        return -1;
    cleanup_close int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return brig_error_set(err, errno, "seccomp listener socket");
    if (connect(sock, (struct sockaddr *) &addr, sizeof addr) < 0)
        return brig_error_set(err, errno, "connect to the seccomp listener `%s`", listener_path);
    /* A stream: the fd rides with the first byte, the rest follows. */
    if (brig_fd_send(sock, msg, len, notify_fd) < 0)
        return brig_error_set(err, errno, "send to the seccomp listener `%s`", listener_path);
    return 0;
}
