#define _GNU_SOURCE
#include "sandbox/manage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "container/checkpoint.h"
#include "container/container.h"
#include "sandbox/dataimage.h"
#include "sandbox/idrange.h"
#include "sandbox/layout.h"
#include "sandbox/lifetime.h"
#include "sandbox/reaper.h"
#include "sandbox/sandbox.h"
#include "sandbox/template.h"
#include "sandbox/transfer.h"
#include "sandbox/userns.h"
#include "spec/spec.h"

#define CREATE "sandbox create"

/* Whether the state root holds a container of that id, and its status. */
static bool container_status(const char *root, const char *id, enum brig_status *status)
{
    struct brig_state *state = NULL;
    brig_error_t err = NULL;
    int r = brig_container_state(root, id, &state, status, &err);
    brig_error_release(&err);
    brig_state_free(state);
    return r == 0;
}

/* ---- create ---- */

/* The home and the sandbox's dir. An existing dir is a sandbox whose init
 * stopped: its data is reused, so *fresh stays false and a failed create
 * leaves it alone. */
static int make_dirs(const char *dir, bool *fresh, brig_error_t *err)
{
    const char *home = brig_sandbox_home();
    *fresh = false;
    if (mkdir(home, 0711) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, CREATE ": mkdir `%s`", home);
    if (mkdir(dir, 0700) == 0)
        *fresh = true;
    else if (errno != EEXIST)
        return brig_error_set(err, errno, CREATE ": mkdir `%s`", dir);
    return 0;
}

/* One create of an id at a time: its dir, made and locked (flock) for the
 * whole create, so that a second create of the name waits and then finds
 * the first one's sandbox, instead of writing its bundle and records over
 * the first one's. A dir removed while we waited (a failed create cleans
 * up after itself) is made again. */
static int claim_dir(const char *dir, bool *fresh, int *out, brig_error_t *err)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        if (make_dirs(dir, fresh, err) < 0)
            return -1;
        cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT)
            continue;
        if (fd < 0)
            return brig_error_set(err, errno, CREATE ": open `%s`", dir);
        while (flock(fd, LOCK_EX) < 0)
            if (errno != EINTR)
                return brig_error_set(err, errno, CREATE ": lock `%s`", dir);
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_nlink > 0) {
            *out = brig_steal_fd(fd);
            return 0;
        }
    }
    return brig_error_set(err, EAGAIN, CREATE ": `%s` was removed 16 times as it was made", dir);
}

/* The bundle: brig's default spec, without a terminal (the init is
 * detached). The profile rewrites the rest. */
static int write_bundle(const char *bundle, brig_error_t *err)
{
    cleanup_free char *json = NULL;
    /* Searchable by others: the init chdirs into it as the sandbox's root,
     * a stranger to the host's files in a user namespace. config.json
     * stays the owner's. */
    if (mkdir(bundle, 0711) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, CREATE ": mkdir `%s`", bundle);
    if (chmod(bundle, 0711) < 0)
        return brig_error_set(err, errno, CREATE ": chmod `%s`", bundle);
    if (brig_spec_default_json(false, &json, err) < 0)
        return -1;
    /* Same length, so an in-place edit of the generated text. */
    char *t = strstr(json, "\"terminal\": true");
    if (t)
        memcpy(t, "\"terminal\":false", 16);
    cleanup_close int fd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, CREATE ": open `%s`", bundle);
    return brig_write_file_atomic_at(fd, "config.json", json, strlen(json), 0600, err);
}

/* Once the sandbox is created, the host's mounts of it go: every mount
 * the host holds is copied into each later sandbox's namespace and torn
 * down again with its old root, under the kernel's namespace lock, so a
 * mount kept per sandbox makes each create slower than the last.
 * - The tree: its init's root is its own copy of the host's id-mapped bind
 *   (DATA_DIR/tree), made when its mount namespace was copied from the
 *   host's. A restore binds it again (lifecycle.c, setup), and criu's new
 *   namespace copies it as well, so a restore drops it too.
 * - The data: the sandbox's own mount is the only one while it runs
 *   (transfer.h reaches it through its init, recorded here).
 * Best effort: a mount left behind costs speed, not correctness, and `rm`
 * removes it; the first failure is the warning. */
