#define _GNU_SOURCE
#include "rootfs/idmap_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "process/idmap.h"
#include "rootfs/mountinfo.h"

/* The next item of `s` up to an unescaped `sep` (a backslash before `sep`
 * makes it the character itself; other escapes stay for the next split),
 * into a new string; *s moves past it. */
static char *next_item(const char **s, char sep)
{
    const char *p = *s;
    char *out = malloc(strlen(p) + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    for (; *p && *p != sep; p++) {
        if (*p == '\\' && p[1] == sep)
            p++;
        out[n++] = *p;
    }
    out[n] = '\0';
    *s = *p ? p + 1 : p;
    return out;
}

static int push(char ***v, size_t *n, char *item)
{
    char **bigger = item ? realloc(*v, (*n + 1) * sizeof **v) : NULL;
    if (bigger == NULL) {
        free(item);
        return -1;
    }
    *v = bigger;
    bigger[(*n)++] = item;
    return 0;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* One option's layers onto *v: `lowerdir=a:b`, `lowerdir+=a`. */
static int option_layers(const char *opt, char ***v, size_t *n)
{
    if (strncmp(opt, "lowerdir+=", 10) == 0)
        return push(v, n, strdup(opt + 10));
    if (strncmp(opt, "lowerdir=", 9) != 0)
        return 0;
    for (const char *p = opt + 9; *p;)
        if (push(v, n, next_item(&p, ':')) < 0)
            return -1;
    return 0;
}

int brig_overlay_layers(const char *options, char ***layers, size_t *n, brig_error_t *err)
{
    /* v[0] is kept for the upper layer; v + 1 are the lower ones. */
    char **v = calloc(1, sizeof *v);
    size_t count = 1;
    int r = v ? 0 : -1;
    for (const char *p = options; r == 0 && *p;) {
        char *opt = next_item(&p, ',');
        if (opt == NULL)
            r = -1;
        else if (strncmp(opt, "upperdir=", 9) == 0)
            r = (free(v[0]), v[0] = strdup(opt + 9)) ? 0 : -1;
        else
            r = option_layers(opt, &v, &count);
        free(opt);
    }
    if (r < 0) {
        if (v)
            free_strings(v, count);
        return brig_error_set(err, ENOMEM, "overlay layers");
    }
    /* No upper layer: the lower ones alone. */
    if (v[0] == NULL)
        memmove(v, v + 1, --count * sizeof *v);
    for (size_t i = 0; i < count; i++) {
        if (v[i][0] != '/') {
            brig_error_set(err, 0, "overlay layer `%s` is relative to its mounter's directory",
                           v[i]);
            free_strings(v, count);
            return -1;
        }
    }
    *layers = v;
    *n = count;
    return 0;
}

int brig_overlay_options_at(const char *path, char **options, brig_error_t *err)
{
    cleanup_file FILE *f = fopen("/proc/self/mountinfo", "re");
    cleanup_free char *line = NULL;
    size_t cap = 0;
    int found = 0;
    if (f == NULL)
        return brig_error_set(err, errno, "open `/proc/self/mountinfo`");
    *options = NULL;
    /* The last one listed wins: it is on top. */
    while (getline(&line, &cap, f) > 0) {
        struct brig_mountinfo e;
        if (!brig_mountinfo_parse_line(line, &e) || strcmp(e.mountpoint, path) != 0)
            continue;
        free(*options);
        *options = NULL;
        found = strcmp(e.fstype, "overlay") == 0;
        if (found && (*options = strdup(e.super_options)) == NULL)
            return brig_error_set(err, ENOMEM, "read `/proc/self/mountinfo`");
    }
    return found;
}

/* The layers bound id-mapped at SCRATCH/0.., then the overlay of them on
 * `target`; the binds go again either way (the overlay holds its own
 * references). */
static int mount_layers(char **layers, size_t n, const char *target, const char *scratch,
                        int userns_fd, brig_error_t *err)
{
    cleanup_close int dir = open(scratch, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return brig_error_set(err, errno, "open `%s`", scratch);
    char path[4096], data[4096];
    size_t used = (size_t) snprintf(data, sizeof data, "lowerdir=");
    size_t made = 0;
    int r = 0;
    for (; r == 0 && made < n; made++) {
        snprintf(path, sizeof path, "%s/%zu", scratch, made);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            r = brig_error_set(err, errno, "mkdir `%s`", path);
        else if (brig_idmap_bind(layers[made], path, userns_fd, true, err) < 0)
            r = -1;
        else if ((used += (size_t) snprintf(data + used, sizeof data - used,
                                            "%s/proc/self/fd/%d/%zu", made ? ":" : "", dir, made))
                 >= sizeof data)
            r = brig_error_set(err, E2BIG, "overlay of %zu layers", n);
    }
    if (r == 0 && mount("overlay", target, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, data) < 0)
        r = brig_error_set(err, errno, "mount the id-mapped overlay on `%s`", target);
    for (size_t i = 0; i < made; i++) {
        snprintf(path, sizeof path, "%s/%zu", scratch, i);
        umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
        rmdir(path);
    }
    return r;
}

int brig_idmap_tree(const char *source, const char *target, const char *scratch, int userns_fd,
                    brig_error_t *err)
{
    cleanup_free char *options = NULL;
    int r = brig_overlay_options_at(source, &options, err);
    if (r <= 0)
        return r < 0 ? -1 : brig_idmap_bind(source, target, userns_fd, true, err);
    char **layers = NULL;
    size_t n = 0;
    if (brig_overlay_layers(options, &layers, &n, err) < 0)
        return brig_error_wrap(err, "overlay at `%s`", source);
    if (n == 0)
        r = brig_error_set(err, 0, "overlay at `%s`: no layers in `%s`", source, options);
    else if (n == 1)
        r = brig_idmap_bind(layers[0], target, userns_fd, true, err);
    else
        r = mount_layers(layers, n, target, scratch, userns_fd, err);
    free_strings(layers, n);
    return r;
}
