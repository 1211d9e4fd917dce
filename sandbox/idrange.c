/* The records half of idrange.h: who holds which range, kept on disk
 * under a lock. */
#define _GNU_SOURCE
#include "sandbox/idrange.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

static const char *records_dir(void)
{
    const char *env = getenv(BRIG_IDRANGE_DIR_ENV);
    return env && *env ? env : BRIG_IDRANGE_DIR_DEFAULT;
}

/* A file's text, or NULL (and 0) when it does not exist; `name` is
 * absolute with AT_FDCWD. */
static int read_optional(int dir_fd, const char *name, char **out, brig_error_t *err)
{
    size_t len;
    *out = NULL;
    if (brig_read_file_at(dir_fd, name, out, &len, err) == 0)
        return 0;
    if ((*err)->errnum != ENOENT)
        return -1;
    brig_error_release(err);
    return 0;
}

/* The records dir, made when missing, opened and locked. */
static int lock_records(brig_error_t *err)
{
    const char *dir = records_dir();
    cleanup_free char *parent = strdup(dir);
    if (parent == NULL)
        return brig_error_set(err, ENOMEM, "id ranges");
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (mkdir(parent, 0711) < 0 && errno != EEXIST)
            return brig_error_set(err, errno, "id ranges: mkdir `%s`", parent);
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "id ranges: mkdir `%s`", dir);
    cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "id ranges: open `%s`", dir);
    /* The lock is the dir's own (flock works on a directory's fd), held
     * as long as the fd is open. */
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR)
            return brig_error_set(err, errno, "id ranges: lock `%s`", dir);
    return brig_steal_fd(fd);
}

/* ---- one record: "UID GID\nOWNER\nDEV INO\n" ---- */

struct record {
    struct brig_idrange range;
    char owner[4096];
    unsigned long long dev, ino;
};

static int parse_record(const char *text, struct record *rec)
{
    int used = 0;
    if (sscanf(text, "%" SCNu32 " %" SCNu32 "\n%n", &rec->range.uid, &rec->range.gid, &used) != 2
        || used == 0)
        return -1;
    const char *owner = text + used, *nl = strchr(owner, '\n');
    if (nl == NULL || (size_t) (nl - owner) >= sizeof rec->owner)
        return -1;
    memcpy(rec->owner, owner, (size_t) (nl - owner));
    rec->owner[nl - owner] = '\0';
    return sscanf(nl + 1, "%llu %llu", &rec->dev, &rec->ino) == 2 ? 0 : -1;
}

static int read_record(int dir_fd, uint32_t uid, struct record *rec, brig_error_t *err)
{
    char name[16];
    snprintf(name, sizeof name, "%" PRIu32, uid);
    cleanup_free char *text = NULL;
    if (read_optional(dir_fd, name, &text, err) < 0)
        return -1;
    if (text == NULL)
        return 0;
    if (parse_record(text, rec) < 0)
        return brig_error_set(err, EINVAL, "id ranges: record `%s/%s` is malformed", records_dir(),
                              name);
    return 1;
}

/* Whether the dir the record names is still the dir it was made for. */
static bool record_live(const struct record *rec)
{
    struct stat st;
    return stat(rec->owner, &st) == 0 && (unsigned long long) st.st_dev == rec->dev
           && (unsigned long long) st.st_ino == rec->ino;
}

static int write_record(int dir_fd, const struct brig_idrange *r, const char *owner,
                        brig_error_t *err)
{
    struct stat st;
    if (stat(owner, &st) < 0)
        return brig_error_set(err, errno, "id ranges: owner `%s`", owner);
    char name[16];
    snprintf(name, sizeof name, "%" PRIu32, r->uid);
    cleanup_free char *text = NULL;
    if (asprintf(&text, "%" PRIu32 " %" PRIu32 "\n%s\n%llu %llu\n", r->uid, r->gid, owner,
                 (unsigned long long) st.st_dev, (unsigned long long) st.st_ino)
        < 0)
        return brig_error_set(err, ENOMEM, "id ranges");
    return brig_write_file_atomic_at(dir_fd, name, text, strlen(text), 0600, err);
}

