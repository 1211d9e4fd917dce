#define _GNU_SOURCE
/* template.h: which sandboxes use which template. Each use is two
 * records that name each other: STORE/users/NAME/HASH holds the
 * sandbox's dir (HASH: its path's sha256), and that dir's `template`
 * file holds the store and the name. A use is live while both agree; a
 * sandbox removed without a word (its dir gone) leaves a record that the
 * next count drops. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sha256.h"
#include "base/utils.h"
#include "sandbox/template_int.h"

/* What a sandbox dir's `template` file says: "STORE\nNAME\n". */
static int use_text(const char *store, const char *name, char **out)
{
    return asprintf(out, "%s\n%s\n", store, name) < 0 ? (*out = NULL, -1) : 0;
}

static void user_record(const char *sandbox_dir, char path_hash[65])
{
    brig_sha256_hex(sandbox_dir, strlen(sandbox_dir), path_hash);
}

/* Whether the sandbox in `dir` still says it uses store/name. */
static bool live_use(const char *store, const char *name, const char *dir)
{
    cleanup_free char *path = NULL, *text = NULL, *want = NULL;
    size_t len;
    brig_error_t err = NULL;
    if (asprintf(&path, "%s/%s", dir, BRIG_TEMPLATE_USE_FILE) < 0 || use_text(store, name, &want))
        return true; /* out of memory: count it, rather than remove a used tree */
    bool live = brig_read_file(path, &text, &len, &err) == 0 && strcmp(text, want) == 0;
    if (!live && err && err->errnum != ENOENT && err->errnum != ENOTDIR)
        live = true;
    brig_error_release(&err);
    return live;
}

/* One user record: counted when live, removed when not. */
static int check_user(int users_fd, const char *store, const char *name, const char *record,
                      size_t *n, char **example, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    size_t len;
    if (brig_read_file_at(users_fd, record, &dir, &len, err) < 0)
        return brig_error_wrap(err, "template `%s`", name);
    if (!live_use(store, name, dir)) {
        if (unlinkat(users_fd, record, 0) < 0 && errno != ENOENT)
            return brig_error_set(err, errno, "template `%s`: user `%s`", name, record);
        return 0;
    }
    if (example && *example == NULL) {
        const char *id = strrchr(dir, '/');
        *example = strdup(id ? id + 1 : dir);
    }
    (*n)++;
    return 0;
}

int brig_template_count_users(int store_fd, const char *name, size_t *n, char **example,
                              brig_error_t *err)
{
    *n = 0;
    char store[PATH_MAX], link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", store_fd);
    ssize_t got = readlink(link, store, sizeof store - 1);
    if (got <= 0)
        return brig_error_set(err, errno, "template store");
    store[got] = '\0';
    cleanup_free char *sub = NULL;
    if (asprintf(&sub, TEMPLATE_USERS "/%s", name) < 0)
        return brig_error_set(err, ENOMEM, "template `%s`", name);
    int fd = openat(store_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "template `%s`: users", name);
    cleanup_dir DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return brig_error_set(err, errno, "template `%s`: users", name);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.'
            && check_user(dirfd(d), store, name, de->d_name, n, example, err) < 0)
            return -1;
    return 0;
}

/* The store's real path, as records name it. */
static char *store_path(void)
{
    return realpath(brig_template_store(), NULL);
}

static int record_use(int store_fd, const char *store, const char *name, const char *dir,
                      brig_error_t *err)
{
    char hash[65];
    cleanup_free char *sub = NULL, *text = NULL;
    user_record(dir, hash);
    if (asprintf(&sub, TEMPLATE_USERS "/%s", name) < 0 || use_text(store, name, &text) < 0)
        return brig_error_set(err, ENOMEM, "template `%s`", name);
    if (mkdirat(store_fd, sub, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "template `%s`: users", name);
    cleanup_close int users = openat(store_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (users < 0)
        return brig_error_set(err, errno, "template `%s`: users", name);
    if (brig_write_file_atomic_at(users, hash, dir, strlen(dir), 0600, err) < 0)
        return brig_error_wrap(err, "template `%s`", name);
    cleanup_close int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0)
        return brig_error_set(err, errno, "`%s`", dir);
    return brig_write_file_atomic_at(dir_fd, BRIG_TEMPLATE_USE_FILE, text, strlen(text), 0600, err);
}

int brig_template_use(const struct brig_profile_settings *s, const char *dir, brig_error_t *err)
{
    cleanup_free char *store = store_path(), *tree = NULL;
    if (store == NULL)
        return brig_error_set(err, errno, "template store `%s`", brig_template_store());
    /* The dir as records name it: whatever the home's spelling. */
    cleanup_free char *sandbox_dir = realpath(dir, NULL);
    if (sandbox_dir == NULL)
        return brig_error_set(err, errno, "`%s`", dir);
    cleanup_close int store_fd = brig_template_store_open(store, false, err);
    if (store_fd < 0)
        return -1;
    cleanup_close int lock = brig_template_lock(store_fd, err);
    if (lock < 0)
        return -1;
    struct brig_template t;
    if (brig_template_record_read(store_fd, s->template_name, &t, err) < 0)
        return -1;
    int r = asprintf(&tree, "%s/" TEMPLATE_TREES "/%s", store, t.digest) < 0 ? -1 : 0;
    if (r < 0)
        tree = NULL, r = brig_error_set(err, ENOMEM, "template");
    /* Imported again since the settings were read: another image. */
    if (r == 0 && strcmp(tree, s->rootfs) != 0)
        r = brig_error_kind(err, BRIG_E_STATE, "template `%s` changed under the create: try again",
                            s->template_name);
    if (r == 0)
        r = record_use(store_fd, store, s->template_name, sandbox_dir, err);
    brig_template_clear(&t);
    return r;
}

int brig_template_unuse(const char *dir, brig_error_t *err)
{
    cleanup_free char *path = NULL, *text = NULL, *sub = NULL;
    cleanup_free char *sandbox_dir = realpath(dir, NULL);
    size_t len;
    if (sandbox_dir == NULL)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "`%s`", dir);
    if (asprintf(&path, "%s/%s", sandbox_dir, BRIG_TEMPLATE_USE_FILE) < 0)
        return brig_error_set(err, ENOMEM, "template");
    if (brig_read_file(path, &text, &len, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return -1;
        brig_error_release(err);
        return 0;
    }
    char *name = strchr(text, '\n');
    if (name == NULL)
        return brig_error_set(err, 0, "`%s`: damaged", path);
    *name++ = '\0';
    name[strcspn(name, "\n")] = '\0';
    char hash[65];
    user_record(sandbox_dir, hash);
    if (brig_template_name_validate(name, err) < 0
        || asprintf(&sub, TEMPLATE_USERS "/%s/%s", name, hash) < 0)
        return *err ? -1 : brig_error_set(err, ENOMEM, "template");
    /* Its store gone (removed by hand): nothing to forget there. */
    cleanup_close int store_fd = brig_template_store_open(text, false, err);
    if (store_fd < 0 && (*err)->errnum != ENOENT)
        return -1;
    brig_error_release(err);
    cleanup_close int lock = store_fd < 0 ? -1 : brig_template_lock(store_fd, err);
    if (store_fd >= 0 && lock < 0)
        return -1;
    if (store_fd >= 0 && unlinkat(store_fd, sub, 0) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "template `%s`: forget `%s`", name, sandbox_dir);
    if (unlink(path) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "remove `%s`", path);
    return 0;
}
