#define _GNU_SOURCE
#include "sandbox/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "container/state.h"

const char *brig_sandbox_home(void)
{
    const char *env = getenv(BRIG_SANDBOX_HOME_ENV);
    return env && *env ? env : BRIG_SANDBOX_HOME_DEFAULT;
}

int brig_sandbox_id_validate(const char *id, brig_error_t *err)
{
    /* The id becomes a path component under the home, and rm removes that
     * tree: anything but a single name could reach outside it. It names
     * the container too, whose ids are letters, digits and _+-. only. */
    brig_error_t ignored = NULL;
    for (const char *p = id; *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
            return brig_error_kind(err, BRIG_E_INPUT, "invalid id: a control character in it");
    if (*id == '\0' || *id == '.' || brig_id_validate(id, &ignored) < 0) {
        brig_error_release(&ignored);
        return brig_error_kind(err, BRIG_E_INPUT,
                               "invalid id `%s` (letters, digits and _+-., not first a `.`)", id);
    }
    return 0;
}

int brig_sandbox_private_dir(const char *state_dir, char **out, brig_error_t *err)
{
    char hash[65];
    brig_sha256_hex(state_dir, strlen(state_dir), hash);
    hash[32] = '\0';
    if (asprintf(out, "%s/%s/%s", brig_sandbox_home(), BRIG_SANDBOX_PRIVATE, hash) < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "sandbox");
    }
    return 0;
}

int brig_sandbox_dir(const char *id, char **out, brig_error_t *err)
{
    return brig_sandbox_path(id, NULL, out, err);
}

int brig_sandbox_path(const char *id, const char *name, char **out, brig_error_t *err)
{
    *out = NULL;
    if (brig_sandbox_id_validate(id, err) < 0)
        return brig_error_wrap(err, "sandbox");
    int n = name ? asprintf(out, "%s/%s/%s", brig_sandbox_home(), id, name)
                 : asprintf(out, "%s/%s", brig_sandbox_home(), id);
    if (n < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "sandbox");
    }
    return 0;
}
