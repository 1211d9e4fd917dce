#define _GNU_SOURCE
/* template.h: an import. brig-unpack says what the archive holds (its
 * config's digest names the tree); a tree already there is reused, else
 * the layers are unpacked into a temp dir of the store, made ready
 * (template_tree.c) and renamed into place; the name is written last.
 * The lock is held only around what changes names and trees, not
 * through the unpacking. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "base/utils.h"
#include "sandbox/locate.h"
#include "sandbox/template_int.h"

#define SUMMARY_MAX (1u << 20)
#define LINE_BYTES 1024

/* What brig-unpack printed, into the record (and the image's User, which
 * the tree resolves). */
struct summary {
    struct brig_template *t;
    char **user;
    bool size_only; /* the second run, the unpacking: the rest is known */
};

static int summary_line(char *line, unsigned lineno, void *ctx)
{
    struct summary *sum = ctx;
    struct brig_template *t = sum->t;
    char *v = strchr(line, '=');
    if (v == NULL)
        return 0;
    *v++ = '\0';
    if (sum->size_only) {
        if (strcmp(line, "size") == 0)
            t->size = strtoll(v, NULL, 10);
        return 0;
    }
    if (strcmp(line, "config") == 0)
        snprintf(t->digest, sizeof t->digest, "%s", v);
    else if (strcmp(line, "layers") == 0)
        t->layers = strtoll(v, NULL, 10);
    else if (strcmp(line, "size") == 0)
        t->size = strtoll(v, NULL, 10);
    else if (strcmp(line, "format") == 0)
        return brig_template_set_str(&t->format, v);
    else if (strcmp(line, "user") == 0)
        return brig_template_set_str(sum->user, v);
    else if (strcmp(line, "workdir") == 0 && v[0]) {
        /* Relative to the root, as docker takes it. */
        cleanup_free char *abs = NULL;
        free(t->workdir);
        t->workdir = asprintf(&abs, "/%s", v) < 0 ? NULL : brig_path_clean(abs);
        return t->workdir ? 0 : -1;
    } else if (strcmp(line, "env") == 0) {
        return brig_template_add_env(t, v);
    }
    return 0;
}

/* brig-unpack's status and line as an error. */
static int unpack_failed(int status, const char *line, brig_error_t *err)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && line[0])
        return brig_error_kind(err, BRIG_E_INPUT, "%s", line);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return brig_error_set(err, 0, "brig-unpack could not be run");
    if (WIFSIGNALED(status))
        return brig_error_set(err, 0, "brig-unpack killed by signal %d", WTERMSIG(status));
    return brig_error_set(err, 0, "brig-unpack failed (status %d)%s%s", WEXITSTATUS(status),
                          line[0] ? ": " : "", line);
}

/* brig-unpack run on the archive (into `into`, when the config is
 * `expect`), its summary parsed. */
static int run_unpack(const char *archive, const char *into, const char *expect,
                      struct summary *sum, brig_error_t *err)
{
    char *argv[8] = { "brig-unpack" };
    size_t n = 1;
    if (into) {
        argv[n++] = "--into";
        argv[n++] = (char *) into;
        argv[n++] = "--expect";
        argv[n++] = (char *) expect;
    }
    argv[n++] = "--";
    argv[n++] = (char *) archive;
    cleanup_close int out = memfd_create("brig-unpack", MFD_CLOEXEC);
    if (out < 0)
        return brig_error_set(err, errno, "memfd");
    char line[LINE_BYTES];
    int status;
    if (brig_sandbox_run_helper("brig-unpack", argv, out, line, sizeof line, &status, err) < 0)
        return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return unpack_failed(status, line, err);
    cleanup_free char *text = calloc(1, SUMMARY_MAX + 1);
    if (text == NULL)
        return brig_error_set(err, ENOMEM, "brig-unpack");
    if (lseek(out, 0, SEEK_SET) < 0 || brig_read_all(out, text, SUMMARY_MAX) < 0)
        return brig_error_set(err, errno, "brig-unpack's answer");
    if (brig_each_line(text, summary_line, sum) != 0)
        return brig_error_set(err, ENOMEM, "brig-unpack's answer");
    if (strlen(sum->t->digest) != 64)
        return brig_error_set(err, 0, "brig-unpack's answer has no config digest");
    return 0;
}