static int write_owner_file(const char *owner, const struct brig_idrange *r, brig_error_t *err)
{
    cleanup_close int fd = open(owner, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "id ranges: open `%s`", owner);
    char text[32];
    int n = snprintf(text, sizeof text, "%" PRIu32 " %" PRIu32 "\n", r->uid, r->gid);
    return brig_write_file_atomic_at(fd, BRIG_IDRANGE_FILE, text, (size_t) n, 0644, err);
}

/* ---- the pool, and what others hold ---- */

/* $BRIG_SUBUID / $BRIG_SUBGID (the tests' own files), else the host's. */
static const char *subid_file(const char *env, const char *path)
{
    const char *v = getenv(env);
    return v && *v ? v : path;
}

struct taken {
    struct brig_id_span *uids, *gids;
    size_t n_uids, n_gids;
};

static void taken_clear(struct taken *t)
{
    free(t->uids);
    free(t->gids);
    *t = (struct taken){ 0 };
}

/* The pool, and every id an account or another user's subordinate range
 * holds. */
static int load_pool(struct brig_idpool *pool, struct taken *t, brig_error_t *err)
{
    cleanup_free char *subuid = NULL, *subgid = NULL, *passwd = NULL, *group = NULL;
    *t = (struct taken){ 0 };
    if (read_optional(AT_FDCWD, subid_file("BRIG_SUBUID", "/etc/subuid"), &subuid, err) < 0
        || read_optional(AT_FDCWD, subid_file("BRIG_SUBGID", "/etc/subgid"), &subgid, err) < 0
        || read_optional(AT_FDCWD, "/etc/passwd", &passwd, err) < 0
        || read_optional(AT_FDCWD, "/etc/group", &group, err) < 0)
        return brig_error_wrap(err, "id ranges");
    if (brig_idpool_parse(subuid, subgid, pool, err) < 0)
        return brig_error_wrap(err, "id ranges");
    if (brig_id_spans_add_subid(subuid, BRIG_IDRANGE_USER, &t->uids, &t->n_uids) < 0
        || brig_id_spans_add_accounts(passwd, &t->uids, &t->n_uids) < 0
        || brig_id_spans_add_subid(subgid, BRIG_IDRANGE_USER, &t->gids, &t->n_gids) < 0
        || brig_id_spans_add_accounts(group, &t->gids, &t->n_gids) < 0) {
        taken_clear(t);
        return brig_error_set(err, ENOMEM, "id ranges");
    }
    return 0;
}

static int take(struct taken *t, const struct brig_idrange *r)
{
    struct brig_id_span *u = realloc(t->uids, (t->n_uids + 1) * sizeof *u);
    if (u == NULL)
        return -1;
    t->uids = u;
    u[t->n_uids++] = (struct brig_id_span){ r->uid, BRIG_IDRANGE_SIZE };
    struct brig_id_span *g = realloc(t->gids, (t->n_gids + 1) * sizeof *g);
    if (g == NULL)
        return -1;
    t->gids = g;
    g[t->n_gids++] = (struct brig_id_span){ r->gid, BRIG_IDRANGE_SIZE };
    return 0;
}

/* Every record's range taken, whatever pool it came from (one made before
 * /etc/subuid changed is still held); with `reclaim`, the records whose
 * owner is gone are removed instead. */
