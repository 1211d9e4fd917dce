#define _GNU_SOURCE
#include "spec/spec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "base/cleanup.h"
#include "spec/spec_json.h"

static void tree_freep(yajl_val *v)
{
    yajl_tree_free(*v);
}
#define cleanup_tree __attribute__((cleanup(tree_freep)))

static void process_freep(struct brig_process **p)
{
    brig_process_free(*p);
}

/* ---- process ---------------------------------------------------------------- */

static const struct {
    const char *name;
    int resource;
} rlimit_table[] = {
    { "RLIMIT_AS", RLIMIT_AS },
    { "RLIMIT_CORE", RLIMIT_CORE },
    { "RLIMIT_CPU", RLIMIT_CPU },
    { "RLIMIT_DATA", RLIMIT_DATA },
    { "RLIMIT_FSIZE", RLIMIT_FSIZE },
    { "RLIMIT_LOCKS", RLIMIT_LOCKS },
    { "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
    { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
    { "RLIMIT_NICE", RLIMIT_NICE },
    { "RLIMIT_NOFILE", RLIMIT_NOFILE },
    { "RLIMIT_NPROC", RLIMIT_NPROC },
    { "RLIMIT_RSS", RLIMIT_RSS },
    { "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
    { "RLIMIT_RTTIME", RLIMIT_RTTIME },
    { "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
    { "RLIMIT_STACK", RLIMIT_STACK },
};

static int rlimit_resource(const char *name)
{
    for (size_t i = 0; i < sizeof rlimit_table / sizeof rlimit_table[0]; i++)
        if (strcmp(rlimit_table[i].name, name) == 0)
            return rlimit_table[i].resource;
    return -1;
}

static int parse_rlimit(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_rlimit *rl = item;
    int r = brig_json_string(c, v, "type", &rl->type);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "type");
    rl->resource = rlimit_resource(rl->type);
    if (rl->resource < 0)
        return brig_json_fail(c, "type", "unknown rlimit `%s`", rl->type);
    r = brig_json_u64(c, v, "hard", UINT64_MAX, &rl->hard);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "hard");
    r = brig_json_u64(c, v, "soft", UINT64_MAX, &rl->soft);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "soft");
    if (rl->soft > rl->hard)
        return brig_json_fail(c, "soft", "greater than hard limit");
    return 0;
}

static int parse_rlimits(struct brig_json_ctx *c, yajl_val v, struct brig_process *p)
{
    if (BRIG_JSON_OBJECTS(c, v, "rlimits", p->rlimits, p->n_rlimits, parse_rlimit) < 0)
        return -1;
    /* The runtime spec makes a repeated type an error rather than
     * letting the last one silently win. */
    for (size_t i = 0; i < p->n_rlimits; i++)
        for (size_t j = 0; j < i; j++)
            if (p->rlimits[i].resource == p->rlimits[j].resource) {
                size_t mark = brig_json_push_key(c, "rlimits");
                brig_json_push_index(c, i);
                brig_json_fail(c, "type", "duplicate rlimit `%s`", p->rlimits[i].type);
                brig_json_pop(c, mark);
                return -1;
            }
    return 0;
}

static int parse_user(struct brig_json_ctx *c, yajl_val v, struct brig_user *u)
{
    if (brig_json_u32(c, v, "uid", &u->uid) < 0 || brig_json_u32(c, v, "gid", &u->gid) < 0)
        return -1;
    int r = brig_json_u32(c, v, "umask", &u->umask);
    if (r < 0)
        return -1;
    u->has_umask = r > 0;
    if (brig_json_string(c, v, "username", &u->username) < 0)
        return -1;
    yajl_val gids = brig_json_field(v, "additionalGids");
    if (gids == NULL)
        return 0;
    if (!YAJL_IS_ARRAY(gids))
        return brig_json_fail(c, "additionalGids", "expected an array");
    size_t n = gids->u.array.len;
    if (n == 0)
        return 0;
    u->additional_gids = calloc(n, sizeof *u->additional_gids);
    if (u->additional_gids == NULL)
        return brig_json_oom(c);
    u->n_additional_gids = n;
    size_t mark = brig_json_push_key(c, "additionalGids");
    for (size_t i = 0; i < n; i++) {
        uint64_t gid;
        size_t at = brig_json_push_index(c, i);
        if (brig_json_value_u64(c, gids->u.array.values[i], NULL, UINT32_MAX, &gid) < 0)
            return -1;
        u->additional_gids[i] = (uint32_t) gid;
        brig_json_pop(c, at);
    }
    brig_json_pop(c, mark);
    return 0;
}

static int parse_capabilities(struct brig_json_ctx *c, yajl_val v, struct brig_capabilities *caps)
{
    if (brig_json_strv(c, v, "bounding", &caps->bounding) < 0
        || brig_json_strv(c, v, "effective", &caps->effective) < 0
        || brig_json_strv(c, v, "inheritable", &caps->inheritable) < 0
        || brig_json_strv(c, v, "permitted", &caps->permitted) < 0
        || brig_json_strv(c, v, "ambient", &caps->ambient) < 0)
        return -1;
    return 0;
}

static int parse_scheduler(struct brig_json_ctx *c, yajl_val v, struct brig_scheduler *s)
{
    int r = brig_json_string(c, v, "policy", &s->policy);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "policy");
    if (brig_json_i32(c, v, "nice", &s->nice) < 0
        || brig_json_i32(c, v, "priority", &s->priority) < 0
        || brig_json_strv(c, v, "flags", &s->flags) < 0
        || brig_json_u64(c, v, "runtime", UINT64_MAX, &s->runtime) < 0
        || brig_json_u64(c, v, "deadline", UINT64_MAX, &s->deadline) < 0
        || brig_json_u64(c, v, "period", UINT64_MAX, &s->period) < 0)
        return -1;
    return 0;
}