/* Under the lock: the name free, and whether the tree is there. */
static int check_place(int store_fd, const char *name, const char *digest, bool *tree_there,
                       brig_error_t *err)
{
    cleanup_free char *record = NULL, *tree = NULL;
    if (asprintf(&record, TEMPLATE_NAMES "/%s", name) < 0
        || asprintf(&tree, TEMPLATE_TREES "/%s", digest) < 0)
        return brig_error_set(err, ENOMEM, "template");
    if (faccessat(store_fd, record, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return brig_error_kind(err, EEXIST, "template `%s` exists (rm it first)", name);
    *tree_there = faccessat(store_fd, tree, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    return 0;
}

/* A tree that is there (another name's image): the record resolved
 * against it, and written. */
static int name_tree(int store_fd, struct brig_template *t, const char *user, brig_error_t *err)
{
    cleanup_free char *tree = NULL;
    if (asprintf(&tree, TEMPLATE_TREES "/%s", t->digest) < 0)
        return brig_error_set(err, ENOMEM, "template");
    cleanup_close int fd = openat(store_fd, tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "template tree `%s`", t->digest);
    if (brig_template_tree_resolve(fd, user, t, err) < 0
        || brig_template_tree_size(store_fd, t->digest, &t->size, err) < 0)
        return -1;
    return brig_template_record_write(store_fd, t, err);
}

/* A temp dir of the store, tmp/NAME.XXXXXX (its name in the store in
 * *tmp), held with a lock on it as long as *hold is open: an import that
 * died leaves one nobody holds, which the next import removes. */
static int make_temp(int store_fd, const char *name, char **tmp, int *hold, brig_error_t *err)
{
    cleanup_free char *path = NULL;
    if (asprintf(tmp, TEMPLATE_TMP "/%s.XXXXXX", name) < 0
        || asprintf(&path, "%s/%s", brig_template_store(), *tmp) < 0)
        return *tmp = NULL, brig_error_set(err, ENOMEM, "template");
    if (mkdtemp(path) == NULL)
        return brig_error_set(err, errno, "mkdir `%s`", path);
    memcpy(*tmp, path + strlen(path) - strlen(*tmp), strlen(*tmp));
    *hold = openat(store_fd, *tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*hold < 0 || flock(*hold, LOCK_EX | LOCK_NB) < 0)
        return brig_error_set(err, errno, "`%s`", path);
    return 0;
}

/* Temp dirs of imports that died (nobody holds their lock) removed. */
static int sweep_temps(int store_fd, brig_error_t *err)
{
    int fd = openat(store_fd, TEMPLATE_TMP, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cleanup_dir DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return brig_error_set(err, errno, "template store: " TEMPLATE_TMP);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_close int one = openat(dirfd(d), de->d_name,
                                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (one >= 0 && flock(one, LOCK_EX | LOCK_NB) == 0
            && brig_remove_tree_at(dirfd(d), de->d_name, err) < 0)
            return brig_error_wrap(err, "template store: " TEMPLATE_TMP);
    }
    return 0;
}

/* The layers unpacked into the temp dir, made ready. */
static int unpack_new(int store_fd, const char *archive, struct summary *sum, const char *tmp,
                      brig_error_t *err)
{
    struct brig_template *t = sum->t;
    cleanup_free char *path = NULL;
    if (asprintf(&path, "%s/%s", brig_template_store(), tmp) < 0)
        return brig_error_set(err, ENOMEM, "template");
    char digest[65];
    memcpy(digest, t->digest, sizeof digest);
    sum->size_only = true;
    if (run_unpack(archive, path, digest, sum, err) < 0)
        return -1;
    cleanup_close int fd = openat(store_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "`%s`", path);
    if (brig_template_tree_resolve(fd, *sum->user, t, err) < 0
        || brig_template_tree_prepare(fd, t, err) < 0)
        return -1;
    return 0;
}

/* The new tree renamed into place (unless another import put the same
 * one there meanwhile) and named, under the lock. */
static int publish(int store_fd, const char *tmp, struct brig_template *t, bool *reused,
                   brig_error_t *err)
{
    cleanup_close int lock = brig_template_lock(store_fd, err);
    if (lock < 0 || check_place(store_fd, t->name, t->digest, reused, err) < 0)
        return -1;
    cleanup_free char *tree = NULL;
    if (asprintf(&tree, TEMPLATE_TREES "/%s", t->digest) < 0)
        return brig_error_set(err, ENOMEM, "template");
    if (!*reused && renameat(store_fd, tmp, store_fd, tree) < 0)
        return brig_error_set(err, errno, "template tree `%s`", t->digest);
    if (brig_template_record_write(store_fd, t, err) == 0)
        return 0;
    /* No name for it: the new tree goes again. */
    brig_error_t ignored = NULL;
    if (!*reused)
        brig_remove_tree_at(store_fd, tree, &ignored);
    brig_error_release(&ignored);
    return -1;
}

/* Under the lock: what dead imports left swept, the name checked; a
 * tree that is there named, else a temp dir made for a new one. */
static int claim(int store_fd, struct summary *sum, bool *there, char **tmp, int *hold,
                 brig_error_t *err)
{
    cleanup_close int lock = brig_template_lock(store_fd, err);
    if (lock < 0 || sweep_temps(store_fd, err) < 0
        || check_place(store_fd, sum->t->name, sum->t->digest, there, err) < 0)
        return -1;
    if (*there)
        return name_tree(store_fd, sum->t, *sum->user, err);
    return make_temp(store_fd, sum->t->name, tmp, hold, err);
}

int brig_template_import(const char *name, const char *archive,
                         struct brig_template_import_result *res, brig_error_t *err)
{
    *res = (struct brig_template_import_result){ 0 };
    if (brig_template_name_validate(name, err) < 0)
        return -1;
    if (access(archive, R_OK) < 0)
        return brig_error_kind(err, BRIG_E_INPUT, "`%s`: %s", archive, strerror(errno));
    cleanup_close int store_fd = brig_template_store_open(NULL, true, err);
    if (store_fd < 0)
        return -1;
    struct brig_template t = { .name = strdup(name), .created = time(NULL) };
    cleanup_free char *user = NULL, *tmp = NULL;
    struct summary sum = { &t, &user, false };
    int r = t.name ? 0 : brig_error_set(err, ENOMEM, "template");
    if (r == 0)
        r = run_unpack(archive, NULL, NULL, &sum, err);
    cleanup_close int hold = -1;
    if (r == 0)
        r = claim(store_fd, &sum, &res->reused, &tmp, &hold, err);
    if (r == 0 && !res->reused)
        r = unpack_new(store_fd, archive, &sum, tmp, err);
    if (r == 0 && !res->reused)
        r = publish(store_fd, tmp, &t, &res->reused, err);
    /* What is left of the temp dir: all of it on a failure, the copy
     * another import beat us to. */
    brig_error_t ignored = NULL;
    if (tmp && (r < 0 || res->reused))
        brig_remove_tree_at(store_fd, tmp, &ignored);
    brig_error_release(&ignored);
    res->jemalloc = t.jemalloc != NULL;
    brig_template_clear(&t);
    return r;
}
