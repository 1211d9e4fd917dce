/* Mount options of config.json → mount(2) flags, propagation and data.
 * Pure: no system calls, so every rule here is covered by unit tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "rootfs/mounts.h"

enum option_kind {
    OPT_SET,   /* flags |= value */
    OPT_CLEAR, /* flags &= ~value, remembered in clear */
    OPT_PROPAGATION,
    OPT_REC_SET, /* mount_setattr attr_set */
    OPT_REC_CLEAR,
    OPT_REC_ATIME, /* one of the MOUNT_ATTR__ATIME values, replacing the others */
    OPT_COPY_UP,   /* tmpfs over a directory starts with a copy of its contents */
};

struct option {
    const char *name;
    enum option_kind kind;
    unsigned long long value;
};

/* The vocabulary of mount(8) and of runc/crun configs. */
static const struct option options[] = {
    { "defaults", OPT_SET, 0 },
    { "ro", OPT_SET, MS_RDONLY },
    { "rw", OPT_CLEAR, MS_RDONLY },
    { "nosuid", OPT_SET, MS_NOSUID },
    { "suid", OPT_CLEAR, MS_NOSUID },
    { "nodev", OPT_SET, MS_NODEV },
    { "dev", OPT_CLEAR, MS_NODEV },
    { "noexec", OPT_SET, MS_NOEXEC },
    { "exec", OPT_CLEAR, MS_NOEXEC },
    { "sync", OPT_SET, MS_SYNCHRONOUS },
    { "async", OPT_CLEAR, MS_SYNCHRONOUS },
    { "dirsync", OPT_SET, MS_DIRSYNC },
    { "remount", OPT_SET, MS_REMOUNT },
    { "mand", OPT_SET, MS_MANDLOCK },
    { "nomand", OPT_CLEAR, MS_MANDLOCK },
    { "noatime", OPT_SET, MS_NOATIME },
    { "atime", OPT_CLEAR, MS_NOATIME },
    { "nodiratime", OPT_SET, MS_NODIRATIME },
    { "diratime", OPT_CLEAR, MS_NODIRATIME },
    { "relatime", OPT_SET, MS_RELATIME },
    { "norelatime", OPT_CLEAR, MS_RELATIME },
    { "strictatime", OPT_SET, MS_STRICTATIME },
    { "nostrictatime", OPT_CLEAR, MS_STRICTATIME },
    { "lazytime", OPT_SET, MS_LAZYTIME },
    { "nolazytime", OPT_CLEAR, MS_LAZYTIME },
    { "iversion", OPT_SET, MS_I_VERSION },
    { "noiversion", OPT_CLEAR, MS_I_VERSION },
    { "silent", OPT_SET, MS_SILENT },
    { "loud", OPT_CLEAR, MS_SILENT },
    { "nosymfollow", OPT_SET, MS_NOSYMFOLLOW },
    { "symfollow", OPT_CLEAR, MS_NOSYMFOLLOW },
    { "bind", OPT_SET, MS_BIND },
    { "rbind", OPT_SET, MS_BIND | MS_REC },
    { "shared", OPT_PROPAGATION, MS_SHARED },
    { "rshared", OPT_PROPAGATION, MS_SHARED | MS_REC },
    { "slave", OPT_PROPAGATION, MS_SLAVE },
    { "rslave", OPT_PROPAGATION, MS_SLAVE | MS_REC },
    { "private", OPT_PROPAGATION, MS_PRIVATE },
    { "rprivate", OPT_PROPAGATION, MS_PRIVATE | MS_REC },
    { "unbindable", OPT_PROPAGATION, MS_UNBINDABLE },
    { "runbindable", OPT_PROPAGATION, MS_UNBINDABLE | MS_REC },
    { "rro", OPT_REC_SET, MOUNT_ATTR_RDONLY },
    { "rrw", OPT_REC_CLEAR, MOUNT_ATTR_RDONLY },
    { "rnosuid", OPT_REC_SET, MOUNT_ATTR_NOSUID },
    { "rsuid", OPT_REC_CLEAR, MOUNT_ATTR_NOSUID },
    { "rnodev", OPT_REC_SET, MOUNT_ATTR_NODEV },
    { "rdev", OPT_REC_CLEAR, MOUNT_ATTR_NODEV },
    { "rnoexec", OPT_REC_SET, MOUNT_ATTR_NOEXEC },
    { "rexec", OPT_REC_CLEAR, MOUNT_ATTR_NOEXEC },
    { "rnodiratime", OPT_REC_SET, MOUNT_ATTR_NODIRATIME },
    { "rdiratime", OPT_REC_CLEAR, MOUNT_ATTR_NODIRATIME },
    { "rnosymfollow", OPT_REC_SET, MOUNT_ATTR_NOSYMFOLLOW },
    { "rsymfollow", OPT_REC_CLEAR, MOUNT_ATTR_NOSYMFOLLOW },
    { "rrelatime", OPT_REC_ATIME, MOUNT_ATTR_RELATIME },
    { "rnoatime", OPT_REC_ATIME, MOUNT_ATTR_NOATIME },
    { "rstrictatime", OPT_REC_ATIME, MOUNT_ATTR_STRICTATIME },
    /* runc's and crun's extension; podman asks for it on every tmpfs it adds
     * (--tmpfs, --read-only). Never passed to the kernel, which refuses it. */
    { "tmpcopyup", OPT_COPY_UP, 1 },
    { "notmpcopyup", OPT_COPY_UP, 0 },
};

