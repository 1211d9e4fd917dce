#define _GNU_SOURCE
#include "container/state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "cgroup/cgroup.h"
#include "base/cleanup.h"
#include "base/utils.h"

static const char *const status_names[] = {
    [BRIG_STATUS_CREATING] = "creating", [BRIG_STATUS_CREATED] = "created",
    [BRIG_STATUS_RUNNING] = "running",   [BRIG_STATUS_PAUSED] = "paused",
    [BRIG_STATUS_STOPPED] = "stopped",
};

const char *brig_status_name(enum brig_status status)
{
    return status_names[status];
}

int brig_id_validate(const char *id, brig_error_t *err)
{
    if (id == NULL || *id == '\0')
        return brig_error_set(err, 0, "container id must not be empty");
    if (strlen(id) > 1024)
        return brig_error_set(err, 0, "container id `%.32s...` is longer than 1024 bytes", id);
    if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return brig_error_set(err, 0, "invalid container id `%s`", id);
    for (const char *p = id; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                  || c == '_' || c == '+' || c == '-' || c == '.';
        if (!ok)
            return brig_error_set(
                err, 0, "invalid container id `%s`: only letters, digits and _+-. are allowed", id);
    }
    return 0;
}

static int mkdir_p(const char *path, mode_t mode, brig_error_t *err)
{
    cleanup_free char *copy = strdup(path);
    if (copy == NULL)
        return brig_error_set(err, ENOMEM, "create `%s`", path);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, mode) < 0 && errno != EEXIST)
            return brig_error_set(err, errno, "create `%s`", copy);
        *p = '/';
    }
    if (mkdir(copy, mode) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "create `%s`", copy);
    return 0;
}

int brig_error_not_found(brig_error_t *err, const char *id)
{
    brig_error_set(err, 0, "container `%s` does not exist", id);
    (*err)->errnum = ENOENT;
    return -1;
}

int brig_state_root_open(const char *root, bool create, brig_error_t *err)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* The root exists but the first time: only then make its parents. */
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdir_p(root, 0700, err) < 0)
            return brig_error_wrap(err, "state root");
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0)
        return brig_error_set(err, errno, "open state root `%s`", root);
    return fd;
}

/* Locks dir_fd and checks the directory wasn't removed while we waited for
 * the lock (a concurrent delete): rmdir leaves the open fd with nlink 0. */
static int lock_dir(int dir_fd, const char *id, brig_error_t *err)
{
    while (flock(dir_fd, LOCK_EX) < 0) {
        if (errno != EINTR)
            return brig_error_set(err, errno, "lock container `%s`", id);
    }
    struct stat st;
    if (fstat(dir_fd, &st) < 0)
        return brig_error_set(err, errno, "stat container `%s`", id);
    if (st.st_nlink == 0)
        return brig_error_not_found(err, id);
    return 0;
}

int brig_state_dir_create(int root_fd, const char *id, brig_error_t *err)
{
    if (brig_id_validate(id, err) < 0)
        return -1;
    if (mkdirat(root_fd, id, 0700) < 0) {
        if (errno == EEXIST)
            return brig_error_set(err, 0, "container `%s` already exists", id);
        return brig_error_set(err, errno, "create state dir for `%s`", id);
    }
    cleanup_close int fd = openat(root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || lock_dir(fd, id, err) < 0) {
        if (fd < 0)
            brig_error_set(err, errno, "open state dir of `%s`", id);
        unlinkat(root_fd, id, AT_REMOVEDIR);
        return -1;
    }
    return brig_steal_fd(fd);
}

int brig_state_dir_open(int root_fd, const char *id, bool lock, brig_error_t *err)
{
    if (brig_id_validate(id, err) < 0)
        return -1;
    cleanup_close int fd = openat(root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return brig_error_not_found(err, id);
        return brig_error_set(err, errno, "open state dir of `%s`", id);
    }
    if (lock && lock_dir(fd, id, err) < 0)
        return -1;
    return brig_steal_fd(fd);
}

