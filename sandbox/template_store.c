#define _GNU_SOURCE
/* template.h: the store's names, their records and users, and removal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sha256.h"
#include "base/utils.h"
#include "sandbox/template_int.h"

#define NAME_MAX_LEN 128

const char *brig_template_store(void)
{
    const char *dir = getenv(BRIG_TEMPLATE_DIR_ENV);
    return dir && *dir ? dir : BRIG_TEMPLATE_DIR_DEFAULT;
}

int brig_template_name_validate(const char *name, brig_error_t *err)
{
    size_t n = strlen(name);
    bool ok = n > 0 && n <= NAME_MAX_LEN && name[0] != '.' && name[0] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z')
             || (name[i] >= '0' && name[i] <= '9') || strchr("._-", name[i]);
    if (!ok)
        return brig_error_kind(err, BRIG_E_INPUT,
                               "invalid template name `%s` (letters, digits, `.`, `_`, `-`)", name);
    return 0;
}

/* The store made, root's alone, and the dirs above it (0755) where
 * missing. */
static int make_store(const char *store)
{
    if (mkdir(store, 0700) == 0 || errno == EEXIST)
        return 0;
    cleanup_free char *path = strdup(store);
    if (errno != ENOENT || path == NULL)
        return -1;
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(store, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int brig_template_store_open(const char *store, bool create, brig_error_t *err)
{
    store = store ? store : brig_template_store();
    static const char *const subs[] = { TEMPLATE_TREES, TEMPLATE_NAMES, TEMPLATE_USERS,
                                        TEMPLATE_TMP };
    if (create && make_store(store) < 0)
        return brig_error_set(err, errno, "template store `%s`", store);
    int fd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "template store `%s`", store);
    for (size_t i = 0; create && i < sizeof subs / sizeof *subs; i++) {
        if (mkdirat(fd, subs[i], 0700) < 0 && errno != EEXIST) {
            brig_error_set(err, errno, "template store `%s/%s`", store, subs[i]);
            close(fd);
            return -1;
        }
    }
    return fd;
}

int brig_template_lock(int store_fd, brig_error_t *err)
{
    int fd = openat(store_fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return brig_error_set(err, errno, "template store: lock");
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            brig_error_set(err, errno, "template store: lock");
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* ---- records ---- */

int brig_template_record_write(int store_fd, const struct brig_template *t, brig_error_t *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return brig_error_set(err, errno, "template `%s`", t->name);
    fprintf(f,
            "digest=%s\nformat=%s\nlayers=%" PRId64 "\nsize=%" PRId64 "\ncreated=%" PRId64
            "\nuid=%u\ngid=%u\n",
            t->digest, t->format, t->layers, t->size, t->created, t->uid, t->gid);
    if (t->user_name)
        fprintf(f, "user_name=%s\n", t->user_name);
    if (t->workdir)
        fprintf(f, "workdir=%s\n", t->workdir);
    if (t->jemalloc)
        fprintf(f, "jemalloc=%s\n", t->jemalloc);
    for (size_t i = 0; t->env && t->env[i]; i++)
        fprintf(f, "env=%s\n", t->env[i]);
    if (fclose(f) != 0) {
        free(text);
        return brig_error_set(err, ENOMEM, "template `%s`", t->name);
    }
    cleanup_free char *owned = text;
    cleanup_close int names = openat(store_fd, TEMPLATE_NAMES, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (names < 0)
        return brig_error_set(err, errno, "template store: names");
    return brig_write_file_atomic_at(names, t->name, text, len, 0600, err);
}

int brig_template_add_env(struct brig_template *t, const char *v)
{
    size_t n = 0;
    while (t->env && t->env[n])
        n++;
    char **bigger = realloc(t->env, (n + 2) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    t->env = bigger;
    bigger[n + 1] = NULL;
    return (bigger[n] = strdup(v)) ? 0 : -1;
}

int brig_template_set_str(char **field, const char *v)
{
    free(*field);
    return (*field = strdup(v)) ? 0 : -1;
}

/* One `key=value` of a record. */
static int record_line(char *line, unsigned lineno, void *ctx)
{
    struct brig_template *t = ctx;
    char *v = strchr(line, '=');
    if (v == NULL)
        return 0;
    *v++ = '\0';
    int64_t *nums[] = { &t->layers, &t->size, &t->created };
    static const char *const num_keys[] = { "layers", "size", "created" };
    for (size_t i = 0; i < 3; i++)
        if (strcmp(line, num_keys[i]) == 0)
            *nums[i] = strtoll(v, NULL, 10);
    if (strcmp(line, "uid") == 0)
        t->uid = (uint32_t) strtoul(v, NULL, 10);
    else if (strcmp(line, "gid") == 0)
        t->gid = (uint32_t) strtoul(v, NULL, 10);
    else if (strcmp(line, "digest") == 0)
        snprintf(t->digest, sizeof t->digest, "%s", v);
    else if (strcmp(line, "format") == 0)
        return brig_template_set_str(&t->format, v);
    else if (strcmp(line, "user_name") == 0)
        return brig_template_set_str(&t->user_name, v);
    else if (strcmp(line, "workdir") == 0)
        return brig_template_set_str(&t->workdir, v);
    else if (strcmp(line, "jemalloc") == 0)
        return brig_template_set_str(&t->jemalloc, v);
    else if (strcmp(line, "env") == 0)
        return brig_template_add_env(t, v);
    return 0;
}

int brig_template_record_read(int store_fd, const char *name, struct brig_template *t,
                              brig_error_t *err)
{
    *t = (struct brig_template){ .name = strdup(name) };
    cleanup_free char *path = NULL, *text = NULL;
    size_t len;
    if (t->name == NULL || asprintf(&path, TEMPLATE_NAMES "/%s", name) < 0)
        return brig_error_set(err, ENOMEM, "template `%s`", name);
    if (brig_read_file_at(store_fd, path, &text, &len, err) < 0) {
        int e = (*err)->errnum;
        brig_template_clear(t);
        if (e == ENOENT)
            return brig_error_kind(err, ENOENT, "no template `%s`", name);
        return brig_error_wrap(err, "template `%s`", name);
    }
    if (brig_each_line(text, record_line, t) != 0 || t->digest[0] == '\0') {
        brig_template_clear(t);
        return brig_error_set(err, 0, "template `%s`: its record is damaged", name);
    }
    return 0;
}

int brig_template_read(const char *name, struct brig_template *t, brig_error_t *err)
{
    *t = (struct brig_template){ 0 };
    if (brig_template_name_validate(name, err) < 0)
        return -1;
    cleanup_close int store = brig_template_store_open(NULL, false, err);
    if (store < 0) {
        if ((*err)->errnum == ENOENT)
            return brig_error_kind(err, ENOENT, "no template `%s`", name);
        return -1;
    }
    return brig_template_record_read(store, name, t, err);
}

void brig_template_clear(struct brig_template *t)
{
    free(t->name);
    free(t->format);
    free(t->user_name);
    free(t->workdir);
    free(t->jemalloc);
    for (size_t i = 0; t->env && t->env[i]; i++)
        free(t->env[i]);
    free(t->env);
    *t = (struct brig_template){ 0 };
}

/* ---- list ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct brig_template *) a)->name,
                  ((const struct brig_template *) b)->name);
}

/* Every record of names/, users counted (the lock held). */
static int read_all(int store_fd, struct brig_template **out, size_t *n, brig_error_t *err)
{
    int fd = openat(store_fd, TEMPLATE_NAMES, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cleanup_dir DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "template store: names");
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        /* Not a name: a temp file of an atomic write. */
        if (de->d_name[0] == '.')
            continue;
        struct brig_template *bigger = realloc(*out, (*n + 1) * sizeof *bigger);
        if (bigger == NULL)
            return brig_error_set(err, ENOMEM, "templates");
        *out = bigger;
        if (brig_template_record_read(store_fd, de->d_name, &bigger[*n], err) < 0)
            return -1;
        (*n)++;
        if (brig_template_count_users(store_fd, de->d_name, &bigger[*n - 1].users, NULL, err) < 0)
            return -1;
    }
    return 0;
}

int brig_template_tree_size(int store_fd, const char *digest, int64_t *size, brig_error_t *err)
{
    struct brig_template *all = NULL;
    size_t n = 0;
    *size = 0;
    int r = read_all(store_fd, &all, &n, err);
    for (size_t i = 0; r == 0 && i < n; i++)
        if (strcmp(all[i].digest, digest) == 0)
            *size = all[i].size;
    brig_template_list_free(all, n);
    return r;
}

int brig_template_list(struct brig_template **out, size_t *n, brig_error_t *err)
{
    *out = NULL;
    *n = 0;
    cleanup_close int store = brig_template_store_open(NULL, false, err);
    if (store < 0) {
        if ((*err)->errnum != ENOENT)
            return -1;
        brig_error_release(err);
        return 0;
    }
    cleanup_close int lock = brig_template_lock(store, err);
    if (lock < 0)
        return -1;
    if (read_all(store, out, n, err) < 0) {
        brig_template_list_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, by_name);
    return 0;
}

void brig_template_list_free(struct brig_template *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        brig_template_clear(&t[i]);
    free(t);
}

/* ---- remove ---- */

/* Whether a name other than `name` has the tree `digest`. */
static int tree_shared(int store_fd, const char *name, const char *digest, bool *shared,
                       brig_error_t *err)
{
    struct brig_template *all = NULL;
    size_t n = 0;
    *shared = false;
    int r = read_all(store_fd, &all, &n, err);
    for (size_t i = 0; r == 0 && i < n; i++)
        if (strcmp(all[i].name, name) != 0 && strcmp(all[i].digest, digest) == 0)
            *shared = true;
    brig_template_list_free(all, n);
    return r;
}

static int remove_locked(int store_fd, const struct brig_template *t, brig_error_t *err)
{
    size_t users;
    cleanup_free char *example = NULL, *name_path = NULL, *users_path = NULL;
    if (brig_template_count_users(store_fd, t->name, &users, &example, err) < 0)
        return -1;
    if (users)
        return brig_error_kind(err, EBUSY,
                               "template `%s` is used by %zu sandbox%s (`%s`): rm %s first",
                               t->name, users, users == 1 ? "" : "es", example,
                               users == 1 ? "it" : "them");
    if (asprintf(&name_path, TEMPLATE_NAMES "/%s", t->name) < 0
        || asprintf(&users_path, TEMPLATE_USERS "/%s", t->name) < 0)
        return brig_error_set(err, ENOMEM, "template `%s`", t->name);
    if (unlinkat(store_fd, name_path, 0) < 0)
        return brig_error_set(err, errno, "template `%s`", t->name);
    bool shared;
    if (brig_remove_tree_at(store_fd, users_path, err) < 0
        || tree_shared(store_fd, t->name, t->digest, &shared, err) < 0)
        return brig_error_wrap(err, "template `%s`", t->name);
    if (shared)
        return 0;
    cleanup_close int trees = openat(store_fd, TEMPLATE_TREES, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (trees < 0 || brig_remove_tree_at(trees, t->digest, err) < 0)
        return *err ? brig_error_wrap(err, "template `%s`: its tree", t->name)
                    : brig_error_set(err, errno, "template `%s`: its tree", t->name);
    return 0;
}

int brig_template_remove(const char *name, brig_error_t *err)
{
    if (brig_template_name_validate(name, err) < 0)
        return -1;
    cleanup_close int store = brig_template_store_open(NULL, false, err);
    if (store < 0)
        return (*err)->errnum == ENOENT ? brig_error_kind(err, ENOENT, "no template `%s`", name)
                                        : -1;
    cleanup_close int lock = brig_template_lock(store, err);
    if (lock < 0)
        return -1;
    struct brig_template t;
    if (brig_template_record_read(store, name, &t, err) < 0)
        return -1;
    int r = remove_locked(store, &t, err);
    brig_template_clear(&t);
    return r;
}

/* ---- a sandbox's settings ---- */

static int settings_from(const struct brig_template *t, const char *store,
                         struct brig_profile_settings *s)
{
    free(s->rootfs);
    if (asprintf(&s->rootfs, "%s/" TEMPLATE_TREES "/%s", store, t->digest) < 0) {
        s->rootfs = NULL;
        return -1;
    }
    if (brig_template_set_str(&s->template_name, t->name) < 0
        || brig_template_set_str(&s->jemalloc, t->jemalloc ? t->jemalloc : BRIG_JEMALLOC_NONE) < 0
        || (t->user_name && brig_template_set_str(&s->user_name, t->user_name) < 0)
        || (t->workdir && brig_template_set_str(&s->workdir, t->workdir) < 0))
        return -1;
    s->user_uid = t->uid;
    s->user_gid = t->gid;
    brig_strv_free(&s->env);
    for (size_t i = 0; t->env && t->env[i]; i++) {
        char **bigger = realloc(s->env.v, (s->env.n + 2) * sizeof *bigger);
        if (bigger == NULL)
            return -1;
        s->env.v = bigger;
        if ((bigger[s->env.n] = strdup(t->env[i])) == NULL)
            return -1;
        bigger[++s->env.n] = NULL;
    }
    return 0;
}

int brig_template_settings(const char *name, struct brig_profile_settings *s, brig_error_t *err)
{
    struct brig_template t;
    if (brig_template_read(name, &t, err) < 0)
        return -1;
    cleanup_free char *store = realpath(brig_template_store(), NULL);
    int r = store ? 0 : brig_error_set(err, errno, "template store `%s`", brig_template_store());
    if (r == 0 && settings_from(&t, store, s) < 0)
        r = brig_error_set(err, ENOMEM, "template `%s`", name);
    brig_template_clear(&t);
    return r;
}