#define N_OPTIONS (sizeof options / sizeof options[0])

const char *const *brig_mount_option_names(void)
{
    static const char *names[N_OPTIONS + 1];
    if (names[0] == NULL)
        for (size_t i = 0; i < N_OPTIONS; i++)
            names[i] = options[i].name;
    return names;
}

static const struct option *find_option(const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

static int append_data(char **data, const char *opt)
{
    size_t old = *data ? strlen(*data) : 0;
    char *grown = realloc(*data, old + strlen(opt) + 2);
    if (grown == NULL)
        return -1;
    if (old > 0)
        grown[old++] = ',';
    strcpy(grown + old, opt);
    *data = grown;
    return 0;
}

/* Later options win over earlier ones, as with mount(8). */
static void apply_option(const struct option *o, struct brig_mount_flags *out)
{
    switch (o->kind) {
    case OPT_SET:
        out->flags |= o->value;
        out->clear &= ~o->value;
        break;
    case OPT_CLEAR:
        out->flags &= ~o->value;
        out->clear |= o->value;
        break;
    case OPT_PROPAGATION:
        /* One propagation type per mount(2) call; the last one named wins. */
        out->propagation = o->value;
        break;
    case OPT_REC_SET:
        out->rec_attr_set |= o->value;
        out->rec_attr_clr &= ~o->value;
        break;
    case OPT_REC_CLEAR:
        out->rec_attr_clr |= o->value;
        out->rec_attr_set &= ~o->value;
        break;
    case OPT_REC_ATIME:
        out->rec_attr_set = (out->rec_attr_set & ~MOUNT_ATTR__ATIME) | o->value;
        out->rec_attr_clr |= MOUNT_ATTR__ATIME;
        break;
    case OPT_COPY_UP:
        out->copy_up = o->value != 0;
        break;
    }
}

int brig_mount_parse_options(const struct brig_strv *opts, struct brig_mount_flags *out,
                             brig_error_t *err)
{
    *out = (struct brig_mount_flags){ 0 };
    for (size_t i = 0; i < opts->n; i++) {
        const char *name = opts->v[i];
        const struct option *o = find_option(name);
        if (o != NULL) {
            apply_option(o, out);
            continue;
        }
        /* id-mapped mounts need a user namespace fd we don't build; passing
         * the option on would silently mount with the wrong ownership. */
        if (strcmp(name, "idmap") == 0 || strcmp(name, "ridmap") == 0) {
            brig_mount_flags_free(out);
            return brig_error_set(err, 0, "mount option `%s` is not supported", name);
        }
        /* "x-..." options are for user space (mount(8), systemd), never the
         * kernel. */
        if (strncmp(name, "x-", 2) == 0 || name[0] == '\0')
            continue;
        if (append_data(&out->data, name) < 0) {
            brig_mount_flags_free(out);
            return brig_error_set(err, ENOMEM, "mount options");
        }
    }
    return 0;
}

void brig_mount_flags_free(struct brig_mount_flags *f)
{
    free(f->data);
    f->data = NULL;
}

int brig_propagation_from_name(const char *name, unsigned long *out, brig_error_t *err)
{
    const struct option *o = name ? find_option(name) : NULL;
    if (o == NULL || o->kind != OPT_PROPAGATION)
        return brig_error_set(err, EINVAL, "rootfsPropagation `%s`: unknown propagation",
                              name ? name : "(null)");
    /* The whole tree, like crun: a non-recursive "slave" on "/" alone would
     * leave every other mount still propagating to the host. */
    *out = o->value | MS_REC;
    return 0;
}