static int scan_records(int dir_fd, const struct brig_idpool *pool, bool reclaim, struct taken *t,
                        brig_error_t *err)
{
    int fd = dup(dir_fd);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return brig_error_set(err, errno, "id ranges: read `%s`", records_dir());
    }
    cleanup_dir DIR *dir = d;
    rewinddir(dir);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        char *end;
        unsigned long uid = strtoul(de->d_name, &end, 10);
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || uid > UINT32_MAX)
            continue;
        struct record rec = { .range = { (uint32_t) uid, 0 } };
        /* A slot of this pool says its gids without a read. */
        long slot = -1;
        if (uid >= pool->uid_start && (uid - pool->uid_start) % BRIG_IDRANGE_SIZE == 0
            && (uid - pool->uid_start) / BRIG_IDRANGE_SIZE < brig_idpool_slots(pool))
            slot = (long) ((uid - pool->uid_start) / BRIG_IDRANGE_SIZE);
        if (slot >= 0)
            rec.range.gid = brig_idpool_range(pool, (size_t) slot).gid;
        if ((reclaim || slot < 0) && read_record(dir_fd, (uint32_t) uid, &rec, err) < 0)
            brig_error_release(err); /* a malformed record still holds its uids */
        if (reclaim && rec.owner[0] && !record_live(&rec)) {
            unlinkat(dir_fd, de->d_name, 0);
            continue;
        }
        if (take(t, &rec.range) < 0)
            return brig_error_set(err, ENOMEM, "id ranges");
    }
    return 0;
}

int brig_idrange_reclaim(brig_error_t *err)
{
    cleanup_close int dir_fd = lock_records(err);
    if (dir_fd < 0)
        return -1;
    struct brig_idpool pool;
    struct taken t;
    if (load_pool(&pool, &t, err) < 0)
        return -1;
    int r = scan_records(dir_fd, &pool, true, &t, err);
    taken_clear(&t);
    return r;
}

static int allocate(int dir_fd, const char *owner, struct brig_idrange *out, brig_error_t *err)
{
    struct brig_idpool pool;
    struct taken t;
    if (load_pool(&pool, &t, err) < 0)
        return -1;
    size_t accounts_u = t.n_uids, accounts_g = t.n_gids;
    long slot = -1;
    int r = 0;
    /* Stale records are looked for only when the pool looks full. */
    for (int pass = 0; r == 0 && slot < 0 && pass < 2; pass++) {
        t.n_uids = accounts_u;
        t.n_gids = accounts_g;
        r = scan_records(dir_fd, &pool, pass == 1, &t, err);
        if (r == 0)
            slot = brig_idpool_first_clear(&pool, t.uids, t.n_uids, t.gids, t.n_gids);
        if (slot == -2)
            r = brig_error_set(err, ENOMEM, "id ranges");
    }
    taken_clear(&t);
    if (r == 0 && slot < 0)
        r = brig_error_set(
            err, ENOSPC, "id ranges: every range of the pool (%zu ranges of %u ids, %s) is in use",
            brig_idpool_slots(&pool), BRIG_IDRANGE_SIZE,
            pool.from_subid ? "the `brig` lines of /etc/subuid and /etc/subgid" : "the default");
    if (r < 0)
        return -1;
    *out = brig_idpool_range(&pool, (size_t) slot);
    return write_record(dir_fd, out, owner, err);
}

/* A range claimed again must still be one of this host's to give: a slot
 * of the pool clear of every account and other user's range. */
static int check_claimable(const struct brig_idrange *r, brig_error_t *err)
{
    struct brig_idpool pool;
    struct taken t;
    if (load_pool(&pool, &t, err) < 0)
        return -1;
    long slot = brig_idpool_slot_of(&pool, r);
    bool ok = slot >= 0
              && brig_idpool_slot_clear(&pool, (size_t) slot, t.uids, t.n_uids, t.gids, t.n_gids);
    taken_clear(&t);
    if (!ok)
        return brig_error_set(err, 0,
                              "id ranges: the range of uid %" PRIu32 ", gid %" PRIu32
                              " is not one this host's pool gives (its /etc/subuid or /etc/subgid "
                              "changed?): remove the sandbox and create it again",
                              r->uid, r->gid);
    return 0;
}

/* ---- the calls ---- */

/* The owner as the records name it: its canonical path. */
static int canonical(const char *owner_dir, char out[PATH_MAX], brig_error_t *err)
{
    if (realpath(owner_dir, out) == NULL)
        return brig_error_set(err, errno, "id ranges: owner `%s`", owner_dir);
    return 0;
}