int brig_state_dir_remove(int root_fd, int dir_fd, const char *id, brig_error_t *err)
{
    /* What a state dir holds after a plain run goes by name, without
     * listing the dir; anything else (a handler's files, a fifo left by a
     * create that never started) makes the rmdir fail, and then the whole
     * tree is walked. */
    unlinkat(dir_fd, BRIG_STATE_FILE, 0);
    unlinkat(dir_fd, BRIG_SAVED_CONFIG, 0);
    unlinkat(dir_fd, BRIG_CGROUP_PLANNED, 0);
    if (unlinkat(root_fd, id, AT_REMOVEDIR) == 0)
        return 0;
    return brig_remove_tree_at(root_fd, id, err);
}

/* ---- JSON ---- */

#define GEN_STR(g, s) yajl_gen_string((g), (const unsigned char *) (s), strlen(s))

static void gen_kv(yajl_gen g, const char *key, const char *value)
{
    GEN_STR(g, key);
    GEN_STR(g, value ? value : "");
}

static int gen_finish(yajl_gen g, char **out, brig_error_t *err)
{
    const unsigned char *buf;
    size_t len;
    if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
        return brig_error_set(err, 0, "generate state JSON");
    *out = strndup((const char *) buf, len);
    if (*out == NULL)
        return brig_error_set(err, ENOMEM, "generate state JSON");
    return 0;
}

static void gen_annotations(yajl_gen g, const struct brig_kv_list *a)
{
    yajl_gen_map_open(g);
    for (size_t i = 0; i < a->n; i++)
        gen_kv(g, a->items[i].key, a->items[i].value);
    yajl_gen_map_close(g);
}

int brig_state_to_json(const struct brig_state *st, enum brig_status status, bool pretty,
                       char **out, brig_error_t *err)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return brig_error_set(err, ENOMEM, "generate state JSON");
    yajl_gen_config(g, yajl_gen_beautify, pretty ? 1 : 0);
    yajl_gen_config(g, yajl_gen_indent_string, "  ");
    yajl_gen_map_open(g);
    gen_kv(g, "ociVersion", BRIG_OCI_VERSION);
    gen_kv(g, "id", st->id);
    GEN_STR(g, "pid");
    yajl_gen_integer(g, status == BRIG_STATUS_STOPPED ? 0 : st->pid);
    gen_kv(g, "status", brig_status_name(status));
    gen_kv(g, "bundle", st->bundle);
    gen_kv(g, "rootfs", st->rootfs);
    gen_kv(g, "created", st->created);
    gen_kv(g, "owner", st->owner);
    /* Omitted when empty, as the runtime spec's state schema allows. */
    if (st->annotations.n > 0) {
        GEN_STR(g, "annotations");
        gen_annotations(g, &st->annotations);
    }
    yajl_gen_map_close(g);
    int r = gen_finish(g, out, err);
    yajl_gen_free(g);
    return r;
}

static int state_file_json(const struct brig_state *st, char **out, brig_error_t *err)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return brig_error_set(err, ENOMEM, "generate state JSON");
    yajl_gen_map_open(g);
    gen_kv(g, "id", st->id);
    GEN_STR(g, "pid");
    yajl_gen_integer(g, st->pid);
    GEN_STR(g, "pidStartTime");
    yajl_gen_integer(g, (long long) st->pid_start_time);
    gen_kv(g, "bundle", st->bundle);
    gen_kv(g, "rootfs", st->rootfs);
    gen_kv(g, "created", st->created);
    gen_kv(g, "owner", st->owner);
    GEN_STR(g, "ownPidNamespace");
    yajl_gen_bool(g, st->own_pid_ns);
    gen_kv(g, "cgroupPath", st->cgroup_path);
    GEN_STR(g, "postHooks");
    yajl_gen_integer(g, st->post_hooks);
    GEN_STR(g, "annotations");
    gen_annotations(g, &st->annotations);
    yajl_gen_map_close(g);
    int r = gen_finish(g, out, err);
    yajl_gen_free(g);
    return r;
}

