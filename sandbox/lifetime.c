/* A sandbox's lifetime record and its last activity on disk (lifetime.h),
 * and the deadline they make. */
#define _GNU_SOURCE
#include "sandbox/lifetime.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/layout.h"

int64_t brig_sandbox_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the record as text ---- */

int brig_sandbox_lifetime_format(const struct brig_sandbox_lifetime *l, char **out,
                                 brig_error_t *err)
{
    *out = NULL;
    if (l->root && strchr(l->root, '\n'))
        return brig_error_set(err, 0, "lifetime: a state root with a newline");
    int n = asprintf(out,
                     "created=%" PRId64 "\nttl=%" PRId64 "\nidle=%" PRId64 "\nexec_timeout=%" PRId64
                     "\n%s%s%s",
                     l->created_ms, l->ttl_ms, l->idle_ms, l->exec_timeout_ms,
                     l->root ? "root=" : "", l->root ? l->root : "", l->root ? "\n" : "");
    if (n < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "lifetime");
    }
    return 0;
}

struct parse_ctx {
    struct brig_sandbox_lifetime *l;
    bool has_created;
    brig_error_t *err;
};

/* A count of ms: decimal digits only, nothing negative, no overflow. */
static int parse_ms(const char *text, int64_t *out)
{
    if (*text < '0' || *text > '9')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int parse_line(char *line, unsigned lineno, void *data)
{
    struct parse_ctx *c = data;
    char *eq = strchr(line, '=');
    if (eq == NULL)
        return brig_error_set(c->err, 0, "line %u: not key=value", lineno);
    *eq = '\0';
    const char *key = line, *value = eq + 1;
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
        { "created", offsetof(struct brig_sandbox_lifetime, created_ms) },
        { "ttl", offsetof(struct brig_sandbox_lifetime, ttl_ms) },
        { "idle", offsetof(struct brig_sandbox_lifetime, idle_ms) },
        { "exec_timeout", offsetof(struct brig_sandbox_lifetime, exec_timeout_ms) },
    };
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++) {
        if (strcmp(key, numbers[i].key) != 0)
            continue;
        if (parse_ms(value, (int64_t *) ((char *) c->l + numbers[i].offset)) < 0)
            return brig_error_set(c->err, 0, "line %u: %s `%s` is not a count of ms", lineno, key,
                                  value);
        c->has_created |= i == 0;
        return 0;
    }
    if (strcmp(key, "root") == 0) {
        free(c->l->root);
        c->l->root = strdup(value);
        return c->l->root ? 0 : brig_error_set(c->err, ENOMEM, "lifetime");
    }
    return 0; /* a later brig's key */
}

int brig_sandbox_lifetime_parse(const char *text, struct brig_sandbox_lifetime *l,
                                brig_error_t *err)
{
    *l = (struct brig_sandbox_lifetime){ 0 };
    struct parse_ctx c = { .l = l, .err = err };
    int r = brig_each_line(text, parse_line, &c);
    if (r == 0 && !c.has_created)
        r = brig_error_set(err, 0, "no created= line");
    if (r != 0) {
        if (*err == NULL)
            brig_error_set(err, ENOMEM, "lifetime");
        brig_sandbox_lifetime_clear(l);
        return -1;
    }
    return 0;
}

void brig_sandbox_lifetime_clear(struct brig_sandbox_lifetime *l)
{
    free(l->root);
    *l = (struct brig_sandbox_lifetime){ 0 };
}

/* ---- on disk ---- */

int brig_sandbox_lifetime_write(const char *id, const struct brig_sandbox_lifetime *l,
                                brig_error_t *err)
{
    cleanup_free char *dir = NULL, *text = NULL;
    if (brig_sandbox_dir(id, &dir, err) < 0)
        return -1;
    if (brig_sandbox_lifetime_format(l, &text, err) < 0)
        return brig_error_wrap(err, "sandbox `%s`", id);
    cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "sandbox `%s`: open `%s`", id, dir);
    /* Active first: whoever reads the record finds the activity too. */
    cleanup_close int active = openat(fd, BRIG_SANDBOX_ACTIVE,
                                      O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (active < 0 || futimens(active, NULL) < 0)
        return brig_error_set(err, errno, "sandbox `%s`: `%s/%s`", id, dir, BRIG_SANDBOX_ACTIVE);
    if (brig_write_file_atomic_at(fd, BRIG_SANDBOX_LIFETIME, text, strlen(text), 0600, err) < 0)
        return brig_error_wrap(err, "sandbox `%s`: `%s`", id, dir);
    return 0;
}