static int parse_io_priority(struct brig_json_ctx *c, yajl_val v, struct brig_io_priority *io)
{
    int r = brig_json_string(c, v, "class", &io->class);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "class");
    return brig_json_i32(c, v, "priority", &io->priority) < 0 ? -1 : 0;
}

static int parse_process_misc(struct brig_json_ctx *c, yajl_val v, struct brig_process *p)
{
    if (brig_json_bool(c, v, "terminal", &p->terminal) < 0
        || brig_json_bool(c, v, "noNewPrivileges", &p->no_new_privileges) < 0
        || brig_json_string(c, v, "apparmorProfile", &p->apparmor_profile) < 0
        || brig_json_string(c, v, "selinuxLabel", &p->selinux_label) < 0)
        return -1;
    int64_t adj;
    /* The kernel's own bounds for /proc/PID/oom_score_adj. */
    int r = brig_json_i64(c, v, "oomScoreAdj", -1000, 1000, &adj);
    if (r < 0)
        return -1;
    p->has_oom_score_adj = r > 0;
    p->oom_score_adj = (int) adj;

    yajl_val sub;
    r = brig_json_object(c, v, "consoleSize", &sub);
    if (r < 0)
        return -1;
    if (r > 0) {
        size_t mark = brig_json_push_key(c, "consoleSize");
        if (brig_json_u32(c, sub, "height", &p->console_height) < 0
            || brig_json_u32(c, sub, "width", &p->console_width) < 0)
            return -1;
        brig_json_pop(c, mark);
        p->has_console_size = true;
    }
    r = brig_json_object(c, v, "execCPUAffinity", &sub);
    if (r < 0)
        return -1;
    if (r > 0) {
        size_t mark = brig_json_push_key(c, "execCPUAffinity");
        if (brig_json_string(c, sub, "initial", &p->exec_cpu_affinity_initial) < 0
            || brig_json_string(c, sub, "final", &p->exec_cpu_affinity_final) < 0)
            return -1;
        brig_json_pop(c, mark);
    }
    return 0;
}

