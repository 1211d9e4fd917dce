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
    /* A brig run from its build tree takes the tree's helpers, not those
     * an older `make install` left; an installed brig has none beside it. */
    if (value && *value)
        found = strdup(value);
    else if ((found = brig_sandbox_beside_self(name)) == NULL && installed
             && access(installed, X_OK) == 0)
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

/* Where `make install` puts each (Makefile.am defines them for this
 * layer); none in a build without them. */
#ifndef BRIG_INIT_PATH
#define BRIG_INIT_PATH NULL
#endif
#ifndef BRIG_EGRESS_PATH
#define BRIG_EGRESS_PATH NULL
#endif
#ifndef BRIG_FETCH_PATH
#define BRIG_FETCH_PATH NULL
#endif
#ifndef BRIG_REAPER_PATH
#define BRIG_REAPER_PATH NULL
#endif
#ifndef BRIG_API_PATH
#define BRIG_API_PATH NULL
#endif

static const struct {
    const char *name, *env, *installed;
} helpers[] = {
    { "brig-init", "BRIG_INIT", BRIG_INIT_PATH },
    { "brig-egress", "BRIG_EGRESS", BRIG_EGRESS_PATH },
    { "brig-fetch", "BRIG_FETCH", BRIG_FETCH_PATH },
    { "brig-reaper", "BRIG_REAPER", BRIG_REAPER_PATH },
    { "brig-api", "BRIG_API", BRIG_API_PATH },
};

int brig_sandbox_locate_helper(const char *name, char **out, brig_error_t *err)
{
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        if (strcmp(name, helpers[i].name) == 0)
            return brig_sandbox_locate(name, helpers[i].env, helpers[i].installed, out, err);
    return brig_error_set(err, 0, "no helper program `%s`", name);
}

void brig_sandbox_pin_helpers(void)
{
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++) {
        char *path = NULL;
        brig_error_t err = NULL;
        if (brig_sandbox_locate(helpers[i].name, helpers[i].env, helpers[i].installed, &path, &err)
            == 0)
            setenv(helpers[i].env, path, 0);
        brig_error_release(&err);
        free(path);
    }
}
