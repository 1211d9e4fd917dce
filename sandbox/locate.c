#define _GNU_SOURCE
#include "sandbox/locate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "selfexe/selfexe.h"

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
#ifndef BRIG_UNPACK_PATH
#define BRIG_UNPACK_PATH NULL
#endif

static const struct {
    const char *name, *env, *installed;
} helpers[] = {
    { "brig-init", "BRIG_INIT", BRIG_INIT_PATH },
    { "brig-egress", "BRIG_EGRESS", BRIG_EGRESS_PATH },
    { "brig-fetch", "BRIG_FETCH", BRIG_FETCH_PATH },
    { "brig-reaper", "BRIG_REAPER", BRIG_REAPER_PATH },
    { "brig-api", "BRIG_API", BRIG_API_PATH },
    { "brig-unpack", "BRIG_UNPACK", BRIG_UNPACK_PATH },
};

int brig_sandbox_locate_helper(const char *name, char **out, brig_error_t *err)
{
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        if (strcmp(name, helpers[i].name) == 0)
            return brig_locate_program(name, helpers[i].env, helpers[i].installed, out, err);
    return brig_error_set(err, 0, "no helper program `%s`", name);
}

void brig_sandbox_pin_helpers(void)
{
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++) {
        char *path = NULL;
        brig_error_t err = NULL;
        if (brig_locate_program(helpers[i].name, helpers[i].env, helpers[i].installed, &path, &err)
            == 0)
            setenv(helpers[i].env, path, 0);
        brig_error_release(&err);
        free(path);
    }
}