int brig_state_write(int dir_fd, const struct brig_state *st, brig_error_t *err)
{
    cleanup_free char *json = NULL;
    if (state_file_json(st, &json, err) < 0)
        return -1;
    return brig_write_file_atomic_at(dir_fd, BRIG_STATE_FILE, json, strlen(json), 0600, err);
}

static char *tree_string(yajl_val root, const char *key)
{
    const char *path[] = { key, NULL };
    yajl_val v = yajl_tree_get(root, path, yajl_t_string);
    const char *s = v ? YAJL_GET_STRING(v) : NULL;
    return strdup(s ? s : "");
}

static long long tree_int(yajl_val root, const char *key)
{
    const char *path[] = { key, NULL };
    yajl_val v = yajl_tree_get(root, path, yajl_t_number);
    return v && YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : 0;
}

static int read_annotations(yajl_val root, struct brig_kv_list *out)
{
    const char *path[] = { "annotations", NULL };
    yajl_val v = yajl_tree_get(root, path, yajl_t_object);
    if (v == NULL || v->u.object.len == 0)
        return 0;
    out->items = calloc(v->u.object.len, sizeof *out->items);
    if (out->items == NULL)
        return -1;
    for (size_t i = 0; i < v->u.object.len; i++) {
        yajl_val val = v->u.object.values[i];
        out->items[i].key = strdup(v->u.object.keys[i]);
        out->items[i].value = strdup(YAJL_IS_STRING(val) ? YAJL_GET_STRING(val) : "");
        out->n++;
        if (out->items[i].key == NULL || out->items[i].value == NULL)
            return -1;
    }
    return 0;
}

int brig_state_read(int dir_fd, const char *id, struct brig_state **out, brig_error_t *err)
{
    cleanup_free char *json = NULL;
    if (brig_read_file_at(dir_fd, BRIG_STATE_FILE, &json, NULL, err) < 0) {
        if ((*err)->errnum == ENOENT) {
            /* The dir exists but create hasn't written state yet (or died
             * before it did): report "creating" with what we know. */
            struct brig_state *st = calloc(1, sizeof *st);
            if (st == NULL || (st->id = strdup(id)) == NULL) {
                free(st);
                return brig_error_set(err, ENOMEM, "read state of `%s`", id);
            }
            st->bundle = strdup("");
            st->rootfs = strdup("");
            st->created = strdup("");
            st->owner = strdup("");
            st->cgroup_path = strdup("");
            st->post_hooks = -1;
            brig_error_release(err);
            *out = st;
            return 0;
        }
        return brig_error_wrap(err, "read state of `%s`", id);
    }
    char errbuf[256];
    yajl_val root = yajl_tree_parse(json, errbuf, sizeof errbuf);
    if (root == NULL)
        return brig_error_set(err, 0, "state of `%s` is corrupt", id);
    struct brig_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        yajl_tree_free(root);
        return brig_error_set(err, ENOMEM, "read state of `%s`", id);
    }
    st->id = strdup(id);
    st->pid = (pid_t) tree_int(root, "pid");
    st->pid_start_time = (unsigned long long) tree_int(root, "pidStartTime");
    st->bundle = tree_string(root, "bundle");
    st->rootfs = tree_string(root, "rootfs");
    st->created = tree_string(root, "created");
    st->owner = tree_string(root, "owner");
    st->cgroup_path = tree_string(root, "cgroupPath");
    const char *post_hooks[] = { "postHooks", NULL };
    yajl_val hooks = yajl_tree_get(root, post_hooks, yajl_t_number);
    st->post_hooks = hooks && YAJL_IS_INTEGER(hooks) ? (int) YAJL_GET_INTEGER(hooks) : -1;
    const char *own_pid[] = { "ownPidNamespace", NULL };
    st->own_pid_ns = YAJL_IS_TRUE(yajl_tree_get(root, own_pid, yajl_t_true));
    int ann = read_annotations(root, &st->annotations);
    yajl_tree_free(root);
    if (ann < 0 || !st->id || !st->bundle || !st->rootfs || !st->created || !st->owner
        || !st->cgroup_path) {
        brig_state_free(st);
        return brig_error_set(err, ENOMEM, "read state of `%s`", id);
    }
    *out = st;
    return 0;
}

