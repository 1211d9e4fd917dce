#define _GNU_SOURCE
/* template_int.h: a template's tree made ready for sandboxes. The tree
 * is the image's, so every path in it is looked up inside it
 * (base/path.h: a symlink resolves as if the tree were the whole file
 * system), and its /etc/passwd is read by hand, never through NSS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "base/utils.h"
#include "sandbox/template_int.h"

/* The ids a sandbox's user namespace maps. */
#define IDS_MAX 65535u
#define MAX_DB_BYTES (4u << 20)

static const char *const jemalloc_paths[] = {
    BRIG_SANDBOX_JEMALLOC,
    "/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib64/libjemalloc.so.2",
    "/usr/lib/libjemalloc.so.2",
    "/usr/local/lib/libjemalloc.so.2",
    NULL,
};

/* A file of the tree read whole; NULL in *out when it has none. */
static int read_in_tree(int tree_fd, const char *path, char **out, brig_error_t *err)
{
    *out = NULL;
    cleanup_close int fd = brig_path_try_open_in_root(tree_fd, path, O_RDONLY | O_CLOEXEC, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    if (st.st_size > MAX_DB_BYTES)
        return brig_error_kind(err, BRIG_E_INPUT, "the image's %s is too large", path);
    char *text = malloc((size_t) st.st_size + 1);
    if (text == NULL)
        return brig_error_set(err, ENOMEM, "%s", path);
    ssize_t n = brig_read_all(fd, text, (size_t) st.st_size);
    text[n < 0 ? 0 : n] = '\0';
    *out = text;
    return 0;
}

static bool is_number(const char *s)
{
    return s[0] && strspn(s, "0123456789") == strlen(s) && strlen(s) < 10;
}

/* In a passwd or group text, the line whose name (field 1) or id (field
 * 3) is `key`: its id, its gid (field 4; passwd only), its name. */
struct db_entry {
    char name[256];
    uint32_t id, gid;
};

static bool db_find(const char *text, const char *key, bool by_id, struct db_entry *e)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int) strcspn(line, "\n"), line);
        char *fields[5] = { buf, NULL, NULL, NULL, NULL };
        for (int i = 1; i < 5 && fields[i - 1]; i++)
            if ((fields[i] = strchr(fields[i - 1], ':')) != NULL)
                *fields[i]++ = '\0';
        if (fields[2] == NULL || !is_number(fields[2]))
            continue;
        if (strcmp(by_id ? fields[2] : fields[0], key) != 0)
            continue;
        snprintf(e->name, sizeof e->name, "%.255s", fields[0]);
        e->id = (uint32_t) strtoul(fields[2], NULL, 10);
        e->gid = fields[3] && is_number(fields[3]) ? (uint32_t) strtoul(fields[3], NULL, 10)
                                                   : e->id;
        return true;
    }
    return false;
}

/* `part` of User (a user, or with `group` a group) as ids. */
static int resolve_id(const char *db, const char *file, const char *part, struct db_entry *e,
                      brig_error_t *err)
{
    if (is_number(part)) {
        if (!db || !db_find(db, part, true, e))
            *e = (struct db_entry){ .id = (uint32_t) strtoul(part, NULL, 10),
                                    .gid = (uint32_t) strtoul(part, NULL, 10) };
        return 0;
    }
    if (db && db_find(db, part, false, e))
        return 0;
    return brig_error_kind(err, BRIG_E_INPUT, "the image's user `%s` is not in its %s", part, file);
}

static int resolve_user(int tree_fd, const char *user, struct brig_template *t, brig_error_t *err)
{
    cleanup_free char *copy = strdup(user), *passwd = NULL, *group = NULL;
    if (copy == NULL)
        return brig_error_set(err, ENOMEM, "user");
    char *g = strchr(copy, ':');
    if (g)
        *g++ = '\0';
    t->uid = BRIG_SANDBOX_UID;
    t->gid = BRIG_SANDBOX_GID;
    if (copy[0] == '\0' || strcmp(copy, "root") == 0 || strcmp(copy, "0") == 0)
        return 0; /* the sandbox's policy: never root, 1000:1000 instead */
    struct db_entry u, grp;
    if (read_in_tree(tree_fd, "/etc/passwd", &passwd, err) < 0
        || read_in_tree(tree_fd, "/etc/group", &group, err) < 0
        || resolve_id(passwd, "/etc/passwd", copy, &u, err) < 0)
        return -1;
    if (u.id == 0)
        return 0;
    grp.id = u.gid;
    if (g && *g && resolve_id(group, "/etc/group", g, &grp, err) < 0)
        return -1;
    if (u.id > IDS_MAX || grp.id > IDS_MAX)
        return brig_error_kind(err, BRIG_E_INPUT,
                               "the image's user `%s` (%u:%u) is past the ids a sandbox maps "
                               "(0-%u)",
                               user, u.id, grp.id, IDS_MAX);
    t->uid = u.id;
    t->gid = grp.id;
    if (u.name[0] == '\0')
        snprintf(u.name, sizeof u.name, "%u", u.id);
    return (t->user_name = strdup(u.name)) ? 0 : brig_error_set(err, ENOMEM, "user");
}

