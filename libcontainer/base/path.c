#define _GNU_SOURCE
#include "base/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

/* The kernel's own limit on symlinks followed in one lookup (MAXSYMLINKS). */
#define MAX_SYMLINKS 40
/* openat2 returns EAGAIN with RESOLVE_IN_ROOT when a rename or mount raced
 * with the lookup; a few retries are what the kernel documentation asks. */
#define OPENAT2_RETRIES 32

bool brig_path_force_fallback = false;
static bool openat2_unavailable = false;

char *brig_path_clean(const char *path)
{
    size_t len = strlen(path);
    char *out = malloc(len + 2);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    if (path[0] == '/')
        out[o++] = '/';
    /* ".." never removes what is before base: the root, or the start of a
     * relative path. */
    size_t base = o;
    const char *p = path;
    while (*p != '\0') {
        while (*p == '/')
            p++;
        if (*p == '\0')
            break;
        const char *end = strchrnul(p, '/');
        size_t n = (size_t) (end - p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (o > base && out[o - 1] != '/')
                o--;
            if (o > base)
                o--;
        } else if (!(n == 1 && p[0] == '.')) {
            if (o > base)
                out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p = end;
    }
    if (o == 0)
        out[o++] = '.';
    out[o] = '\0';
    return out;
}

void brig_fd_path(int fd, char buf[BRIG_FD_PATH_MAX])
{
    snprintf(buf, BRIG_FD_PATH_MAX, "/proc/self/fd/%d", fd);
}

static bool use_openat2(void)
{
    return !brig_path_force_fallback && !openat2_unavailable;
}

/* Returns the fd, or -1 with errno. ENOSYS means "use the walk"; EPERM is
 * treated the same because some seccomp profiles written before openat2
 * existed answer EPERM to every unknown syscall (a genuine EPERM comes back
 * from the walk again). */
static int openat2_in_root(int root_fd, const char *path, int flags, mode_t mode)
{
    bool creates = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
    struct open_how how = {
        .flags = (uint64_t) (flags | O_CLOEXEC),
        .mode = creates ? mode : 0, /* openat2 rejects a mode it won't use */
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    for (int i = 0; i < OPENAT2_RETRIES; i++) {
        long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof how);
        if (fd >= 0)
            return (int) fd;
        if (errno == ENOSYS || errno == EPERM) {
            if (errno == ENOSYS)
                openat2_unavailable = true;
            errno = ENOSYS;
            return -1;
        }
        if (errno != EAGAIN)
            return -1;
    }
    return -1;
}

/* ---- the user-space walk, for kernels without openat2 ----
 *
 * Each component is opened O_PATH|O_NOFOLLOW from the directory reached so
 * far; symlinks are read and spliced into the rest of the path, absolute ones
 * restarting at the root. ".." pops a stack of the directories walked through
 * instead of asking the kernel for the parent, so it can never leave the root,
 * not even through a directory that was moved away concurrently. */

enum walk_goal { GOAL_OPEN, GOAL_DIR, GOAL_FILE };
#define WALK_CONTINUE (-2)

struct walk {
    int *dirs; /* dirs[0] is the caller's root fd (borrowed), the rest owned */
    size_t n, cap;
    char *rest; /* path still to resolve, consumed from pos */
    size_t pos;
    int links;
};

static void walk_release(struct walk *w)
{
    for (size_t i = 1; i < w->n; i++)
        close(w->dirs[i]);
    free(w->dirs);
    free(w->rest);
}

static int walk_push(struct walk *w, int fd)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        int *dirs = realloc(w->dirs, cap * sizeof *dirs);
        if (dirs == NULL) {
            close(fd);
            errno = ENOMEM;
            return -1;
        }
        w->dirs = dirs;
        w->cap = cap;
    }
    w->dirs[w->n++] = fd;
    return 0;
}

static void walk_pop(struct walk *w)
{
    if (w->n > 1)
        close(w->dirs[--w->n]);
}

/* Cuts the next component out of w->rest; false at the end of the path. */
static bool walk_next(struct walk *w, char **name, bool *last, bool *trailing_slash)
{
    char *p = w->rest + w->pos;
    while (*p == '/')
        p++;
    if (*p == '\0')
        return false;
    char *end = strchrnul(p, '/');
    char *after = end;
    while (*after == '/')
        after++;
    *last = *after == '\0';
    *trailing_slash = *last && end != after;
    bool had_slash = *end == '/';
    *end = '\0';
    *name = p;
    w->pos = (size_t) (end + (had_slash ? 1 : 0) - w->rest);
    return true;
}

