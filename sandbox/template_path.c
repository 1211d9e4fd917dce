#define _GNU_SOURCE
/* template_path.h: lexical rules, no file system. */
#include "sandbox/template_path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WHITEOUT ".wh."
#define OPAQUE ".wh..wh..opq"

int brig_template_entry_path(const char *name, char **out, brig_error_t *err)
{
    *out = NULL;
    size_t len = strlen(name);
    if (len > BRIG_TEMPLATE_NAME_MAX)
        return brig_error_kind(err, BRIG_E_INPUT, "entry `%.64s...`: name longer than %d bytes",
                               name, BRIG_TEMPLATE_NAME_MAX);
    char *clean = malloc(len + 1);
    if (clean == NULL)
        return brig_error_set(err, ENOMEM, "entry `%s`", name);
    size_t n = 0;
    for (const char *p = name; *p;) {
        size_t part = strcspn(p, "/");
        if (part == 2 && p[0] == '.' && p[1] == '.') {
            free(clean);
            return brig_error_kind(err, BRIG_E_INPUT,
                                   "entry `%s`: a `..` component would leave the image", name);
        }
        if (part > 0 && !(part == 1 && p[0] == '.')) {
            if (n)
                clean[n++] = '/';
            memcpy(clean + n, p, part);
            n += part;
        }
        p += part;
        p += *p == '/';
    }
    clean[n] = '\0';
    *out = clean;
    return 0;
}

/* Components of the dir `path` is in: "a/b/c" is two deep. */
static long parent_depth(const char *path)
{
    long depth = 0;
    for (const char *p = path; *p; p++)
        depth += *p == '/';
    return depth;
}

bool brig_template_link_inside(const char *path, const char *target)
{
    if (target[0] == '\0')
        return false;
    if (target[0] == '/')
        return true;
    long depth = parent_depth(path);
    for (const char *p = target; *p;) {
        size_t part = strcspn(p, "/");
        if (part == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return false;
        } else if (part > 0 && !(part == 1 && p[0] == '.')) {
            depth++;
        }
        p += part;
        p += *p == '/';
    }
    return true;
}

enum brig_whiteout brig_template_whiteout(const char *base, const char **victim, bool *bad)
{
    *victim = NULL;
    *bad = false;
    if (strcmp(base, OPAQUE) == 0)
        return BRIG_WHITEOUT_OPAQUE;
    if (strncmp(base, WHITEOUT, strlen(WHITEOUT)) != 0)
        return BRIG_WHITEOUT_NONE;
    const char *name = base + strlen(WHITEOUT);
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/')) {
        *bad = true;
        return BRIG_WHITEOUT_NONE;
    }
    *victim = name;
    return BRIG_WHITEOUT_FILE;
}