int brig_template_tree_resolve(int tree_fd, const char *user, struct brig_template *t,
                               brig_error_t *err)
{
    if (resolve_user(tree_fd, user, t, err) < 0)
        return -1;
    for (size_t i = 0; jemalloc_paths[i] && t->jemalloc == NULL; i++) {
        cleanup_close int fd = brig_path_try_open_in_root(tree_fd, jemalloc_paths[i],
                                                          O_RDONLY | O_CLOEXEC, 0);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
            && (t->jemalloc = strdup(jemalloc_paths[i])) == NULL)
            return brig_error_set(err, ENOMEM, "jemalloc");
    }
    return 0;
}

/* A dir the profile mounts over, made; its fd (O_PATH). */
static int make_dir(int tree_fd, const char *path, brig_error_t *err)
{
    int fd = brig_path_mkdir_in_root(tree_fd, path, 0755, err);
    return fd < 0 ? brig_error_wrap(err, "template tree") : fd;
}

static int make_file(int tree_fd, const char *path, mode_t mode, brig_error_t *err)
{
    int fd = brig_path_mkfile_in_root(tree_fd, path, mode, err);
    if (fd < 0)
        return brig_error_wrap(err, "template tree");
    close(fd);
    return 0;
}

/* /mnt/data the sandbox user's, as the small tree has it. */
static int own_data(int tree_fd, const struct brig_template *t, brig_error_t *err)
{
    cleanup_close int fd = make_dir(tree_fd, BRIG_SANDBOX_DATA, err);
    char proc[BRIG_FD_PATH_MAX];
    if (fd < 0)
        return -1;
    brig_fd_path(fd, proc);
    if (chown(proc, t->uid, t->gid) < 0 || chmod(proc, 0755) < 0)
        return brig_error_set(err, errno, "template tree: %s", BRIG_SANDBOX_DATA);
    return 0;
}

static int write_jemalloc_path(int tree_fd, const struct brig_template *t, brig_error_t *err)
{
    cleanup_close int etc = make_dir(tree_fd, "/etc/brig", err);
    if (etc < 0)
        return -1;
    if (t->jemalloc == NULL)
        return 0;
    cleanup_free char *line = NULL;
    if (asprintf(&line, "%s\n", t->jemalloc) < 0)
        return brig_error_set(err, ENOMEM, "template tree");
    if (brig_write_file_atomic_at(etc, "jemalloc-path", line, strlen(line), 0644, err) < 0)
        return brig_error_wrap(err, "template tree");
    return 0;
}

int brig_template_tree_prepare(int tree_fd, const struct brig_template *t, brig_error_t *err)
{
    static const char *const dirs[] = { "/proc",           "/dev", "/sys", "/tmp", "/run",
                                        BRIG_SANDBOX_HOME, NULL };
    /* Searchable by everyone: its root is a stranger to the host. */
    if (fchmod(tree_fd, 0755) < 0)
        return brig_error_set(err, errno, "template tree");
    for (size_t i = 0; dirs[i]; i++) {
        int fd = make_dir(tree_fd, dirs[i], err);
        if (fd < 0)
            return -1;
        close(fd);
    }
    if (t->workdir) {
        int fd = make_dir(tree_fd, t->workdir, err);
        if (fd < 0)
            return -1;
        close(fd);
    }
    if (own_data(tree_fd, t, err) < 0 || write_jemalloc_path(tree_fd, t, err) < 0
        || make_file(tree_fd, BRIG_SANDBOX_INIT, 0755, err) < 0
        || make_file(tree_fd, BRIG_SANDBOX_INIT_CONF, 0644, err) < 0)
        return -1;
    return 0;
}
