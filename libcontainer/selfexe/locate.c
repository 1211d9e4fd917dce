#define _GNU_SOURCE
/* Files and helper programs found beside the running brig (a build tree)
 * or where `make install` put them (selfexe.h). */
#include "selfexe/selfexe.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *brig_beside_self(const char *name)
{
    char self[PATH_MAX];
    if (brig_selfexe_path(self, sizeof self) < 0)
        return NULL;
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dirname(self), name) < 0)
        return NULL;
    if (access(path, R_OK) != 0) {
        free(path);
        return NULL;
    }
    return path;
}

int brig_locate_program(const char *name, const char *env, const char *installed, char **out,
                        brig_error_t *err)
{
    const char *value = getenv(env);
    char *found = NULL;
    /* A brig run from its build tree takes the tree's helpers, not those
     * an older `make install` left; an installed brig has none beside it. */
    if (value && *value)
        found = strdup(value);
    else if ((found = brig_beside_self(name)) == NULL && installed && access(installed, X_OK) == 0)
        found = strdup(installed);
    if (found == NULL)
        return brig_error_set(err, 0, "%s not found (set %s)", name, env);
    if (access(found, X_OK) != 0) {
        int saved = errno;
        brig_error_set(err, saved, "%s `%s`", name, found);
        free(found);
        return -1;
    }
    *out = found;
    return 0;
}