static void drop_host_mounts(const char *id, const char *dir, pid_t pid, brig_error_t *warning)
{
    brig_error_t e = NULL;
    if (brig_sandbox_tree_unmount(dir, &e) < 0 && *warning == NULL)
        brig_error_set(warning, 0, "sandbox `%s`: %s", id, e->msg);
    brig_error_release(&e);
    if ((brig_sandbox_data_record_init(dir, pid, &e) < 0 || brig_data_image_unmount(dir, &e) < 0)
        && *warning == NULL)
        brig_error_set(warning, 0, "sandbox `%s`: %s", id, e->msg);
    brig_error_release(&e);
}

/* The bundle loaded, the profile applied with the sandbox's data dir, and
 * the container created and started. */
static int start(const struct brig_sandbox_create_options *o, char *dir, const char *bundle,
                 brig_error_t *warning, brig_error_t *err)
{
    /* A shallow copy: its strings stay the caller's (and `dir` ours), and
     * prepare takes a deep copy of its own. */
    struct brig_profile_settings s = *o->settings;
    s.data_dir = dir;
    s.detached_init = 1;
    /* A sandbox runs detached: its init's stdio is /dev/null, never the
     * caller's (a pipe held for the sandbox's life would hang whoever
     * reads the caller's output). */
    cleanup_close int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        return brig_error_set(err, errno, CREATE ": open /dev/null");
    const int stdio[3] = { null, null, null };
    struct brig_create_options c = {
        .root = o->root,
        .id = o->id,
        .bundle = bundle,
        .no_cgroup = o->no_cgroup,
        .stdio = stdio,
    };
    struct brig_bundle b;
    struct brig_profile_settings use = { 0 };
    pid_t pid;
    bool created;
    int r = brig_bundle_load(bundle, &b, err);
    c.config = &b;
    if (r == 0)
        r = brig_sandbox_prepare(&c, BRIG_PROFILE_SANDBOX, &s, &use, err);
    if (r == 0)
        r = brig_container_create_started(&c, &pid, &created, warning, err);
    if (r == 0)
        drop_host_mounts(o->id, dir, pid, warning);
    if (r == 0 && use.notice && *warning == NULL)
        brig_error_set(warning, 0, "sandbox `%s`: %s", o->id, use.notice);
    brig_bundle_clear(&b);
    brig_profile_settings_clear(&use);
    return r < 0 ? -1 : 0;
}

/* A stopped sandbox's data belongs to the ids it was made with: a range
 * of its own (recorded in its dir) or the host's. Its next create must
 * ask for the same. */
static int check_reuse(const char *dir, const struct brig_profile_settings *s, brig_error_t *err)
{
    struct brig_idrange r;
    int ranged = brig_idrange_read(dir, &r, err);
    if (ranged < 0)
        return -1;
    cleanup_free char *image = NULL;
    if (asprintf(&image, "%s/%s", dir, BRIG_DATA_IMAGE) < 0)
        return brig_error_set(err, ENOMEM, CREATE);
    bool auto_ = brig_profile_userns_auto(s);
    if (access(image, F_OK) == 0 && (ranged > 0) != auto_)
        return brig_error_set(err, 0,
                              CREATE ": the data in `%s` was made with --userns %s: create it "
                                     "with --userns %s, or rm it first",
                              dir, ranged ? BRIG_USERNS_AUTO : BRIG_USERNS_HOST,
                              ranged ? BRIG_USERNS_AUTO : BRIG_USERNS_HOST);
    return 0;
}

/* ---- the lifetime record ---- */

/* The record, written before the sandbox starts, so that a create killed
 * half-way leaves a sandbox the reaper still removes. A reused dir's record goes to *old (NULL: it
 * had none) for a failed create to put back. */