int brig_sandbox_lifetime_read(const char *id, struct brig_sandbox_lifetime *l, brig_error_t *err)
{
    cleanup_free char *path = NULL, *text = NULL;
    *l = (struct brig_sandbox_lifetime){ 0 };
    if (brig_sandbox_path(id, BRIG_SANDBOX_LIFETIME, &path, err) < 0)
        return -1;
    size_t len;
    if (brig_read_file(path, &text, &len, err) < 0) {
        if ((*err)->errnum != ENOENT)
            return brig_error_wrap(err, "sandbox `%s`", id);
        brig_error_release(err);
        return 0;
    }
    if (brig_sandbox_lifetime_parse(text, l, err) < 0)
        return brig_error_wrap(err, "sandbox `%s`: `%s`", id, path);
    return 0;
}

int brig_sandbox_touch(const char *id, brig_error_t *err)
{
    cleanup_free char *path = NULL;
    if (brig_sandbox_path(id, BRIG_SANDBOX_ACTIVE, &path, err) < 0)
        return -1;
    /* Never created here: a file made in a dir that `rm` is emptying
     * would make its last rmdir fail. */
    if (utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "sandbox `%s`: touch `%s`", id, path);
    return 0;
}

int brig_sandbox_last_active(const char *id, int64_t *ms, brig_error_t *err)
{
    cleanup_free char *path = NULL;
    struct stat st;
    *ms = 0;
    if (brig_sandbox_path(id, BRIG_SANDBOX_ACTIVE, &path, err) < 0)
        return -1;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "sandbox `%s`: `%s`", id, path);
    *ms = (int64_t) st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    return 0;
}

int brig_sandbox_deadline(const char *id, struct brig_sandbox_lifetime *l, int64_t *deadline,
                          const char **why, brig_error_t *err)
{
    struct brig_sandbox_lifetime own;
    struct brig_sandbox_lifetime *use = l ? l : &own;
    int64_t active = 0;
    *deadline = INT64_MAX;
    if (why)
        *why = NULL;
    if (brig_sandbox_lifetime_read(id, use, err) < 0)
        return -1;
    int r = use->idle_ms > 0 ? brig_sandbox_last_active(id, &active, err) : 0;
    if (r == 0)
        *deadline = brig_sandbox_lifetime_deadline(use, active, why);
    if (use == &own || r < 0)
        brig_sandbox_lifetime_clear(use);
    return r;
}

/* ---- pure ---- */

/* a + b, held at INT64_MAX (a record can say anything). */
static int64_t add_held(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int64_t brig_sandbox_lifetime_deadline(const struct brig_sandbox_lifetime *l, int64_t active_ms,
                                       const char **why)
{
    int64_t deadline = INT64_MAX;
    const char *reason = NULL;
    if (l->ttl_ms > 0) {
        deadline = add_held(l->created_ms, l->ttl_ms);
        reason = "ttl";
    }
    if (l->idle_ms > 0) {
        int64_t last = active_ms > l->created_ms ? active_ms : l->created_ms;
        int64_t idle = add_held(last, l->idle_ms);
        if (idle < deadline) {
            deadline = idle;
            reason = "idle";
        }
    }
    if (why)
        *why = reason;
    return deadline;
}

void brig_sandbox_span(int64_t ms, char *buf, size_t len)
{
    int64_t s = ms > 0 ? ms / 1000 : 0;
    if (s < 120)
        snprintf(buf, len, "%" PRId64 "s", s);
    else if (s < 7200)
        snprintf(buf, len, "%" PRId64 "m", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%" PRId64 "h", s / 3600);
    else
        snprintf(buf, len, "%" PRId64 "d", s / 86400);
}

void brig_sandbox_mark_active(const char *id)
{
    brig_error_t ignored = NULL;
    brig_sandbox_touch(id, &ignored);
    brig_error_release(&ignored);
}