void brig_state_free(struct brig_state *st)
{
    if (st == NULL)
        return;
    free(st->id);
    free(st->bundle);
    free(st->rootfs);
    free(st->created);
    free(st->owner);
    free(st->cgroup_path);
    for (size_t i = 0; i < st->annotations.n; i++) {
        free(st->annotations.items[i].key);
        free(st->annotations.items[i].value);
    }
    free(st->annotations.items);
    free(st);
}

bool brig_state_init_alive(const struct brig_state *st)
{
    if (st->pid <= 0)
        return false;
    /* One read of /proc/PID/stat: not a zombie, and the same process
     * (its start time) rather than a later one that got the pid. */
    char state = 0;
    unsigned long long start = 0;
    brig_error_t err = NULL;
    if (brig_process_stat(st->pid, &state, &start, &err) < 0) {
        brig_error_release(&err);
        return false;
    }
    return state != 'Z' && state != 'X' && start == st->pid_start_time;
}

static bool cgroup_frozen(const char *path, const struct brig_cgroup *opened)
{
    return opened ? brig_cgroup_is_frozen(opened) : brig_cgroup_frozen_at(path);
}

enum brig_status brig_state_status(int dir_fd, const struct brig_state *st)
{
    return brig_state_status_in(dir_fd, st, NULL);
}

enum brig_status brig_state_status_in(int dir_fd, const struct brig_state *st,
                                      const struct brig_cgroup *cg)
{
    /* No init recorded: a create in progress, or one that died half-way
     * (create holds the lock, so whoever sees this under the lock sees the
     * remains of a dead one). */
    if (st->pid == 0)
        return BRIG_STATUS_CREATING;
    if (!brig_state_init_alive(st))
        return BRIG_STATUS_STOPPED;
    if (faccessat(dir_fd, BRIG_EXEC_FIFO, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return BRIG_STATUS_CREATED;
    if (st->cgroup_path && *st->cgroup_path && cgroup_frozen(st->cgroup_path, cg))
        return BRIG_STATUS_PAUSED;
    return BRIG_STATUS_RUNNING;
}

/* The civil date of a day count since 1970-01-01 (proleptic Gregorian, in
 * 400-year eras of 146097 days, with years starting in March so that the
 * leap day comes last). */
static void civil_from_days(long long days, int *year, int *month, int *day)
{
    days += 719468;
    long long era = (days >= 0 ? days : days - 146096) / 146097;
    long long doe = days - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *day = (int) (doy - (153 * mp + 2) / 5 + 1);
    *month = (int) (mp < 10 ? mp + 3 : mp - 9);
    *year = (int) (yoe + era * 400 + (*month <= 2));
}

char *brig_timestamp_at(const struct timespec *ts)
{
    char *out = NULL;
    /* Not gmtime_r nor strftime: glibc reads /etc/localtime for either,
     * and UTC needs no time zone. */
    long long secs = ts->tv_sec, days = secs / 86400, rest = secs % 86400;
    if (rest < 0) {
        rest += 86400;
        days--;
    }
    int year, month, day;
    civil_from_days(days, &year, &month, &day);
    if (asprintf(&out, "%04d-%02d-%02dT%02lld:%02lld:%02lld.%09ldZ", year, month, day, rest / 3600,
                 rest / 60 % 60, rest % 60, ts->tv_nsec)
        < 0)
        return NULL;
    return out;
}

char *brig_timestamp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return brig_timestamp_at(&ts);
}