static int write_lifetime(const struct brig_sandbox_create_options *o, bool fresh, char **old,
                          brig_error_t *err)
{
    cleanup_free char *path = NULL, *cwd = NULL, *root = NULL;
    *old = NULL;
    size_t len;
    if (brig_sandbox_path(o->id, BRIG_SANDBOX_LIFETIME, &path, err) < 0)
        return -1;
    if (!fresh && brig_read_file(path, old, &len, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return brig_error_wrap(err, CREATE);
        brig_error_release(err);
    }
    /* The reaper runs in another dir: the root from /. */
    if (o->root[0] != '/' && (cwd = get_current_dir_name()) == NULL)
        return brig_error_set(err, errno, CREATE ": the current dir");
    if (asprintf(&root, "%s%s%s", cwd ? cwd : "", cwd ? "/" : "", o->root) < 0) {
        root = NULL;
        return brig_error_set(err, ENOMEM, CREATE);
    }
    struct brig_sandbox_lifetime l = {
        .created_ms = brig_sandbox_now_ms(),
        .ttl_ms = o->ttl_ms,
        .idle_ms = o->idle_ms,
        .exec_timeout_ms = o->exec_timeout_ms,
        .root = root,
    };
    if (brig_sandbox_lifetime_write(o->id, &l, err) < 0)
        return brig_error_wrap(err, CREATE);
    return 0;
}

/* A failed create's record undone in a reused dir: the old one back, or
 * none. */
static void undo_lifetime(const char *id, const char *old, brig_error_t *warning)
{
    cleanup_free char *dir = NULL;
    brig_error_t err = NULL;
    if (brig_sandbox_dir(id, &dir, &err) == 0) {
        cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            brig_error_set(&err, errno, "open `%s`", dir);
        else if (old)
            brig_write_file_atomic_at(fd, BRIG_SANDBOX_LIFETIME, old, strlen(old), 0600, &err);
        else if (unlinkat(fd, BRIG_SANDBOX_LIFETIME, 0) < 0 && errno != ENOENT)
            brig_error_set(&err, errno, "remove `%s/%s`", dir, BRIG_SANDBOX_LIFETIME);
    }
    if (err && *warning == NULL)
        *warning = brig_steal_ptr(err);
    brig_error_release(&err);
}

int brig_sandbox_create(const struct brig_sandbox_create_options *o, brig_error_t *warning,
                        brig_error_t *err)
{
    cleanup_free char *dir = NULL, *bundle = NULL, *old_lifetime = NULL;
    enum brig_status status;
    bool fresh;
    if (brig_sandbox_dir(o->id, &dir, err) < 0)
        return -1;
    cleanup_close int lock = -1;
    if (claim_dir(dir, &fresh, &lock, err) < 0)
        return -1;
    if (container_status(o->root, o->id, &status)) {
        if (fresh) /* a container of that id, not a sandbox's: its dir is ours */
            rmdir(dir);
        brig_error_set(err, 0, CREATE ": sandbox `%s` exists (%s)", o->id,
                       brig_status_name(status));
        (*err)->errnum = EEXIST;
        return -1;
    }
    int r = fresh ? 0 : check_reuse(dir, o->settings, err);
    bool recorded = false;
    if (r == 0)
        recorded = (r = write_lifetime(o, fresh, &old_lifetime, err)) == 0;
    if (r == 0 && (o->ttl_ms || o->idle_ms) && brig_sandbox_reaper_ensure(err) < 0)
        r = brig_error_wrap(err, CREATE);
    /* Recorded before it starts: the template can't go under it. */
    if (r == 0 && o->settings->template_name)
        r = brig_template_use(o->settings, dir, err);
    if (r == 0)
        r = brig_sandbox_path(o->id, BRIG_SANDBOX_BUNDLE, &bundle, err);
    if (r == 0)
        r = write_bundle(bundle, err);
    if (r == 0)
        r = start(o, dir, bundle, warning, err);
    if (r < 0) {
        brig_error_release(warning);
        /* Whatever stays behind is the caller's to hear about, not the
         * error: the create failed either way. */
        if (fresh)
            (void) brig_sandbox_remove(o->root, o->id, warning);
        else if (recorded)
            undo_lifetime(o->id, old_lifetime, warning);
    }
    return r;
}

/* ---- exists, remove ---- */

int brig_sandbox_exists(const char *root, const char *id, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    struct stat st;
    enum brig_status status;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    return stat(dir, &st) == 0 || container_status(root, id, &status);
}

void brig_sandbox_sweep(void)
{
    brig_error_t ignored = NULL;
    brig_idrange_reclaim(&ignored);
    brig_error_release(&ignored);
}

/* Every part of it: its container, its mounts, its dir. */
static int remove_parts(const char *root, const char *id, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    brig_error_t warning = NULL;
    if (brig_container_delete(root, id, true, &warning, err) < 0)
        return -1;
    brig_error_release(&warning);
    /* A create that died before the container existed can still have
     * mounted the data and the tree. */
    if (brig_data_image_unmount(dir, err) < 0 || brig_sandbox_tree_unmount(dir, err) < 0)
        return -1;
    const char *home = brig_sandbox_home();
    cleanup_close int home_fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home_fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open `%s`", home);
    if (faccessat(home_fd, id, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    /* Its template is free of it (a record left would be dropped at the
     * template's next count anyway). */
    brig_error_t ignored = NULL;
    brig_template_unuse(dir, &ignored);
    brig_error_release(&ignored);
    /* Its range is freed once nothing of it is left: data that outlived
     * a failed removal still belongs to those ids. */
    struct brig_idrange range;
    char owner[PATH_MAX];
    int ranged = brig_idrange_read(dir, &range, err);
    if (ranged < 0 || (ranged && realpath(dir, owner) == NULL))
        return ranged < 0 ? -1 : brig_error_set(err, errno, "sandbox `%s`", id);
    if (brig_remove_tree_at(home_fd, id, err) < 0)
        return -1;
    if (ranged)
        return brig_idrange_forget(owner, &range, err);
    /* A create killed between its range's record and the dir's copy of
     * it left a record whose owner is gone now. */
    brig_sandbox_sweep();
    return 0;
}

int brig_sandbox_remove(const char *root, const char *id, brig_error_t *err)
{
    int64_t deadline;
    brig_error_t ignored = NULL;
    bool limited = brig_sandbox_deadline(id, NULL, &deadline, NULL, &ignored) == 0
                   && deadline != INT64_MAX;
    brig_error_release(&ignored);
    if (remove_parts(root, id, err) < 0)
        return -1;
    /* Its reaper may have nothing left to wait for, and exits. */
    if (limited)
        brig_sandbox_reaper_wake();
    return 0;
}

/* ---- list ---- */

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct brig_sandbox_entry *) a)->id,
                  ((const struct brig_sandbox_entry *) b)->id);
}

