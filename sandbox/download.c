/* download.h: the target opened in the data tree, brig-fetch run with it
 * as its stdout, its one line turned into the error, the file put in
 * place. */
#define _GNU_SOURCE
#include "sandbox/download.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "sandbox/lifetime.h"
#include "sandbox/locate.h"
#include "sandbox/profile.h"
#include "sandbox/transfer.h"

#define DL "sandbox download"
#define LINE_MAX_BYTES 1024

bool brig_sandbox_download_scheme_ok(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

int brig_sandbox_download_name(const char *url, char **name)
{
    *name = NULL;
    const char *rest = strstr(url, "://");
    rest = rest ? rest + 3 : url;
    const char *path = rest + strcspn(rest, "/?#"); /* past the authority */
    const char *end = path + strcspn(path, "?#");
    const char *last = end;
    while (last > path && last[-1] != '/')
        last--;
    size_t n = (size_t) (end - last);
    if (n == 0 || (n == 1 && last[0] == '.') || (n == 2 && last[0] == '.' && last[1] == '.'))
        return 0;
    *name = strndup(last, n);
    return *name ? 0 : -1;
}

/* PATH as the sandbox names it → relative to the data tree; `..` is
 * refused outright, though resolution would keep it inside. */
static int target_rel(const char *path, char **rel, brig_error_t *err)
{
    if (brig_sandbox_data_relpath(path, rel, err) < 0)
        return brig_error_wrap(err, DL ": `%s`", path);
    for (const char *p = *rel; *p; p += strcspn(p, "/"), p += *p == '/') {
        if (strncmp(p, "..", 2) == 0 && (p[2] == '/' || p[2] == '\0')) {
            free(*rel);
            *rel = NULL;
            return brig_error_kind(err, BRIG_E_INPUT, DL ": `%s`: `..` is not allowed in a path",
                                   path);
        }
    }
    return 0;
}

/* brig-fetch's arguments: its options as numbers, then the URL. */
struct fetch_args {
    char max_size[32], timeout[32];
    char *argv[8];
};

static void fetch_argv(const char *url, const struct brig_sandbox_download_options *o,
                       struct fetch_args *a)
{
    size_t n = 0;
    a->argv[n++] = "brig-fetch";
    if (o->max_size) {
        snprintf(a->max_size, sizeof a->max_size, "%" PRIu64, o->max_size);
        a->argv[n++] = "--max-size";
        a->argv[n++] = a->max_size;
    }
    snprintf(a->timeout, sizeof a->timeout, "%d",
             o->timeout_ms > 0 ? o->timeout_ms : BRIG_SANDBOX_DOWNLOAD_TIMEOUT_MS);
    a->argv[n++] = "--timeout-ms";
    a->argv[n++] = a->timeout;
    a->argv[n++] = "--";
    a->argv[n++] = (char *) url;
    a->argv[n] = NULL;
}

/* An error whose errnum says its kind, with no strerror after it. */
static int kind_error(brig_error_t *err, int errnum, const char *msg, const char *url)
{
    if (url)
        return brig_error_kind(err, errnum, DL ": %s: %s", url, msg);
    return brig_error_kind(err, errnum, DL ": %s", msg);
}

/* brig-fetch's exit status turned into an error (0: done). */
static int fetch_result(int status, const char *line, const char *url, brig_error_t *err)
{
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 0)
        return 0;
    if (code == BRIG_FETCH_EXIT_FULL)
        return kind_error(err, ENOSPC, BRIG_SANDBOX_DATA " is full (quota)", url);
    if (*line && (code == BRIG_FETCH_EXIT_TOO_BIG || code == BRIG_FETCH_EXIT_REFUSED))
        return kind_error(err, code == BRIG_FETCH_EXIT_TOO_BIG ? EFBIG : EACCES, line, NULL);
    /* What the far side said (an HTTP error, a refused connection). */
    if (*line)
        return kind_error(err, EPROTO, line, NULL);
    if (code == 127)
        return brig_error_set(err, 0, DL ": brig-fetch could not be run");
    if (WIFSIGNALED(status))
        return brig_error_set(err, 0, DL ": %s: brig-fetch killed by signal %d", url,
                              WTERMSIG(status));
    return brig_error_set(err, 0, DL ": %s: brig-fetch failed (status %d)", url, code);
}