static int walk_follow(struct walk *w, int link_fd)
{
    char target[PATH_MAX];
    if (++w->links > MAX_SYMLINKS) {
        errno = ELOOP;
        return -1;
    }
    ssize_t n = readlinkat(link_fd, "", target, sizeof target);
    if (n < 0)
        return -1;
    if ((size_t) n >= sizeof target) {
        errno = ENAMETOOLONG;
        return -1;
    }
    target[n] = '\0';
    char *next = NULL;
    const char *remaining = w->rest + w->pos;
    if (asprintf(&next, "%s%s%s", target, *remaining ? "/" : "", remaining) < 0) {
        errno = ENOMEM;
        return -1;
    }
    if (target[0] == '/')
        while (w->n > 1)
            walk_pop(w);
    free(w->rest);
    w->rest = next;
    w->pos = 0;
    return WALK_CONTINUE;
}

/* A component that does not exist: create it when the goal asks for it. */
static int walk_create(int dir, const char *name, bool last, int flags, mode_t mode,
                       enum walk_goal goal)
{
    if (goal == GOAL_OPEN) {
        if (last && (flags & O_CREAT))
            return openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        errno = ENOENT;
        return -1;
    }
    if (last && goal == GOAL_FILE) {
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST)
            return -1;
        if (fd >= 0)
            close(fd);
    } else if (mkdirat(dir, name, goal == GOAL_DIR ? mode : 0755) < 0 && errno != EEXIST) {
        return -1;
    }
    return WALK_CONTINUE;
}

