#define _GNU_SOURCE
/* The sub-cgroups a process of `exec` may run in, as runc's `exec
 * --cgroup` takes them: "<path>" alone, for every hierarchy (and the only
 * form cgroup v2 has), or one or more "<controller>[,<controller>...]:
 * <path>", each for the hierarchies of those controllers (v1). runc 1.1
 * refuses a second ":" and a path without a controller beside others;
 * later runc also refuses an empty controller name and a controller named
 * twice: so does this. Pure. */
#include "cgroup/cgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/path.h"

#define SYNTAX "[<controller>[,<controller>...]:]<path>"

void brig_cgroup_sub_free(struct brig_cgroup_sub *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        free(s[i].controller);
        free(s[i].path);
    }
    free(s);
}

/* The path below the container's cgroup: cleaned as an absolute path, so
 * that ".." stops at the container's cgroup, then taken relative to it
 * ("" for the cgroup itself). */
static int sub_path(const char *arg, const char *path, char **out, brig_error_t *err)
{
    if (strpbrk(path, "\n\r") != NULL)
        return brig_error_set(err, 0, "sub-cgroup `%s`: has a line break", arg);
    cleanup_free char *rooted = NULL;
    if (asprintf(&rooted, "/%s", path) < 0)
        return brig_error_set(err, ENOMEM, "sub-cgroup `%s`", arg);
    cleanup_free char *clean = brig_path_clean(rooted);
    if (clean == NULL || (*out = strdup(clean + 1)) == NULL)
        return brig_error_set(err, ENOMEM, "sub-cgroup `%s`", arg);
    return 0;
}

static int add_sub(struct brig_cgroup_sub *s, size_t *n, const char *arg, const char *controller,
                   size_t len, const char *path, brig_error_t *err)
{
    for (size_t i = 0; i < *n; i++)
        if (s[i].controller && strlen(s[i].controller) == len
            && strncmp(s[i].controller, controller, len) == 0)
            return brig_error_set(err, 0, "sub-cgroup `%s`: controller `%.*s` is given twice", arg,
                                  (int) len, controller);
    struct brig_cgroup_sub *e = &s[*n];
    e->arg = arg;
    if (controller && (e->controller = strndup(controller, len)) == NULL)
        return brig_error_set(err, ENOMEM, "sub-cgroup `%s`", arg);
    ++*n;
    return sub_path(arg, path, &e->path, err);
}

/* One argument: its controllers, each an entry with the path. */
static int parse_one(struct brig_cgroup_sub *s, size_t *n, const char *arg, size_t n_args,
                     brig_error_t *err)
{
    const char *colon = strchr(arg, ':');
    if (colon == NULL && n_args > 1)
        return brig_error_set(err, 0,
                              "sub-cgroup `%s`: a path without a `<controller>:` prefix must "
                              "be the only sub-cgroup given",
                              arg);
    if (colon == NULL)
        return add_sub(s, n, arg, NULL, 0, arg, err);
    if (strchr(colon + 1, ':') != NULL)
        return brig_error_set(err, 0, "sub-cgroup `%s`: more than one `:` (the form is " SYNTAX ")",
                              arg);
    for (const char *c = arg;; c++) {
        size_t len = strcspn(c, ",:");
        if (len == 0)
            return brig_error_set(err, 0,
                                  "sub-cgroup `%s`: an empty controller name (the form is " SYNTAX
                                  ")",
                                  arg);
        if (add_sub(s, n, arg, c, len, colon + 1, err) < 0)
            return -1;
        c += len;
        if (*c == ':')
            return 0;
    }
}

int brig_cgroup_sub_parse(const char *const *args, size_t n_args, struct brig_cgroup_sub **out,
                          size_t *n, brig_error_t *err)
{
    size_t most = 0; /* an entry per controller: at most one per "," and one more */
    for (size_t i = 0; i < n_args; i++) {
        most++;
        for (const char *c = args[i]; *c; c++)
            most += *c == ',';
    }
    struct brig_cgroup_sub *s = calloc(most ? most : 1, sizeof *s);
    if (s == NULL)
        return brig_error_set(err, ENOMEM, "sub-cgroup");
    size_t k = 0;
    for (size_t i = 0; i < n_args; i++)
        if (parse_one(s, &k, args[i], n_args, err) < 0) {
            brig_cgroup_sub_free(s, k);
            return -1;
        }
    *out = s;
    *n = k;
    return 0;
}
