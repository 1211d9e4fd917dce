/* The error chain: messages gain context front-first, keep the root errno. */
#include <errno.h>
#include <stdlib.h>

#include "base/error.h"
#include "unit.h"

static int fails_deep(brig_error_t *err)
{
    return brig_error_set(err, EACCES, "open `%s`", "/x/y");
}

static int fails_middle(brig_error_t *err)
{
    if (fails_deep(err) < 0)
        return brig_error_wrap(err, "mount `%s`", "/proc");
    return 0;
}

int main(void)
{
    brig_error_t err = NULL;
    CHECK(fails_middle(&err) == -1, "failure returns -1");
    CHECK(err != NULL, "error is set");
    CHECK_STR(err->msg, "mount `/proc`: open `/x/y`: Permission denied",
              "context is prefixed, strerror appended");
    CHECK(err->errnum == EACCES, "root errno is kept");
    brig_error_wrap(&err, "create `%s`", "c1");
    CHECK_STR(err->msg, "create `c1`: mount `/proc`: open `/x/y`: Permission denied", "wrap again");
    brig_error_release(&err);
    CHECK(err == NULL, "release clears");

    brig_error_set(&err, 0, "plain %d", 7);
    CHECK_STR(err->msg, "plain 7", "errnum 0 adds no strerror");
    brig_error_set(&err, ENOENT, "again");
    CHECK_STR(err->msg, "again: No such file or directory", "set replaces a previous error");
    brig_error_release(&err);

    brig_error_from_message(&err, EIO, "from child");
    CHECK_STR(err->msg, "from child", "message taken as is");
    CHECK(err->errnum == EIO, "errnum taken as is");
    brig_error_release(&err);
    CHECK(brig_error_wrap(&err, "nothing") == -1 && err == NULL, "wrapping no error is harmless");
    return unit_done();
}