int brig_idrange_read(const char *owner_dir, struct brig_idrange *out, brig_error_t *err)
{
    cleanup_close int fd = open(owner_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "id ranges: open `%s`", owner_dir);
    cleanup_free char *text = NULL;
    if (read_optional(fd, BRIG_IDRANGE_FILE, &text, err) < 0)
        return -1;
    if (text == NULL)
        return 0;
    if (sscanf(text, "%" SCNu32 " %" SCNu32, &out->uid, &out->gid) != 2 || out->uid == 0
        || out->gid == 0)
        return brig_error_set(err, EINVAL, "id ranges: `%s/%s` is malformed", owner_dir,
                              BRIG_IDRANGE_FILE);
    return 1;
}

int brig_idrange_claim(const char *owner_dir, const struct brig_idrange *r, brig_error_t *err)
{
    char owner[PATH_MAX];
    struct brig_idrange had;
    int has = brig_idrange_read(owner_dir, &had, err);
    if (has < 0 || canonical(owner_dir, owner, err) < 0)
        return -1;
    if (has && (had.uid != r->uid || had.gid != r->gid))
        return brig_error_set(err, EBUSY,
                              "id ranges: `%s` holds the range of uid %" PRIu32 ", not %" PRIu32,
                              owner, had.uid, r->uid);
    cleanup_close int dir_fd = lock_records(err);
    if (dir_fd < 0 || check_claimable(r, err) < 0)
        return -1;
    struct record rec;
    int have = read_record(dir_fd, r->uid, &rec, err);
    if (have < 0)
        return -1;
    bool live = have && record_live(&rec);
    if (live && strcmp(rec.owner, owner) != 0)
        return brig_error_set(err, EBUSY, "id ranges: the range of uid %" PRIu32 " is held by `%s`",
                              r->uid, rec.owner);
    if (!live && write_record(dir_fd, r, owner, err) < 0)
        return -1;
    return write_owner_file(owner, r, err);
}

int brig_idrange_acquire(const char *owner_dir, struct brig_idrange *out, brig_error_t *err)
{
    int had = brig_idrange_read(owner_dir, out, err);
    if (had < 0)
        return -1;
    if (had)
        return brig_idrange_claim(owner_dir, out, err);
    char owner[PATH_MAX];
    if (canonical(owner_dir, owner, err) < 0)
        return -1;
    cleanup_close int dir_fd = lock_records(err);
    if (dir_fd < 0 || allocate(dir_fd, owner, out, err) < 0)
        return -1;
    if (write_owner_file(owner, out, err) < 0) {
        char name[16];
        snprintf(name, sizeof name, "%" PRIu32, out->uid);
        unlinkat(dir_fd, name, 0);
        return -1;
    }
    return 0;
}

int brig_idrange_forget(const char *owner, const struct brig_idrange *r, brig_error_t *err)
{
    cleanup_close int dir_fd = lock_records(err);
    if (dir_fd < 0)
        return -1;
    struct record rec;
    int have = read_record(dir_fd, r->uid, &rec, err);
    if (have <= 0)
        return have;
    char name[16];
    snprintf(name, sizeof name, "%" PRIu32, r->uid);
    if (strcmp(rec.owner, owner) == 0 && unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "id ranges: remove `%s/%s`", records_dir(), name);
    return 0;
}

int brig_idrange_release(const char *owner_dir, brig_error_t *err)
{
    struct brig_idrange r;
    char owner[PATH_MAX];
    int had = brig_idrange_read(owner_dir, &r, err);
    if (had <= 0)
        return had;
    if (canonical(owner_dir, owner, err) < 0 || brig_idrange_forget(owner, &r, err) < 0)
        return -1;
    cleanup_close int fd = open(owner_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && unlinkat(fd, BRIG_IDRANGE_FILE, 0) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "id ranges: remove `%s/%s`", owner_dir,
                              BRIG_IDRANGE_FILE);
    return 0;
}