static int parse_process_object(struct brig_json_ctx *c, yajl_val v, struct brig_process *p)
{
    int r = brig_json_strv(c, v, "args", &p->args);
    if (r < 0)
        return -1;
    if (r == 0)
        return brig_json_missing(c, "args");
    if (p->args.n == 0)
        return brig_json_fail(c, "args", "must not be empty");
    if (brig_json_strv(c, v, "env", &p->env) < 0)
        return -1;
    r = brig_json_string(c, v, "cwd", &p->cwd);
    if (r < 0)
        return -1;
    if (r > 0 && p->cwd[0] != '/')
        return brig_json_fail(c, "cwd", "must be an absolute path");

    yajl_val user;
    if (brig_json_object(c, v, "user", &user) < 0)
        return -1;
    if (user) {
        size_t mark = brig_json_push_key(c, "user");
        if (parse_user(c, user, &p->user) < 0)
            return -1;
        brig_json_pop(c, mark);
    }
    if (BRIG_JSON_SUBOBJECT(c, v, "capabilities", p->capabilities, parse_capabilities) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "scheduler", p->scheduler, parse_scheduler) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "ioPriority", p->io_priority, parse_io_priority) < 0)
        return -1;
    if (parse_rlimits(c, v, p) < 0)
        return -1;
    return parse_process_misc(c, v, p);
}

/* ---- root, mounts, hooks ------------------------------------------------------ */

static int parse_root(struct brig_json_ctx *c, yajl_val v, struct brig_root *root)
{
    int r = brig_json_string(c, v, "path", &root->path);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "path");
    if (root->path[0] == '\0')
        return brig_json_fail(c, "path", "must not be empty");
    return brig_json_bool(c, v, "readonly", &root->readonly) < 0 ? -1 : 0;
}

static int parse_mount(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_mount *m = item;
    int r = brig_json_string(c, v, "destination", &m->destination);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "destination");
    if (m->destination[0] == '\0')
        return brig_json_fail(c, "destination", "must not be empty");
    if (brig_json_string(c, v, "type", &m->type) < 0
        || brig_json_string(c, v, "source", &m->source) < 0
        || brig_json_strv(c, v, "options", &m->options) < 0
        || brig_json_id_mappings(c, v, "uidMappings", &m->uid_mappings, &m->n_uid_mappings) < 0
        || brig_json_id_mappings(c, v, "gidMappings", &m->gid_mappings, &m->n_gid_mappings) < 0)
        return -1;
    return 0;
}

static int parse_hook(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_hook *h = item;
    int r = brig_json_string(c, v, "path", &h->path);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "path");
    if (h->path[0] != '/')
        return brig_json_fail(c, "path", "must be an absolute path");
    if (brig_json_strv(c, v, "args", &h->args) < 0 || brig_json_strv(c, v, "env", &h->env) < 0)
        return -1;
    int64_t timeout;
    r = brig_json_i64(c, v, "timeout", INT64_MIN, INT32_MAX, &timeout);
    if (r < 0)
        return -1;
    if (r > 0 && timeout <= 0)
        return brig_json_fail(c, "timeout", "must be greater than zero");
    h->has_timeout = r > 0;
    h->timeout = (int) timeout;
    return 0;
}

static int parse_hooks(struct brig_json_ctx *c, yajl_val v, struct brig_hooks *hooks)
{
    struct {
        const char *key;
        struct brig_hook_list *list;
    } kinds[] = {
        { "prestart", &hooks->prestart },
        { "createRuntime", &hooks->create_runtime },
        { "createContainer", &hooks->create_container },
        { "startContainer", &hooks->start_container },
        { "poststart", &hooks->poststart },
        { "poststop", &hooks->poststop },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct brig_hook_list *l = kinds[i].list;
        if (BRIG_JSON_OBJECTS(c, v, kinds[i].key, l->items, l->n, parse_hook) < 0)
            return -1;
    }
    return 0;
}