/* brig-fetch run to its end, writing into out_fd. */
static int run_fetch(const char *url, const struct brig_sandbox_download_options *o, int out_fd,
                     brig_error_t *err)
{
    struct fetch_args a;
    fetch_argv(url, o, &a);
    char line[LINE_MAX_BYTES];
    int status;
    if (brig_sandbox_run_helper("brig-fetch", a.argv, out_fd, line, sizeof line, &status, err) < 0)
        return brig_error_wrap(err, DL);
    return fetch_result(status, line, url, err);
}

/* Where the file goes in the tree: PATH, or PATH/NAME (the URL's) when
 * PATH is a directory there or ends in `/`. */
static int target_name(int tree, const char *url, const char *path, const char *rel, char **name,
                       brig_error_t *err)
{
    cleanup_free char *url_name = NULL;
    if (brig_sandbox_download_name(url, &url_name) < 0)
        return brig_error_set(err, ENOMEM, DL);
    /* "": a name to tell from rel, when the URL gives none. */
    if (brig_sandbox_data_target(tree, rel, url_name ? url_name : "", name, err) < 0)
        return brig_error_wrap(err, DL);
    if (url_name == NULL && strcmp(*name, rel) != 0) {
        free(*name);
        *name = NULL;
        return brig_error_kind(err, BRIG_E_INPUT, DL ": %s names no file: give `%s` a file name",
                               url, path);
    }
    return 0;
}

int brig_sandbox_download(const char *id, const char *url, const char *path,
                          const struct brig_sandbox_download_options *o, char **final_path,
                          uint64_t *bytes, brig_error_t *err)
{
    *final_path = NULL;
    if (!brig_sandbox_download_scheme_ok(url))
        return brig_error_kind(err, BRIG_E_INPUT, DL ": `%s`: only http:// and https:// URLs", url);
    cleanup_free char *rel = NULL, *name = NULL, *clean = NULL;
    if (target_rel(path, &rel, err) < 0)
        return -1;
    cleanup_close int tree = brig_sandbox_data_open_tree(id, err);
    if (tree < 0)
        return brig_error_wrap(err, DL);
    if (target_name(tree, url, path, rel, &name, err) < 0)
        return -1;
    if ((clean = brig_path_clean(name)) == NULL)
        return brig_error_set(err, ENOMEM, DL);
    struct brig_sandbox_data_file f = BRIG_SANDBOX_DATA_FILE_INIT;
    if (brig_sandbox_data_create_unseen(tree, clean, &f, err) < 0)
        return brig_error_wrap(err, DL ": `%s:%s/%s`", id, BRIG_SANDBOX_DATA, clean);
    brig_sandbox_mark_active(id);
    struct stat st;
    int r = run_fetch(url, o, f.fd, err);
    if (r == 0 && fstat(f.fd, &st) < 0)
        r = brig_error_set(err, errno, DL ": `%s:%s/%s`", id, BRIG_SANDBOX_DATA, clean);
    if (r == 0 && brig_sandbox_data_publish(&f, err) < 0)
        r = brig_error_wrap(err, DL ": `%s:%s/%s`", id, BRIG_SANDBOX_DATA, clean);
    brig_sandbox_data_file_close(&f);
    if (r < 0)
        return -1;
    if (asprintf(final_path, "%s/%s", BRIG_SANDBOX_DATA, clean) < 0) {
        *final_path = NULL;
        return brig_error_set(err, ENOMEM, DL);
    }
    *bytes = (uint64_t) st.st_size;
    return 0;
}
