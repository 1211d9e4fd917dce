/* One pass of the reaper (reaper.h): every sandbox of the home whose
 * deadline passed, removed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "container/state.h"
#include "sandbox/layout.h"
#include "sandbox/lifetime.h"
#include "sandbox/manage.h"
#include "sandbox/reaper.h"

struct names {
    char **v;
    size_t n;
};

static void names_free(struct names *names)
{
    for (size_t i = 0; i < names->n; i++)
        free(names->v[i]);
    free(names->v);
}

/* The sandboxes' names, read before any goes (a dir changing under
 * readdir may skip an entry). */
static int read_names(const char *home, struct names *out, brig_error_t *err)
{
    cleanup_dir DIR *d = opendir(home);
    if (d == NULL)
        return brig_error_set(err, errno, "open `%s`", home);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
            continue;
        char **bigger = realloc(out->v, (out->n + 1) * sizeof *bigger);
        if (bigger == NULL)
            return brig_error_set(err, ENOMEM, "reaper");
        out->v = bigger;
        if ((bigger[out->n] = strdup(de->d_name)) == NULL)
            return brig_error_set(err, ENOMEM, "reaper");
        out->n++;
    }
    return 0;
}

static void note_left(struct brig_sandbox_reap_result *res, int64_t deadline)
{
    res->left++;
    if (deadline < res->next_ms)
        res->next_ms = deadline;
}

/* Removes it, and tells. */
static void reap_one(const char *id, const struct brig_sandbox_lifetime *l, const char *why,
                     int64_t late, brig_sandbox_reap_report *report, void *ctx,
                     struct brig_sandbox_reap_result *res)
{
    brig_error_t err = NULL;
    /* A record always names its root; one written by hand may not. */
    int r = brig_sandbox_remove(l->root ? l->root : BRIG_DEFAULT_ROOT, id, &err);
    struct brig_sandbox_reaped told = {
        .id = id,
        .why = why,
        .limit_ms = strcmp(why, "ttl") == 0 ? l->ttl_ms : l->idle_ms,
        .late_ms = late,
        .failure = r < 0 ? err->msg : NULL,
    };
    if (r < 0) {
        res->failed++;
        note_left(res, brig_sandbox_now_ms() + BRIG_REAPER_RETRY_MS);
    } else {
        res->removed++;
    }
    if (report)
        report(&told, ctx);
    brig_error_release(&err);
}

static void pass_one(const char *id, brig_sandbox_reap_report *report, void *ctx,
                     struct brig_sandbox_reap_result *res)
{
    struct brig_sandbox_lifetime l;
    int64_t deadline;
    const char *why;
    brig_error_t err = NULL;
    if (brig_sandbox_deadline(id, &l, &deadline, &why, &err) < 0) {
        /* Told, not counted: a record nobody can read must not keep a
         * reaper up for ever. */
        struct brig_sandbox_reaped told = { .id = id, .failure = err->msg };
        if (report)
            report(&told, ctx);
        brig_error_release(&err);
        return;
    }
    int64_t now = brig_sandbox_now_ms();
    if (deadline <= now)
        reap_one(id, &l, why, now - deadline, report, ctx, res);
    else if (deadline != INT64_MAX)
        note_left(res, deadline);
    brig_sandbox_lifetime_clear(&l);
}

int brig_sandbox_reap(brig_sandbox_reap_report *report, void *ctx,
                      struct brig_sandbox_reap_result *res, brig_error_t *err)
{
    *res = (struct brig_sandbox_reap_result){ .next_ms = INT64_MAX };
    const char *home = brig_sandbox_home();
    cleanup_close int home_fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home_fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "reaper: open `%s`", home);
    cleanup_close int pass = openat(home_fd, BRIG_REAPER_PASS,
                                    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (pass < 0)
        return brig_error_set(err, errno, "reaper: `%s/%s`", home, BRIG_REAPER_PASS);
    while (flock(pass, LOCK_EX) < 0)
        if (errno != EINTR)
            return brig_error_set(err, errno, "reaper: lock `%s/%s`", home, BRIG_REAPER_PASS);
    struct names names = { 0 };
    int r = read_names(home, &names, err);
    for (size_t i = 0; r == 0 && i < names.n; i++)
        pass_one(names.v[i], report, ctx, res);
    names_free(&names);
    return r < 0 ? brig_error_wrap(err, "reaper") : 0;
}