/* ---- whole documents ----------------------------------------------------------- */

/* yajl's message spans three lines (message, nearby text, a caret);
 * callers want one line, so keep the message and the nearby text. */
static int json_syntax_error(struct brig_json_ctx *c, char *msg)
{
    char *lines[2] = { NULL, NULL };
    size_t n = 0;
    for (char *save = NULL, *line = strtok_r(msg, "\n", &save); line && n < 2;
         line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '\t' || *line == '\r')
            line++;
        size_t len = strlen(line);
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (n == 0 && len > 0 && line[len - 1] == '.')
            line[--len] = '\0';
        if (*line && strstr(line, "(right here)") == NULL)
            lines[n++] = line;
    }
    if (lines[0] == NULL)
        return brig_json_error(c, "invalid JSON");
    if (lines[1] == NULL)
        return brig_json_error(c, "invalid JSON: %s", lines[0]);
    return brig_json_error(c, "invalid JSON: %s near `%s`", lines[0], lines[1]);
}

/* yajl builds and frees its tree recursively, one stack frame a level: a
 * config of a few hundred kilobytes of `[` overflows the stack. No OCI
 * document nests more than a handful of levels, so anything deeper than
 * this is refused before yajl sees it. */
#define MAX_JSON_DEPTH 64

/* The byte offset where nesting first goes past MAX_JSON_DEPTH, or -1. */
static ssize_t too_deep_at(const char *json, size_t len)
{
    size_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char ch = json[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > MAX_JSON_DEPTH)
                return (ssize_t) i;
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return -1;
}

static int parse_tree(struct brig_json_ctx *c, const char *json, size_t len, yajl_val *out)
{
    if (json == NULL) {
        json = "";
        len = 0;
    }
    /* yajl wants a C string: a NUL inside would silently end the document. */
    if (memchr(json, '\0', len) != NULL)
        return brig_json_error(c, "invalid JSON: NUL byte in input");
    ssize_t deep = too_deep_at(json, len);
    if (deep >= 0)
        return brig_json_error(c, "invalid JSON: nested more than %d levels deep at byte %zd",
                               MAX_JSON_DEPTH, deep);
    cleanup_free char *text = malloc(len + 1);
    if (text == NULL)
        return brig_json_oom(c);
    memcpy(text, json, len);
    text[len] = '\0';
    char msg[1024] = "";
    *out = yajl_tree_parse(text, msg, sizeof msg);
    if (*out == NULL)
        return json_syntax_error(c, msg);
    if (!YAJL_IS_OBJECT(*out))
        return brig_json_error(c, "expected a JSON object");
    return 0;
}

static int parse_spec_top(struct brig_json_ctx *c, yajl_val v, struct brig_spec *spec)
{
    int r = brig_json_string(c, v, "ociVersion", &spec->oci_version);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "ociVersion");
    if (spec->oci_version[0] == '\0')
        return brig_json_fail(c, "ociVersion", "must not be empty");
    if (BRIG_JSON_SUBOBJECT(c, v, "process", spec->process, parse_process_object) < 0)
        return -1;
    r = BRIG_JSON_SUBOBJECT(c, v, "root", spec->root, parse_root);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "root");
    if (brig_json_string(c, v, "hostname", &spec->hostname) < 0
        || brig_json_string(c, v, "domainname", &spec->domainname) < 0
        || BRIG_JSON_OBJECTS(c, v, "mounts", spec->mounts, spec->n_mounts, parse_mount) < 0
        || brig_json_kv(c, v, "annotations", &spec->annotations) < 0)
        return -1;
    yajl_val hooks;
    if (brig_json_object(c, v, "hooks", &hooks) < 0)
        return -1;
    if (hooks) {
        size_t mark = brig_json_push_key(c, "hooks");
        if (parse_hooks(c, hooks, &spec->hooks) < 0)
            return -1;
        brig_json_pop(c, mark);
    }
    if (BRIG_JSON_SUBOBJECT(c, v, "linux", spec->linux_, brig_spec_parse_linux) < 0)
        return -1;
    return 0;
}

