#define _GNU_SOURCE
#include "sandbox/locate.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "selfexe/selfexe.h"

char *brig_sandbox_beside_self(const char *name)
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

int brig_sandbox_locate(const char *name, const char *env, const char *installed, char **out,
                        brig_error_t *err)
{
    const char *value = getenv(env);
    char *found = NULL;
    if (value && *value)
        found = strdup(value);
    else if (installed && access(installed, X_OK) == 0)
        found = strdup(installed);
    else
        found = brig_sandbox_beside_self(name);
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

int brig_sandbox_locate_api(char **out, brig_error_t *err)
{
#ifdef BRIG_API_PATH
    const char *installed = BRIG_API_PATH;
#else
    const char *installed = NULL;
#endif
    return brig_sandbox_locate("brig-api", "BRIG_API", installed, out, err);
}