/* Every name in the home but dot files, as entries with only the id. */
static int read_ids(DIR *d, struct brig_sandbox_entry **out, size_t *n, brig_error_t *err)
{
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        struct brig_sandbox_entry *bigger = realloc(*out, (*n + 1) * sizeof **out);
        if (bigger == NULL)
            return brig_error_set(err, ENOMEM, "sandboxes");
        *out = bigger;
        bigger[*n] = (struct brig_sandbox_entry){ .id = strdup(de->d_name) };
        if (bigger[*n].id == NULL)
            return brig_error_set(err, ENOMEM, "sandboxes");
        (*n)++;
    }
    return 0;
}

/* The rest of an entry; false when its dir is gone (or not one to stat). */
static bool fill_entry(const char *root, struct brig_sandbox_entry *e)
{
    cleanup_free char *dir = NULL;
    struct stat st;
    if (asprintf(&dir, "%s/%s", brig_sandbox_home(), e->id) < 0) {
        dir = NULL;
        return false;
    }
    if (stat(dir, &st) < 0)
        return false;
    e->mtime = st.st_mtime;
    e->has_container = container_status(root, e->id, &e->status);
    brig_error_t err = NULL;
    cleanup_close int data = brig_sandbox_data_open(e->id, false, &err);
    e->data_mounted = data >= 0
                      && brig_data_image_usage(data, &e->data_used, &e->data_size, &err) == 0;
    brig_error_release(&err);
    /* A record that can't be read shows as no limits (the reaper logs it). */
    struct brig_sandbox_lifetime l;
    if (brig_sandbox_deadline(e->id, &l, &e->deadline_ms, &e->deadline_why, &err) == 0) {
        e->ttl_ms = l.ttl_ms;
        e->idle_ms = l.idle_ms;
        e->exec_timeout_ms = l.exec_timeout_ms;
        brig_sandbox_lifetime_clear(&l);
    }
    brig_error_release(&err);
    return true;
}