int brig_spec_parse(const char *json, size_t len, const char *origin, struct brig_spec **out,
                    brig_error_t *err)
{
    struct brig_json_ctx c = { .origin = origin ? origin : "config.json", .err = err };
    cleanup_tree yajl_val tree = NULL;
    cleanup_spec struct brig_spec *spec = NULL;

    *out = NULL;
    if (parse_tree(&c, json, len, &tree) < 0)
        return -1;
    spec = calloc(1, sizeof *spec);
    if (spec == NULL)
        return brig_json_oom(&c);
    if (parse_spec_top(&c, tree, spec) < 0)
        return -1;
    *out = brig_steal_ptr(spec);
    return 0;
}

int brig_process_parse(const char *json, size_t len, const char *origin, struct brig_process **out,
                       brig_error_t *err)
{
    struct brig_json_ctx c = { .origin = origin ? origin : "process.json", .err = err };
    cleanup_tree yajl_val tree = NULL;
    __attribute__((cleanup(process_freep))) struct brig_process *p = NULL;

    *out = NULL;
    if (parse_tree(&c, json, len, &tree) < 0)
        return -1;
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return brig_json_oom(&c);
    if (parse_process_object(&c, tree, p) < 0)
        return -1;
    *out = brig_steal_ptr(p);
    return 0;
}

static void resources_freep(struct brig_resources **r)
{
    brig_resources_free(*r);
}

int brig_resources_parse(const char *json, size_t len, const char *origin,
                         struct brig_resources **out, brig_error_t *err)
{
    struct brig_json_ctx c = { .origin = origin ? origin : "resources.json", .err = err };
    cleanup_tree yajl_val tree = NULL;
    __attribute__((cleanup(resources_freep))) struct brig_resources *r = NULL;

    *out = NULL;
    if (parse_tree(&c, json, len, &tree) < 0)
        return -1;
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return brig_json_oom(&c);
    if (brig_spec_parse_resources(&c, tree, r) < 0)
        return -1;
    *out = brig_steal_ptr(r);
    return 0;
}

static void seccomp_specp(struct brig_seccomp **s)
{
    brig_seccomp_free_spec(*s);
}

int brig_seccomp_parse(const char *json, size_t len, const char *origin, struct brig_seccomp **out,
                       brig_error_t *err)
{
    struct brig_json_ctx c = { .origin = origin ? origin : "seccomp.json", .err = err };
    cleanup_tree yajl_val tree = NULL;
    __attribute__((cleanup(seccomp_specp))) struct brig_seccomp *s = NULL;

    *out = NULL;
    if (parse_tree(&c, json, len, &tree) < 0)
        return -1;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return brig_json_oom(&c);
    if (brig_spec_parse_seccomp(&c, tree, s) < 0)
        return -1;
    *out = brig_steal_ptr(s);
    return 0;
}

/* config.json is small; a cap keeps a hostile bundle from making us
 * allocate without bound. */
#define SPEC_MAX_SIZE (64u << 20)