static int walk_step(struct walk *w, char *name, bool last, bool trailing_slash, int flags,
                     mode_t mode, enum walk_goal goal)
{
    int dir = w->dirs[w->n - 1];
    cleanup_close int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            return -1;
        int r = walk_create(dir, name, last, flags, mode, goal);
        if (r != WALK_CONTINUE)
            return r;
        fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    if (S_ISLNK(st.st_mode)) {
        if (last && goal == GOAL_OPEN && (flags & O_NOFOLLOW))
            return openat(dir, name, flags | O_CLOEXEC, mode);
        if (trailing_slash) {
            /* "link/" names the target: keep the slash for the splice. */
            w->pos--;
            w->rest[w->pos] = '/';
        }
        return walk_follow(w, fd);
    }
    bool want_dir = !last || trailing_slash || goal == GOAL_DIR || (flags & O_DIRECTORY);
    if (want_dir && !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    if (!last)
        return walk_push(w, brig_steal_fd(fd)) < 0 ? -1 : WALK_CONTINUE;
    if (goal == GOAL_FILE && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (goal != GOAL_OPEN || (flags & O_PATH))
        return brig_steal_fd(fd);
    /* O_NOFOLLOW: if the entry was swapped for a symlink since fstat, fail
     * with ELOOP rather than follow it. */
    return openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC | (trailing_slash ? O_DIRECTORY : 0),
                  mode);
}

/* The path ended on a directory already on the stack ("", "/", "a/.."). */
static int walk_end_on_dir(struct walk *w, int flags, mode_t mode, enum walk_goal goal)
{
    int dir = w->dirs[w->n - 1];
    if (goal == GOAL_FILE) {
        errno = EISDIR;
        return -1;
    }
    if (goal == GOAL_DIR)
        return openat(dir, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    return openat(dir, ".", flags | O_CLOEXEC, mode);
}

static int walk_in_root(int root_fd, const char *path, int flags, mode_t mode, enum walk_goal goal)
{
    __attribute__((cleanup(walk_release))) struct walk w = { 0 };
    w.rest = strdup(path);
    w.dirs = malloc(16 * sizeof *w.dirs);
    if (w.rest == NULL || w.dirs == NULL) {
        errno = ENOMEM;
        return -1;
    }
    w.cap = 16;
    w.dirs[w.n++] = root_fd;
    for (;;) {
        char *name;
        bool last, trailing_slash;
        if (!walk_next(&w, &name, &last, &trailing_slash))
            return walk_end_on_dir(&w, flags, mode, goal);
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) {
            walk_pop(&w);
            continue;
        }
        int r = walk_step(&w, name, last, trailing_slash, flags, mode, goal);
        if (r != WALK_CONTINUE)
            return r;
    }
}

/* ---- public entry points ---- */

int brig_path_try_open_in_root(int root_fd, const char *path, int flags, mode_t mode)
{
    if (path[0] == '\0')
        path = ".";
    if (use_openat2()) {
        int fd = openat2_in_root(root_fd, path, flags, mode);
        if (fd >= 0 || errno != ENOSYS)
            return fd;
    }
    return walk_in_root(root_fd, path, flags, mode, GOAL_OPEN);
}

int brig_path_open_in_root(int root_fd, const char *path, int flags, mode_t mode, brig_error_t *err)
{
    int fd = brig_path_try_open_in_root(root_fd, path, flags, mode);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s` in the container root", *path ? path : ".");
    return fd;
}

/* The common case of a missing destination: only its last component is
 * missing (/dev/pts on a fresh /dev). Its parent is found by the kernel's
 * in-root lookup and the one entry made there, five system calls where
 * the walk takes ten. Returns 0 when made, -1 with errno when the walk
 * must do it: EEXIST there is a dangling symlink (or a race), which the
 * walk follows inside the root. */
static int make_last_in_root(int root_fd, const char *path, mode_t mode, enum walk_goal goal)
{
    cleanup_free char *clean = brig_path_clean(path);
    if (clean == NULL)
        return -1;
    char *slash = strrchr(clean, '/');
    const char *last = slash ? slash + 1 : clean;
    if (*last == '\0' || strcmp(last, ".") == 0 || strcmp(last, "..") == 0) {
        errno = EINVAL;
        return -1;
    }
    if (slash)
        *slash = '\0';
    const char *parent = slash == NULL ? "." : *clean ? clean : "/";
    cleanup_close int dir = openat2_in_root(root_fd, parent, O_PATH | O_DIRECTORY, 0);
    if (dir < 0)
        return -1;
    if (goal == GOAL_FILE) {
        int fd = openat(dir, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0)
            close(fd);
        return fd >= 0 ? 0 : -1;
    }
    return mkdirat(dir, last, mode);
}

/* Creates what is missing with the walk, then, where openat2 exists, opens
 * the result again with the kernel's in-root lookup: the fd handed back (and
 * mounted on) is then the kernel's answer even if something raced the walk. */
static int make_in_root(int root_fd, const char *path, mode_t mode, enum walk_goal goal,
                        const char *what, brig_error_t *err)
{
    int open_flags = O_PATH | (goal == GOAL_DIR ? O_DIRECTORY : 0);
    if (path[0] == '\0')
        path = ".";
    bool kernel = use_openat2();
    if (kernel) {
        int fd = openat2_in_root(root_fd, path, open_flags, 0);
        if (fd >= 0 && goal == GOAL_FILE) {
            struct stat st;
            if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
                close(fd);
                return brig_error_set(err, EISDIR, "create %s `%s` in the container root", what,
                                      path);
            }
        }
        if (fd >= 0)
            return fd;
        if (errno != ENOENT && errno != ENOSYS)
            return brig_error_set(err, errno, "create %s `%s` in the container root", what, path);
        kernel = errno != ENOSYS;
    }
    int fd = -1;
    if (kernel && make_last_in_root(root_fd, path, mode, goal) == 0) {
        fd = openat2_in_root(root_fd, path, open_flags, 0);
        if (fd < 0)
            return brig_error_set(err, errno, "open `%s` in the container root", path);
        return fd;
    }
    fd = walk_in_root(root_fd, path, 0, mode, goal);
    if (fd < 0)
        return brig_error_set(err, errno, "create %s `%s` in the container root", what, path);
    if (!kernel)
        return fd;
    close(fd);
    fd = openat2_in_root(root_fd, path, open_flags, 0);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s` in the container root", path);
    return fd;
}

int brig_path_mkdir_in_root(int root_fd, const char *path, mode_t mode, brig_error_t *err)
{
    return make_in_root(root_fd, path, mode, GOAL_DIR, "directory", err);
}

int brig_path_mkfile_in_root(int root_fd, const char *path, mode_t mode, brig_error_t *err)
{
    return make_in_root(root_fd, path, mode, GOAL_FILE, "file", err);
}
