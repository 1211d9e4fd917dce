#define _GNU_SOURCE
/* Where the systemd driver puts a container: linux.cgroupsPath
 * "slice:prefix:name" → the unit and its cgroup (systemd.h). */
#include "cgroup/systemd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* What systemd takes in a unit name: letters, digits and ":-_.\", at
 * most 255 bytes in all. */
static bool valid_unit_name(const char *name)
{
    if (*name == '\0' || strlen(name) > 255)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
              || strchr(":-_.\\", *c)))
            return false;
    return true;
}

int brig_systemd_slice_path(const char *slice, char **out, brig_error_t *err)
{
    *out = NULL;
    size_t len = strlen(slice);
    if (len <= strlen(".slice") || !ends_with(slice, ".slice") || !valid_unit_name(slice))
        return brig_error_kind(err, BRIG_E_INPUT, "invalid slice name `%s`", slice);
    if (strcmp(slice, "-.slice") == 0)
        return (*out = strdup("")) ? 0 : brig_error_set(err, ENOMEM, "slice");
    cleanup_free char *base = strndup(slice, len - strlen(".slice"));
    /* every prefix up to a dash is a slice of its own: a-b-c → a, a-b, a-b-c */
    size_t cap = 2 * len * len + 1, used = 0;
    cleanup_free char *path = calloc(1, cap);
    if (base == NULL || path == NULL)
        return brig_error_set(err, ENOMEM, "slice");
    for (char *dash = base;; dash++) {
        dash = strchrnul(dash, '-');
        /* "a--b.slice", "-a.slice" and "a-.slice" name no slice */
        if (dash == base || dash[-1] == '-' || (*dash == '-' && dash[1] == '\0'))
            return brig_error_kind(err, BRIG_E_INPUT, "invalid slice name `%s`", slice);
        used += (size_t) snprintf(path + used, cap - used, "/%.*s.slice", (int) (dash - base),
                                  base);
        if (*dash == '\0')
            break;
    }
    *out = brig_steal_ptr(path);
    return 0;
}

void brig_systemd_scope_free(struct brig_systemd_scope *s)
{
    free(s->unit);
    free(s->slice);
    free(s->path);
    *s = (struct brig_systemd_scope){ 0 };
}

/* The three fields of "slice:prefix:name" (copies), or an error that
 * names the path. */
static int split3(const char *cgroups_path, char *parts[3], brig_error_t *err)
{
    const char *first = strchr(cgroups_path, ':');
    const char *second = first ? strchr(first + 1, ':') : NULL;
    if (second == NULL || strchr(second + 1, ':'))
        return brig_error_kind(err, BRIG_E_INPUT,
                               "cgroupsPath `%s`: the systemd driver wants `slice:prefix:name`",
                               cgroups_path);
    parts[0] = strndup(cgroups_path, (size_t) (first - cgroups_path));
    parts[1] = strndup(first + 1, (size_t) (second - first - 1));
    parts[2] = strdup(second + 1);
    if (!parts[0] || !parts[1] || !parts[2])
        return brig_error_set(err, ENOMEM, "cgroupsPath");
    return 0;
}

static int scope_of(const char *slice, const char *prefix, const char *name, bool user,
                    struct brig_systemd_scope *out, brig_error_t *err)
{
    if (*name == '\0')
        return brig_error_kind(err, BRIG_E_INPUT, "cgroupsPath: the systemd unit has no name");
    if ((out->slice = strdup(*slice ? slice : user ? "user.slice" : "system.slice")) == NULL)
        return brig_error_set(err, ENOMEM, "cgroupsPath");
    cleanup_free char *parent = NULL;
    if (brig_systemd_slice_path(out->slice, &parent, err) < 0)
        return -1;
    if (ends_with(name, ".slice")) {
        /* a slice unit: its name says where it is, whatever the parent */
        if ((out->unit = strdup(name)) == NULL)
            return brig_error_set(err, ENOMEM, "cgroupsPath");
        return brig_systemd_slice_path(name, &out->path, err);
    }
    int r = *prefix ? asprintf(&out->unit, "%s-%s.scope", prefix, name)
                    : asprintf(&out->unit, "%s.scope", name);
    if (r < 0) {
        out->unit = NULL;
        return brig_error_set(err, ENOMEM, "cgroupsPath");
    }
    if (!valid_unit_name(out->unit))
        return brig_error_kind(err, BRIG_E_INPUT, "invalid systemd unit name `%s`", out->unit);
    if (asprintf(&out->path, "%s/%s", parent, out->unit) < 0) {
        out->path = NULL;
        return brig_error_set(err, ENOMEM, "cgroupsPath");
    }
    return 0;
}

int brig_systemd_scope_parse(const char *cgroups_path, const char *id, bool user,
                             struct brig_systemd_scope *out, brig_error_t *err)
{
    *out = (struct brig_systemd_scope){ 0 };
    char *parts[3] = { NULL, NULL, NULL };
    int r;
    if (cgroups_path == NULL || *cgroups_path == '\0')
        r = scope_of("", "brig", id, user, out, err);
    else if ((r = split3(cgroups_path, parts, err)) == 0)
        r = scope_of(parts[0], parts[1], parts[2], user, out, err);
    for (size_t i = 0; i < 3; i++)
        free(parts[i]);
    if (r < 0)
        brig_systemd_scope_free(out);
    return r;
}