static int read_whole_file(const char *path, char **out, size_t *len, brig_error_t *err)
{
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return brig_error_set(err, errno, "open `%s`", path);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return brig_error_set(err, errno, "stat `%s`", path);
    if (!S_ISREG(st.st_mode))
        return brig_error_set(err, 0, "`%s`: not a regular file", path);
    size_t cap = (size_t) st.st_size + 1, used = 0;
    cleanup_free char *buf = NULL;
    for (;;) {
        if (cap > SPEC_MAX_SIZE + 1)
            return brig_error_set(err, EFBIG, "read `%s`", path);
        char *grown = realloc(buf, cap);
        if (grown == NULL)
            return brig_error_set(err, ENOMEM, "read `%s`", path);
        buf = grown;
        ssize_t r = read(fd, buf + used, cap - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return brig_error_set(err, errno, "read `%s`", path);
        if (r == 0)
            break;
        used += (size_t) r;
        /* Files that grow while we read them (or lie in st_size) get
         * room to spare; the loop ends at a zero-length read. */
        if (used == cap)
            cap *= 2;
    }
    *out = brig_steal_ptr(buf);
    *len = used;
    return 0;
}

int brig_spec_load_text(const char *path, struct brig_spec **out, char **text, size_t *len,
                        brig_error_t *err)
{
    cleanup_free char *data = NULL;
    *out = NULL;
    if (read_whole_file(path, &data, len, err) < 0
        || brig_spec_parse(data, *len, path, out, err) < 0)
        return -1;
    *text = brig_steal_ptr(data);
    return 0;
}

int brig_spec_load(const char *path, struct brig_spec **out, brig_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len = 0;
    return brig_spec_load_text(path, out, &text, &len, err);
}

/* ---- freeing ----------------------------------------------------------------------- */

static void free_capabilities(struct brig_capabilities *caps)
{
    if (caps == NULL)
        return;
    brig_strv_free(&caps->bounding);
    brig_strv_free(&caps->effective);
    brig_strv_free(&caps->inheritable);
    brig_strv_free(&caps->permitted);
    brig_strv_free(&caps->ambient);
    free(caps);
}

void brig_process_free(struct brig_process *p)
{
    if (p == NULL)
        return;
    free(p->user.additional_gids);
    free(p->user.username);
    brig_strv_free(&p->args);
    brig_strv_free(&p->env);
    free(p->cwd);
    free_capabilities(p->capabilities);
    for (size_t i = 0; i < p->n_rlimits; i++)
        free(p->rlimits[i].type);
    free(p->rlimits);
    free(p->apparmor_profile);
    free(p->selinux_label);
    if (p->scheduler) {
        free(p->scheduler->policy);
        brig_strv_free(&p->scheduler->flags);
        free(p->scheduler);
    }
    if (p->io_priority) {
        free(p->io_priority->class);
        free(p->io_priority);
    }
    free(p->exec_cpu_affinity_initial);
    free(p->exec_cpu_affinity_final);
    free(p);
}

static void free_hook_list(struct brig_hook_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].path);
        brig_strv_free(&l->items[i].args);
        brig_strv_free(&l->items[i].env);
    }
    free(l->items);
}

void brig_mount_free_fields(struct brig_mount *m)
{
    free(m->destination);
    free(m->type);
    free(m->source);
    brig_strv_free(&m->options);
    free(m->uid_mappings);
    free(m->gid_mappings);
}

void brig_spec_free(struct brig_spec *spec)
{
    if (spec == NULL)
        return;
    free(spec->oci_version);
    brig_process_free(spec->process);
    if (spec->root) {
        free(spec->root->path);
        free(spec->root);
    }
    free(spec->hostname);
    free(spec->domainname);
    for (size_t i = 0; i < spec->n_mounts; i++) {
        brig_mount_free_fields(&spec->mounts[i]);
    }
    free(spec->mounts);
    free_hook_list(&spec->hooks.prestart);
    free_hook_list(&spec->hooks.create_runtime);
    free_hook_list(&spec->hooks.create_container);
    free_hook_list(&spec->hooks.start_container);
    free_hook_list(&spec->hooks.poststart);
    free_hook_list(&spec->hooks.poststop);
    brig_kv_list_free(&spec->annotations);
    brig_spec_free_linux(spec->linux_);
    free(spec);
}

const char *brig_spec_annotation(const struct brig_spec *spec, const char *key)
{
    for (size_t i = 0; spec && i < spec->annotations.n; i++)
        if (strcmp(spec->annotations.items[i].key, key) == 0)
            return spec->annotations.items[i].value;
    return NULL;
}