int brig_sandbox_list(const char *root, struct brig_sandbox_entry **out, size_t *n,
                      brig_error_t *err)
{
    *out = NULL;
    *n = 0;
    const char *home = brig_sandbox_home();
    cleanup_dir DIR *d = opendir(home);
    if (d == NULL)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open `%s`", home);
    struct brig_sandbox_entry *entries = NULL;
    size_t count = 0, kept = 0;
    if (read_ids(d, &entries, &count, err) < 0) {
        brig_sandbox_list_free(entries, count);
        return -1;
    }
    if (count > 1)
        qsort(entries, count, sizeof *entries, entry_cmp);
    for (size_t i = 0; i < count; i++) {
        if (fill_entry(root, &entries[i]))
            entries[kept++] = entries[i];
        else
            free(entries[i].id);
    }
    *out = entries;
    *n = kept;
    return 0;
}

int brig_sandbox_get(const char *root, const char *id, struct brig_sandbox_entry *e,
                     brig_error_t *err)
{
    *e = (struct brig_sandbox_entry){ .id = strdup(id) };
    if (e->id == NULL)
        return brig_error_set(err, ENOMEM, "sandbox");
    if (brig_sandbox_id_validate(id, err) < 0 || !fill_entry(root, e)) {
        free(e->id);
        e->id = NULL;
        return brig_error_kind(err, ENOENT, "no sandbox `%s`", id);
    }
    return 0;
}

void brig_sandbox_list_free(struct brig_sandbox_entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(entries[i].id);
    free(entries);
}

/* ---- checkpoint, restore ---- */

/* Where the images go: image_path, or checkpoint/ beside the data. */
static int image_dir(const char *id, const char *image_path, char **out, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    if (image_path == NULL)
        return brig_sandbox_path(id, BRIG_SANDBOX_CHECKPOINT, out, err);
    *out = strdup(image_path);
    return *out ? 0 : brig_error_set(err, ENOMEM, "sandbox");
}

int brig_sandbox_checkpoint(const char *root, const char *id, const char *image_path,
                            bool leave_running, brig_error_t *err)
{
    cleanup_free char *images = NULL;
    if (image_dir(id, image_path, &images, err) < 0)
        return -1;
    struct brig_checkpoint_options o = {
        .root = root,
        .id = id,
        .criu.image_path = images,
        .leave_running = leave_running,
    };
    return brig_container_checkpoint(&o, err);
}

int brig_sandbox_restore(const char *root, const char *id, const char *image_path, bool no_cgroup,
                         pid_t *init_pid, brig_error_t *warning, brig_error_t *err)
{
    cleanup_free char *images = NULL, *bundle = NULL, *dir = NULL;
    if (image_dir(id, image_path, &images, err) < 0
        || brig_sandbox_path(id, BRIG_SANDBOX_BUNDLE, &bundle, err) < 0
        || brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    /* Its init's stdio is /dev/null again, as at create: never the
     * restoring caller's, which it would hold for its whole life (and, in
     * a user namespace, could not even reopen). */
    /* Three fds, not one: criu takes each inherited fd over and closes it. */
    cleanup_close int in = open("/dev/null", O_RDWR);
    cleanup_close int out = open("/dev/null", O_RDWR);
    cleanup_close int errfd = open("/dev/null", O_RDWR);
    if (in < 0 || out < 0 || errfd < 0)
        return brig_error_set(err, errno, "open /dev/null");
    const int stdio[3] = { in, out, errfd };
    struct brig_restore_options o = {
        .root = root,
        .id = id,
        .bundle = bundle,
        .no_cgroup = no_cgroup,
        .stdio = stdio,
        .criu.image_path = images,
    };
    pid_t init;
    if (brig_container_restore(&o, &init, err) < 0)
        return -1;
    drop_host_mounts(id, dir, init, warning);
    if (init_pid)
        *init_pid = init;
    return 0;
}
