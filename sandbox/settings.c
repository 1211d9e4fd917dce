#define _GNU_SOURCE
/* A sandbox's knobs set from what a user typed (`sandbox create`'s
 * flags, the API's fields), checked the same way for both. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "sandbox/manage.h"
#include "sandbox/tree_image.h"
#include "sandbox/sandbox.h"
#include "sandbox/template.h"

static int set_string(char **field, const char *value, brig_error_t *err)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return brig_error_set(err, ENOMEM, "settings");
    free(*field);
    *field = copy;
    return 0;
}

static int set_path(char **field, const char *shown, const char *value, brig_error_t *err)
{
    char *abs = realpath(value, NULL);
    if (abs == NULL)
        return brig_error_kind(err, BRIG_E_INPUT, "%s `%s`: %s", shown, value, strerror(errno));
    free(*field);
    *field = abs;
    return 0;
}

/* A tree at dir: built there (it has /usr), or DIR.squashfs mounted
 * there (tree_image.h); BRIG_E_INPUT naming `shown` and how to build it
 * otherwise. */
static int tree_at(const char *dir, const char *shown, const char *value, const char *profile,
                   brig_error_t *err)
{
    int r = brig_tree_ensure(dir, err);
    if (r != 0)
        return r < 0 ? brig_error_wrap(err, "%s %s", shown, value) : 0;
    if (profile == NULL)
        return brig_error_kind(err, BRIG_E_INPUT, "%s %s: no tree at %s", shown, value, dir);
    return brig_error_kind(err, BRIG_E_INPUT, "%s %s: no tree at %s (build it: make rootfs%s%s)",
                           shown, value, dir, strcmp(profile, "small") ? " PROFILE=" : "",
                           strcmp(profile, "small") ? profile : "");
}

/* --rootfs NAME|DIR: a path (it has a `/` or starts with `.`; DIR or
 * DIR.squashfs) when paths are allowed, otherwise a tree built by `make
 * rootfs PROFILE=NAME`: `small` is BRIG_SANDBOX_ROOTFS, any other NAME
 * BRIG_SANDBOX_ROOTFS-NAME. */
static int set_rootfs(char **field, const char *shown, const char *value, bool paths,
                      brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    const char *profile = NULL;
    if (value[0] == '.' || strchr(value, '/') != NULL) {
        if (!paths)
            return brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s` (a tree's name)", shown,
                                   value);
        if (brig_tree_image_strip(value, &dir, err) < 0)
            return -1;
        if (dir == NULL && (dir = strdup(value)) == NULL)
            return brig_error_set(err, ENOMEM, "settings");
    } else {
        if (value[0] == '\0'
            || value[strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789_-")] != '\0')
            return brig_error_kind(err, BRIG_E_INPUT,
                                   "invalid %s `%s` (a tree's name: a-z, 0-9, _, -)", shown, value);
        profile = value;
        if (strcmp(value, "small") == 0 ? (dir = strdup(BRIG_SANDBOX_ROOTFS)) == NULL
                                        : asprintf(&dir, "%s-%s", BRIG_SANDBOX_ROOTFS, value) < 0)
            return brig_error_set(err, ENOMEM, "settings");
    }
    if (tree_at(dir, shown, value, profile, err) < 0)
        return -1;
    return set_path(field, shown, dir, err);
}

static int set_size(int64_t *field, const char *shown, const char *value, int64_t min,
                    const char *min_text, brig_error_t *err)
{
    if (brig_profile_parse_size(value, field) < 0 || *field < min)
        return brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s` (at least %s)", shown, value,
                               min_text);
    return 0;
}

static int set_network(struct brig_profile_settings *s, const char *shown, const char *value,
                       bool paths, brig_error_t *err)
{
    free(s->network);
    s->network = NULL;
    free(s->netns);
    s->netns = NULL;
    if (strcmp(value, BRIG_NETWORK_PACKAGES) == 0)
        return set_string(&s->network, value, err);
    if (strcmp(value, BRIG_NETWORK_NONE) == 0)
        return 0;
    if (!paths || value[0] != '/')
        return brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s` (packages or none%s)", shown,
                               value, paths ? ", or a namespace's path" : "");
    return set_path(&s->netns, shown, value, err);
}

int brig_sandbox_setting(struct brig_profile_settings *s, const char *key, const char *shown,
                         const char *value, bool paths, brig_error_t *err)
{
    if (strcmp(key, "data-size") == 0)
        return set_size(&s->data_size, shown, value, INT64_C(4) << 20, "4M", err);
    if (strcmp(key, "memory") == 0)
        return set_size(&s->memory, shown, value, INT64_C(16) << 20, "16M", err);
    if (strcmp(key, "pids") == 0) {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < 8 || v > 1 << 22)
            return brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s` (at least 8)", shown, value);
        s->pids = v;
        return 0;
    }
    if (strcmp(key, "cpus") == 0)
        return brig_profile_parse_cpus(value, &s->cpus_milli) < 0
                   ? brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s`", shown, value)
                   : 0;
    if (strcmp(key, "network") == 0)
        return set_network(s, shown, value, paths, err);
    if (strcmp(key, "userns") == 0) {
        if (strcmp(value, BRIG_USERNS_AUTO) != 0 && strcmp(value, BRIG_USERNS_HOST) != 0)
            return brig_error_kind(err, BRIG_E_INPUT, "invalid %s `%s` (auto or host)", shown,
                                   value);
        return set_string(&s->userns, value, err);
    }
    if (strcmp(key, "rootfs") == 0)
        return set_rootfs(&s->rootfs, shown, value, paths, err);
    /* A template that is not there is the user's to fix. */
    if (strcmp(key, "template") == 0 && brig_template_settings(value, s, err) < 0) {
        if ((*err)->errnum == ENOENT)
            (*err)->errnum = BRIG_E_INPUT;
        return brig_error_wrap(err, "%s", shown);
    }
    if (strcmp(key, "template") == 0)
        return 0;
    if (paths && strcmp(key, "services") == 0)
        return set_path(&s->init_config, shown, value, err);
    if (strcmp(key, "malloc-conf") == 0)
        return set_string(&s->malloc_conf, value, err);
    return brig_error_kind(err, BRIG_E_INPUT, "unknown setting %s", shown);
}

int brig_sandbox_lifetime_setting(struct brig_sandbox_create_options *o, const char *key,
                                  const char *shown, const char *text, int64_t ms,
                                  brig_error_t *err)
{
    /* A second at least: a reaper could otherwise remove the sandbox
     * while it is being made. */
    int64_t *fields[] = { &o->ttl_ms, &o->idle_ms, &o->exec_timeout_ms };
    static const char *const keys[] = { "ttl", "idle-timeout", "exec-timeout" };
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(key, keys[i]) != 0)
            continue;
        int64_t least = i == 2 ? 1 : 1000;
        if (ms < least || ms > INT64_C(30) * 86400000)
            return brig_error_kind(err, BRIG_E_INPUT, "invalid %s%s%s%s (%s to 30 days)", shown,
                                   text ? " `" : "", text ? text : "", text ? "`" : "",
                                   i == 2 ? "1ms" : "1s");
        *fields[i] = ms;
        return 0;
    }
    return brig_error_kind(err, BRIG_E_INPUT, "unknown limit %s", shown);
}
