#define _GNU_SOURCE
#include "process/sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "base/cleanup.h"

int brig_sysctl_key_to_path(const char *key, char **out, brig_error_t *err)
{
    *out = NULL;
    if (key == NULL || key[0] == '\0')
        return brig_error_set(err, 0, "sysctl: empty key");
    size_t len = strlen(key);
    /* A '/' or an empty component ("a..b", ".a", "a.") is either a typo or
     * an attempt to walk out of /proc/sys once dots become slashes. */
    if (key[0] == '.' || key[len - 1] == '.' || strstr(key, "..") != NULL)
        return brig_error_set(err, 0, "sysctl `%s`: empty component in key", key);
    if (strchr(key, '/') != NULL)
        return brig_error_set(err, 0, "sysctl `%s`: `/` is not allowed in a key", key);
    char *path = strdup(key);
    if (path == NULL)
        return brig_error_set(err, ENOMEM, "sysctl `%s`", key);
    for (char *p = path; *p; p++)
        if (*p == '.')
            *p = '/';
    *out = path;
    return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Only sysctls that live in a namespace the container owns may be set:
 * anything else would change the host for every other container. IPC
 * sysctls follow the IPC namespace, kernel.hostname/domainname the UTS
 * namespace, net.* the network namespace. Whether the container really has
 * its own network namespace is known only to the caller, so net.* passes. */
int brig_sysctl_check_namespaced(const char *key, brig_error_t *err)
{
    static const char *const exact[] = {
        "kernel.sem", "kernel.sem_next_id", "kernel.hostname", "kernel.domainname", NULL,
    };
    static const char *const prefixes[] = {
        "kernel.msg", "kernel.shm", "fs.mqueue.", "net.", NULL,
    };
    if (key == NULL || key[0] == '\0')
        return brig_error_set(err, 0, "sysctl: empty key");
    for (size_t i = 0; exact[i]; i++)
        if (strcmp(key, exact[i]) == 0)
            return 0;
    for (size_t i = 0; prefixes[i]; i++)
        if (has_prefix(key, prefixes[i]) && key[strlen(prefixes[i])] != '\0')
            return 0;
    return brig_error_set(err, 0,
                          "sysctl `%s` is not namespaced, refusing to set it from a container",
                          key);
}

/* The namespace a namespaced sysctl belongs to. */
static enum brig_ns_type sysctl_namespace(const char *key)
{
    if (has_prefix(key, "net."))
        return BRIG_NS_NETWORK;
    if (strcmp(key, "kernel.hostname") == 0 || strcmp(key, "kernel.domainname") == 0)
        return BRIG_NS_UTS;
    return BRIG_NS_IPC;
}

int brig_sysctl_validate(const struct brig_spec *spec, brig_error_t *err)
{
    if (spec->linux_ == NULL)
        return 0;
    const struct brig_kv_list *sysctl = &spec->linux_->sysctl;
    for (size_t i = 0; i < sysctl->n; i++) {
        const char *key = sysctl->items[i].key;
        if (brig_sysctl_check_namespaced(key, err) < 0)
            return -1;
        enum brig_ns_type ns = sysctl_namespace(key);
        if (brig_spec_namespace(spec, ns) == NULL)
            return brig_error_set(err, 0,
                                  "sysctl `%s` needs a %s namespace of the container's own; "
                                  "setting it would change the host",
                                  key, brig_ns_type_name(ns));
    }
    return 0;
}

/* Opens the sysctl file below /proc/sys without following any symlink.
 * openat2(RESOLVE_NO_SYMLINKS) covers every component; where it is missing,
 * O_NOFOLLOW still covers the last one, and /proc/sys has no symlinks of
 * its own. */
static int open_sysctl_file(int sysdir, const char *path)
{
#ifdef SYS_openat2
    struct open_how how = {
        .flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int) syscall(SYS_openat2, sysdir, path, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
        return fd;
        /* ENOSYS: old kernel; EPERM: a seccomp filter that blocks openat2. */
#endif
    return openat(sysdir, path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
}

/* The file must be a procfs file: something mounted over /proc or
 * /proc/sys could otherwise redirect a privileged write elsewhere. */
static int check_procfs(int fd)
{
    struct statfs sfs;
    if (fstatfs(fd, &sfs) < 0)
        return -1;
    if (sfs.f_type != PROC_SUPER_MAGIC) {
        errno = EXDEV;
        return -1;
    }
    return 0;
}

static int write_sysctl(int sysdir, const struct brig_kv *kv, brig_error_t *err)
{
    if (brig_sysctl_check_namespaced(kv->key, err) < 0)
        return -1;
    cleanup_free char *path = NULL;
    if (brig_sysctl_key_to_path(kv->key, &path, err) < 0)
        return -1;
    cleanup_close int fd = open_sysctl_file(sysdir, path);
    if (fd < 0)
        return brig_error_set(err, errno, "sysctl `%s`: open `/proc/sys/%s`", kv->key, path);
    if (check_procfs(fd) < 0)
        return brig_error_set(err, errno, "sysctl `%s`: `/proc/sys/%s` is not on procfs", kv->key,
                              path);
    const char *value = kv->value ? kv->value : "";
    size_t len = strlen(value);
    /* A sysctl takes its value in one write; a short write means the
     * kernel did not take all of it. */
    ssize_t n;
    do
        n = write(fd, value, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return brig_error_set(err, errno, "sysctl `%s`: write `%s` to `/proc/sys/%s`", kv->key,
                              value, path);
    if ((size_t) n != len)
        return brig_error_set(err, EIO, "sysctl `%s`: short write of `%s` to `/proc/sys/%s`",
                              kv->key, value, path);
    return 0;
}

int brig_sysctl_apply(const struct brig_kv_list *sysctl, brig_error_t *err)
{
    return brig_sysctl_apply_part(sysctl, BRIG_SYSCTL_ALL, err);
}

bool brig_sysctl_net_early(const struct brig_spec *spec)
{
    const struct brig_namespace *net = brig_spec_namespace(spec, BRIG_NS_NETWORK);
    if (spec->linux_ == NULL || net == NULL || net->path == NULL
        || brig_spec_namespace(spec, BRIG_NS_USER) == NULL)
        return false;
    for (size_t i = 0; i < spec->linux_->sysctl.n; i++)
        if (sysctl_namespace(spec->linux_->sysctl.items[i].key) == BRIG_NS_NETWORK)
            return true;
    return false;
}

int brig_sysctl_apply_part(const struct brig_kv_list *sysctl, enum brig_sysctl_part part,
                           brig_error_t *err)
{
    if (sysctl == NULL || sysctl->n == 0)
        return 0;
    cleanup_close int sysdir = open("/proc/sys", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sysdir < 0)
        return brig_error_set(err, errno, "sysctl: open `/proc/sys`");
    for (size_t i = 0; i < sysctl->n; i++) {
        bool net = sysctl_namespace(sysctl->items[i].key) == BRIG_NS_NETWORK;
        if ((part == BRIG_SYSCTL_NET && !net) || (part == BRIG_SYSCTL_NOT_NET && net))
            continue;
        if (write_sysctl(sysdir, &sysctl->items[i], err) < 0)
            return -1;
    }
    return 0;
}
