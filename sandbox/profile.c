#define _GNU_SOURCE
#include "sandbox/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "sandbox/egress.h"
#include "sandbox/egress_client.h"
#include "sandbox/limits_view.h"
#include "sandbox/profile_int.h"

/* ---- settings ---- */

int brig_profile_settings_default(struct brig_profile_settings *s, brig_error_t *err)
{
    *s = (struct brig_profile_settings){
        .rootfs = strdup(BRIG_SANDBOX_ROOTFS),
        .userns = strdup(BRIG_USERNS_AUTO),
        .network = brig_egress_configured() ? strdup(BRIG_NETWORK_PACKAGES) : NULL,
        .malloc_conf = strdup(BRIG_SANDBOX_MALLOC_CONF),
        .data_size = BRIG_SANDBOX_DATA_SIZE,
        .memory = BRIG_SANDBOX_MEMORY,
        .pids = BRIG_SANDBOX_PIDS,
        .cpus_milli = BRIG_SANDBOX_CPUS_MILLI,
    };
    if (s->rootfs == NULL || s->malloc_conf == NULL || s->userns == NULL) {
        brig_profile_settings_clear(s);
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    return 0;
}

void brig_profile_settings_clear(struct brig_profile_settings *s)
{
    free(s->rootfs);
    free(s->data_dir);
    free(s->init_path);
    free(s->init_config);
    free(s->netns);
    free(s->malloc_conf);
    free(s->seccomp_path);
    free(s->userns);
    free(s->network);
    free(s->ca_bundle);
    free(s->pod_userns);
    free(s->lxcfs);
    free(s->cpuset);
    free(s->notice);
    free(s->template_name);
    free(s->jemalloc);
    free(s->user_name);
    free(s->workdir);
    brig_strv_free(&s->env);
    *s = (struct brig_profile_settings){ 0 };
}

struct setting {
    const char *key;
    bool str; /* a char * field, else an int64_t one */
    size_t offset;
};

/* clang-format off */
#define STR(f) { #f, true, offsetof(struct brig_profile_settings, f) }
#define NUM(f) { #f, false, offsetof(struct brig_profile_settings, f) }
/* clang-format on */
static const struct setting settings[] = {
    STR(rootfs),
    STR(data_dir),
    STR(init_path),
    STR(init_config),
    STR(netns),
    STR(malloc_conf),
    STR(seccomp_path),
    NUM(data_size),
    NUM(memory),
    NUM(pids),
    NUM(cpus_milli),
    STR(userns),
    NUM(userns_uid),
    NUM(userns_gid),
    NUM(data_private),
    STR(network),
    STR(ca_bundle),
    NUM(pod),
    STR(pod_userns),
    STR(lxcfs),
    STR(cpuset),
    STR(jemalloc),
    NUM(user_uid),
    NUM(user_gid),
    STR(user_name),
    STR(workdir),
    { "template", true, offsetof(struct brig_profile_settings, template_name) },
};

/* The image's Env, a line each: `env=NAME=VALUE`. */
#define ENV_KEY "env"

int brig_profile_settings_format(const struct brig_profile_settings *s, char **out,
                                 brig_error_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return brig_error_set(err, errno, "sandbox profile");
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        const struct setting *k = &settings[i];
        if (k->str) {
            const char *v = *(char *const *) ((const char *) s + k->offset);
            if (v)
                fprintf(f, "%s=%s\n", k->key, v);
        } else {
            fprintf(f, "%s=%" PRId64 "\n", k->key,
                    *(const int64_t *) ((const char *) s + k->offset));
        }
    }
    fprintf(f, "detached_init=%d\n", s->detached_init);
    for (size_t i = 0; i < s->env.n; i++)
        fprintf(f, ENV_KEY "=%s\n", s->env.v[i]);
    if (fclose(f) != 0) {
        free(buf);
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    *out = buf;
    return 0;
}

static int parse_line(char *line, struct brig_profile_settings *s, brig_error_t *err)
{
    char *eq = strchr(line, '=');
    if (eq == NULL)
        return brig_error_set(err, 0, "sandbox profile: expected key=value, not `%s`", line);
    *eq = '\0';
    const char *v = eq + 1;
    if (strcmp(line, "detached_init") == 0) {
        s->detached_init = strcmp(v, "1") == 0;
        return 0;
    }
    if (strcmp(line, ENV_KEY) == 0)
        return brig_profile_strv_add(&s->env, v) < 0
                   ? brig_error_set(err, ENOMEM, "sandbox profile")
                   : 0;
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        const struct setting *k = &settings[i];
        if (strcmp(k->key, line) != 0)
            continue;
        if (k->str) {
            char **field = (char **) ((char *) s + k->offset);
            free(*field);
            if ((*field = strdup(v)) == NULL)
                return brig_error_set(err, ENOMEM, "sandbox profile");
            return 0;
        }
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end)
            return brig_error_set(err, 0, "sandbox profile: %s: not a number: `%s`", line, v);
        *(int64_t *) ((char *) s + k->offset) = n;
        return 0;
    }
    return brig_error_set(err, 0, "sandbox profile: unknown setting `%s`", line);
}

int brig_profile_settings_parse(const char *text, struct brig_profile_settings *s,
                                brig_error_t *err)
{
    cleanup_free char *copy = strdup(text);
    if (copy == NULL)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (parse_line(line, s, err) < 0)
            return -1;
    return 0;
}

int brig_profile_parse_size(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    int shift = 0;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    case 't':
    case 'T':
        shift = 40;
        break;
    default:
        return -1;
    }
    if (*end && end[1] != '\0' && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)
        return -1;
    if (n == 0 || n > (unsigned long long) (INT64_MAX >> shift))
        return -1;
    *out = (int64_t) (n << shift);
    return 0;
}

int brig_profile_parse_cpus(const char *text, int64_t *milli)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    double v = strtod(text, &end);
    if (errno || end == text || *end || v < 0.01 || v > 1024)
        return -1;
    *milli = (int64_t) (v * 1000 + 0.5);
    return 0;
}

/* ---- the transformation ---- */

int brig_profile_requested(const struct brig_spec *spec, brig_error_t *err)
{
    const char *profile = brig_spec_annotation(spec, BRIG_PROFILE_ANNOTATION);
    if (profile == NULL)
        return 0;
    if (strcmp(profile, BRIG_PROFILE_SANDBOX) == 0)
        return 1;
    return brig_error_set(err, 0, "annotation %s: unknown profile `%s` (known: sandbox)",
                          BRIG_PROFILE_ANNOTATION, profile);
}

static int strv_from(struct brig_strv *to, const char *const *items)
{
    brig_strv_free(to);
    size_t n = 0;
    while (items[n])
        n++;
    to->v = calloc(n + 1, sizeof *to->v);
    if (to->v == NULL)
        return -1;
    for (; to->n < n; to->n++)
        if ((to->v[to->n] = strdup(items[to->n])) == NULL)
            return -1;
    return 0;
}

int brig_profile_strv_add_unique(struct brig_strv *s, const char *item)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], item) == 0)
            return 0;
    return brig_profile_strv_add(s, item);
}

int brig_profile_strv_add(struct brig_strv *s, const char *item)
{
    char **bigger = realloc(s->v, (s->n + 2) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    s->v = bigger;
    if ((s->v[s->n] = strdup(item)) == NULL)
        return -1;
    s->v[++s->n] = NULL;
    return 0;
}

static int replace_str(char **field, const char *value)
{
    char *copy = value ? strdup(value) : NULL;
    if (value && copy == NULL)
        return -1;
    free(*field);
    *field = copy;
    return 0;
}

/* process.env without any NAME=, then NAME=value. */
static int env_set(struct brig_strv *env, const char *name, const char *value)
{
    size_t len = strlen(name), j = 0;
    for (size_t i = 0; i < env->n; i++) {
        if (strncmp(env->v[i], name, len) == 0 && env->v[i][len] == '=')
            free(env->v[i]);
        else
            env->v[j++] = env->v[i];
    }
    env->n = j;
    char **bigger = realloc(env->v, (env->n + 2) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    env->v = bigger;
    if (asprintf(&env->v[env->n], "%s=%s", name, value) < 0)
        return -1;
    env->v[++env->n] = NULL;
    return 0;
}

static bool env_has(const struct brig_strv *env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], name, len) == 0 && env->v[i][len] == '=')
            return true;
    return false;
}

int brig_profile_drop_privileges(struct brig_process *p, uint32_t uid, uint32_t gid)
{
    p->user.uid = uid;
    p->user.gid = gid;
    free(p->user.additional_gids);
    p->user.additional_gids = NULL;
    p->user.n_additional_gids = 0;
    free(p->user.username);
    p->user.username = NULL;
    p->no_new_privileges = true;
    /* Every set empty: nothing to raise, nothing left in the bounding set. */
    struct brig_capabilities *none = calloc(1, sizeof *none);
    if (none == NULL)
        return -1;
    if (p->capabilities) {
        brig_strv_free(&p->capabilities->bounding);
        brig_strv_free(&p->capabilities->effective);
        brig_strv_free(&p->capabilities->inheritable);
        brig_strv_free(&p->capabilities->permitted);
        brig_strv_free(&p->capabilities->ambient);
        free(p->capabilities);
    }
    p->capabilities = none;
    return 0;
}

#define SANDBOX_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The same two lines for init, its services and every exec: a process
 * anywhere in the sandbox allocates through the same jemalloc setup. */
static int wire_allocator(struct brig_strv *env, const struct brig_profile_settings *s)
{
    /* A template's image without jemalloc: nothing to preload. */
    if (s->jemalloc && strcmp(s->jemalloc, BRIG_JEMALLOC_NONE) == 0)
        return 0;
    if (env_set(env, "LD_PRELOAD", s->jemalloc ? s->jemalloc : BRIG_SANDBOX_JEMALLOC) < 0
        || env_set(env, "MALLOC_CONF", s->malloc_conf) < 0)
        return -1;
    return 0;
}

bool brig_profile_userns_auto(const struct brig_profile_settings *s)
{
    return s->userns && strcmp(s->userns, BRIG_USERNS_AUTO) == 0;
}

bool brig_profile_on_packages(const struct brig_profile_settings *s)
{
    return s->network && strcmp(s->network, BRIG_NETWORK_PACKAGES) == 0;
}

/* The packages-only network: the proxy named the way pip, npm, curl and
 * urllib look for it, upper and lower case; loopback goes direct. Set for
 * init, its services and every exec alike. */
static int wire_proxy(struct brig_strv *env, const struct brig_profile_settings *s)
{
    static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy" };
    if (!brig_profile_on_packages(s))
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (env_set(env, names[i], BRIG_EGRESS_URL) < 0)
            return -1;
    if (env_set(env, "NO_PROXY", "localhost,127.0.0.1") < 0
        || env_set(env, "no_proxy", "localhost,127.0.0.1") < 0)
        return -1;
    /* Node.js and pip carry CA bundles of their own: pointed at the
     * system's, which is the host's here. */
    if (s->ca_bundle
        && (env_set(env, "NODE_EXTRA_CA_CERTS", BRIG_SANDBOX_CA_BUNDLE) < 0
            || env_set(env, "PIP_CERT", BRIG_SANDBOX_CA_BUNDLE) < 0
            || env_set(env, "SSL_CERT_FILE", BRIG_SANDBOX_CA_BUNDLE) < 0))
        return -1;
    return 0;
}

int brig_profile_exec_forced_env(const struct brig_profile_settings *s, struct brig_strv *env)
{
    return wire_allocator(env, s) < 0 || wire_proxy(env, s) < 0 ? -1 : 0;
}

void brig_profile_user(const struct brig_profile_settings *s, uint32_t *uid, uint32_t *gid)
{
    *uid = s->user_uid > 0 ? (uint32_t) s->user_uid : BRIG_SANDBOX_UID;
    *gid = s->user_uid > 0 ? (uint32_t) s->user_gid : BRIG_SANDBOX_GID;
}

/* A template's Env over the bundle's. */
static int apply_image_env(struct brig_strv *env, const struct brig_profile_settings *s)
{
    for (size_t i = 0; i < s->env.n; i++) {
        cleanup_free char *name = strndup(s->env.v[i], strcspn(s->env.v[i], "="));
        const char *value = strchr(s->env.v[i], '=');
        if (name == NULL || env_set(env, name, value ? value + 1 : "") < 0)
            return -1;
    }
    return 0;
}

static int apply_process(struct brig_process *p, const struct brig_profile_settings *s)
{
    uint32_t uid, gid;
    brig_profile_user(s, &uid, &gid);
    if (brig_profile_drop_privileges(p, uid, gid) < 0
        || replace_str(&p->cwd, s->workdir ? s->workdir : BRIG_SANDBOX_DATA) < 0
        || apply_image_env(&p->env, s) < 0)
        return -1;
    if (!env_has(&p->env, "PATH") && env_set(&p->env, "PATH", SANDBOX_PATH) < 0)
        return -1;
    if (env_set(&p->env, "HOME", BRIG_SANDBOX_HOME) < 0
        || env_set(&p->env, "USER", s->user_name ? s->user_name : "sandbox") < 0
        || wire_allocator(&p->env, s) < 0 || wire_proxy(&p->env, s) < 0)
        return -1;
    /* brig-init in front: PID 1 reaps and supervises; with a command it
     * exits with it, without one it stays up (brig sandbox) and starts
     * the execs (exec_port.h). */
    static const char *const with_command[] = { BRIG_SANDBOX_INIT, "--", NULL };
    static const char *const detached[] = { BRIG_SANDBOX_INIT, "--exec-port", NULL };
    if (s->detached_init) {
        brig_strv_free(&p->args);
        p->args = (struct brig_strv){ 0 };
    }
    return brig_profile_prepend_args(p, s->detached_init ? detached : with_command);
}

int brig_profile_prepend_args(struct brig_process *p, const char *const *front)
{
    size_t extra = 0, n = p->args.n;
    while (front[extra])
        extra++;
    char **args = calloc(n + extra + 1, sizeof *args);
    if (args == NULL)
        return -1;
    for (size_t i = 0; i < extra; i++)
        args[i] = strdup(front[i]);
    for (size_t i = 0; i < n; i++)
        args[extra + i] = brig_steal_ptr(p->args.v[i]);
    brig_strv_free(&p->args);
    p->args.v = args;
    p->args.n = n + extra;
    for (size_t i = 0; i < p->args.n; i++)
        if (args[i] == NULL)
            return -1;
    return 0;
}

static bool profile_owns(const char *dest)
{
    static const char *const ours[] = {
        "/tmp",
        "/run",
        BRIG_SANDBOX_HOME,
        BRIG_SANDBOX_DATA,
        BRIG_SANDBOX_INIT,
        BRIG_SANDBOX_INIT_CONF,
        BRIG_SANDBOX_CA_BUNDLE,
        NULL,
    };
    for (size_t i = 0; ours[i]; i++) {
        size_t len = strlen(ours[i]);
        if (strncmp(dest, ours[i], len) == 0 && (dest[len] == '\0' || dest[len] == '/'))
            return true;
    }
    return false;
}

bool brig_profile_mount_is_bind(const struct brig_mount *m)
{
    if (m->type && strcmp(m->type, "bind") == 0)
        return true;
    for (size_t i = 0; i < m->options.n; i++)
        if (strcmp(m->options.v[i], "bind") == 0 || strcmp(m->options.v[i], "rbind") == 0)
            return true;
    return false;
}

int brig_profile_add_mount(struct brig_spec *spec, const char *dest, const char *type,
                           const char *source, const char *const *options)
{
    struct brig_mount *bigger = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    spec->mounts = bigger;
    struct brig_mount *m = &spec->mounts[spec->n_mounts];
    *m = (struct brig_mount){ 0 };
    spec->n_mounts++;
    m->destination = strdup(dest);
    m->type = strdup(type);
    m->source = strdup(source);
    if (!m->destination || !m->type || !m->source || strv_from(&m->options, options) < 0)
        return -1;
    return 0;
}

/* The bundle's own kernel file systems (proc, /dev, sysfs, ...) stay; its
 * bind mounts go, so nothing of the host shows up but what the profile
 * binds itself. */
static int apply_mounts(struct brig_spec *spec, const struct brig_profile_settings *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < spec->n_mounts; i++) {
        struct brig_mount *m = &spec->mounts[i];
        if (brig_profile_mount_is_bind(m) || profile_owns(m->destination))
            brig_mount_free_fields(m);
        else
            spec->mounts[kept++] = *m;
    }
    spec->n_mounts = kept;
    static const char *const tmp[] = { "nosuid", "nodev", "mode=1777", "size=512m", NULL };
    static const char *const run[] = { "nosuid", "nodev", "noexec", "mode=0755", "size=64m", NULL };
    uint32_t uid, gid;
    brig_profile_user(s, &uid, &gid);
    char home_uid[32], home_gid[32];
    snprintf(home_uid, sizeof home_uid, "uid=%u", uid);
    snprintf(home_gid, sizeof home_gid, "gid=%u", gid);
    const char *const home[] = { "nosuid", "nodev",     "mode=0700", home_uid,
                                 home_gid, "size=512m", NULL };
    static const char *const data[] = { "bind", "nosuid", "nodev", "rw", NULL };
    static const char *const ro[] = { "bind", "ro", "nosuid", "nodev", NULL };
    cleanup_free char *data_source = NULL;
    if (asprintf(&data_source, "%s/data", s->data_dir) < 0)
        return -1;
    if (brig_profile_add_mount(spec, "/tmp", "tmpfs", "tmpfs", tmp) < 0
        || brig_profile_add_mount(spec, "/run", "tmpfs", "tmpfs", run) < 0
        || brig_profile_add_mount(spec, BRIG_SANDBOX_HOME, "tmpfs", "tmpfs", home) < 0
        || brig_profile_add_mount(spec, BRIG_SANDBOX_DATA, "bind", data_source, data) < 0
        || brig_profile_add_mount(spec, BRIG_SANDBOX_INIT, "bind", s->init_path, ro) < 0)
        return -1;
    if (s->init_config
        && brig_profile_add_mount(spec, BRIG_SANDBOX_INIT_CONF, "bind", s->init_config, ro) < 0)
        return -1;
    if (s->ca_bundle
        && brig_profile_add_mount(spec, BRIG_SANDBOX_CA_BUNDLE, "bind", s->ca_bundle, ro) < 0)
        return -1;
    return s->lxcfs ? brig_lxcfs_add_mounts(spec, s->lxcfs) : 0;
}

static int apply_namespaces(struct brig_linux *l, const struct brig_profile_settings *s)
{
    static const enum brig_ns_type wanted[] = {
        BRIG_NS_PID, BRIG_NS_NETWORK, BRIG_NS_IPC, BRIG_NS_UTS, BRIG_NS_MOUNT, BRIG_NS_CGROUP,
    };
    size_t n = sizeof wanted / sizeof *wanted;
    struct brig_namespace *ns = calloc(n, sizeof *ns);
    if (ns == NULL)
        return -1;
    for (size_t i = 0; i < l->n_namespaces; i++)
        free(l->namespaces[i].path);
    free(l->namespaces);
    l->namespaces = ns;
    l->n_namespaces = n;
    for (size_t i = 0; i < n; i++)
        ns[i].type = wanted[i];
    /* Only the profile's own user namespace (brig_profile_apply_userns),
     * never the bundle's maps. */
    free(l->uid_mappings);
    free(l->gid_mappings);
    l->uid_mappings = l->gid_mappings = NULL;
    l->n_uid_mappings = l->n_gid_mappings = 0;
    if (s->netns && (ns[1].path = strdup(s->netns)) == NULL)
        return -1;
    return 0;
}

static int set_mapping(struct brig_id_mapping **maps, size_t *n, uint32_t host)
{
    struct brig_id_mapping *one = calloc(1, sizeof *one);
    if (one == NULL)
        return -1;
    *one = (struct brig_id_mapping){ 0, host, BRIG_SANDBOX_IDS };
    free(*maps);
    *maps = one;
    *n = 1;
    return 0;
}

int brig_profile_apply_userns(struct brig_spec *spec, const struct brig_profile_settings *s,
                              brig_error_t *err)
{
    if (!brig_profile_userns_auto(s) || s->userns_uid <= 0)
        return 0;
    /* Settings come back from a state dir or a checkpoint's images: a
     * range that would map root, or run past 2^32, is refused. */
    const int64_t last = (INT64_C(1) << 32) - BRIG_SANDBOX_IDS;
    if (s->userns_uid < BRIG_SANDBOX_IDS || s->userns_uid > last || s->userns_gid < BRIG_SANDBOX_IDS
        || s->userns_gid > last)
        return brig_error_set(err, 0,
                              "sandbox profile: user namespace range %" PRId64 ":%" PRId64
                              " out of bounds",
                              s->userns_uid, s->userns_gid);
    struct brig_linux *l = spec->linux_;
    if (l == NULL || spec->root == NULL || s->data_dir == NULL)
        return brig_error_set(err, 0, "sandbox profile: a user namespace needs the sandbox's spec");
    struct brig_namespace *user = NULL;
    for (size_t i = 0; i < l->n_namespaces; i++)
        if (l->namespaces[i].type == BRIG_NS_USER)
            user = &l->namespaces[i];
    if (user == NULL) {
        struct brig_namespace *bigger = realloc(l->namespaces,
                                                (l->n_namespaces + 1) * sizeof *bigger);
        if (bigger == NULL)
            return brig_error_set(err, ENOMEM, "sandbox profile");
        l->namespaces = bigger;
        user = &bigger[l->n_namespaces++];
        *user = (struct brig_namespace){ .type = BRIG_NS_USER };
    }
    if (s->pod_userns && replace_str(&user->path, s->pod_userns) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    /* The root: the shared tree, seen through the range (userns.c binds
     * it there). */
    cleanup_free char *tree = NULL;
    /* A joined namespace has its maps already: the same range. */
    if (s->pod_userns) {
        free(l->uid_mappings);
        free(l->gid_mappings);
        l->uid_mappings = l->gid_mappings = NULL;
        l->n_uid_mappings = l->n_gid_mappings = 0;
    } else if (set_mapping(&l->uid_mappings, &l->n_uid_mappings, (uint32_t) s->userns_uid) < 0
               || set_mapping(&l->gid_mappings, &l->n_gid_mappings, (uint32_t) s->userns_gid) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    if (asprintf(&tree, "%s/%s", s->data_dir, BRIG_SANDBOX_TREE) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    free(spec->root->path);
    spec->root->path = brig_steal_ptr(tree);
    return 0;
}

static int apply_resources(struct brig_linux *l, const struct brig_profile_settings *s)
{
    if (l->resources == NULL && (l->resources = calloc(1, sizeof *l->resources)) == NULL)
        return -1;
    struct brig_resources *r = l->resources;
    if (r->memory == NULL && (r->memory = calloc(1, sizeof *r->memory)) == NULL)
        return -1;
    if (r->cpu == NULL && (r->cpu = calloc(1, sizeof *r->cpu)) == NULL)
        return -1;
    r->memory->has_limit = true;
    r->memory->limit = s->memory;
    /* No swap beyond the limit: an allocation past it meets the OOM killer
     * instead of slowing the host down. */
    r->memory->has_swap = true;
    r->memory->swap = s->memory;
    r->has_pids_limit = true;
    r->pids_limit = s->pids;
    r->cpu->has_period = true;
    r->cpu->period = BRIG_SANDBOX_CPU_PERIOD;
    r->cpu->has_quota = true;
    r->cpu->quota = s->cpus_milli * BRIG_SANDBOX_CPU_PERIOD / 1000;
    /* Its CPUs: what sched_getaffinity, and so nproc, counts. */
    free(r->cpu->cpus);
    r->cpu->cpus = NULL;
    if (s->cpuset && (r->cpu->cpus = strdup(s->cpuset)) == NULL)
        return -1;
    return 0;
}

int brig_profile_add_default_paths(struct brig_linux *l)
{
    for (size_t i = 0; brig_default_masked_paths[i]; i++)
        if (brig_profile_strv_add_unique(&l->masked_paths, brig_default_masked_paths[i]) < 0)
            return -1;
    for (size_t i = 0; brig_default_readonly_paths[i]; i++)
        if (brig_profile_strv_add_unique(&l->readonly_paths, brig_default_readonly_paths[i]) < 0)
            return -1;
    return 0;
}

int brig_profile_apply(struct brig_spec *spec, const struct brig_profile_settings *s,
                       struct brig_seccomp *seccomp, brig_error_t *err)
{
    if (spec->linux_ == NULL && (spec->linux_ = calloc(1, sizeof *spec->linux_)) == NULL) {
        brig_seccomp_free_spec(seccomp);
        return brig_error_set(err, ENOMEM, "sandbox profile");
    }
    brig_seccomp_free_spec(spec->linux_->seccomp);
    spec->linux_->seccomp = seccomp;
    if (spec->process == NULL)
        return brig_error_set(err, 0, "sandbox profile: the spec has no process");
    if (s->pod)
        return brig_profile_apply_pod(spec, s, err);
    if (s->data_dir == NULL || s->init_path == NULL || s->rootfs == NULL)
        return brig_error_set(err, 0, "sandbox profile: rootfs, data dir and init are required");
    if (spec->root == NULL && (spec->root = calloc(1, sizeof *spec->root)) == NULL)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    spec->root->readonly = true;
    if (replace_str(&spec->root->path, s->rootfs) < 0 || apply_process(spec->process, s) < 0
        || apply_mounts(spec, s) < 0 || apply_namespaces(spec->linux_, s) < 0
        || apply_resources(spec->linux_, s) < 0 || brig_profile_add_default_paths(spec->linux_) < 0)
        return brig_error_set(err, ENOMEM, "sandbox profile");
    return brig_profile_apply_userns(spec, s, err);
}

/* ---- every exec ---- */

int brig_profile_impose_exec(struct brig_process *p, const struct brig_process *init,
                             const struct brig_profile_settings *s, brig_error_t *err)
{
    for (size_t i = 0; i < p->n_rlimits; i++)
        free(p->rlimits[i].type);
    free(p->rlimits);
    p->rlimits = NULL;
    p->n_rlimits = 0;
    p->has_oom_score_adj = init->has_oom_score_adj;
    p->oom_score_adj = init->oom_score_adj;
    /* A pod's container runs as its init does (the image's user, or the
     * sandbox's); a sandbox as the sandbox's user. */
    uint32_t uid, gid;
    brig_profile_user(s, &uid, &gid);
    if (s->pod) {
        uid = init->user.uid;
        gid = init->user.gid;
    }
    bool oom = false;
    if (brig_profile_drop_privileges(p, uid, gid) < 0
        || brig_rlimits_copy(&p->rlimits, &p->n_rlimits, init->rlimits, init->n_rlimits) < 0
        || replace_str(&p->apparmor_profile, init->apparmor_profile) < 0
        || replace_str(&p->selinux_label, init->selinux_label) < 0)
        oom = true;
    /* The pod's environment and working directory are the caller's; its
     * groups (fsGroup, supplementalGroups) the init's. */
    if (s->pod && !oom && init->user.n_additional_gids) {
        size_t size = init->user.n_additional_gids * sizeof *init->user.additional_gids;
        if ((p->user.additional_gids = malloc(size)) == NULL)
            oom = true;
        else
            memcpy(p->user.additional_gids, init->user.additional_gids, size);
        p->user.n_additional_gids = oom ? 0 : init->user.n_additional_gids;
    }
    if (s->pod)
        return oom ? brig_error_set(err, ENOMEM, "sandbox profile") : 0;
    /* What the caller set of the environment stays, but the allocator's
     * wiring; the sandbox's PATH, HOME and USER where it set none. */
    if (!oom && ((!p->cwd || !*p->cwd) && replace_str(&p->cwd, BRIG_SANDBOX_DATA) < 0))
        oom = true;
    if (!oom
        && ((!env_has(&p->env, "PATH") && env_set(&p->env, "PATH", SANDBOX_PATH) < 0)
            || (!env_has(&p->env, "HOME") && env_set(&p->env, "HOME", BRIG_SANDBOX_HOME) < 0)
            || (!env_has(&p->env, "USER")
                && env_set(&p->env, "USER", s->user_name ? s->user_name : "sandbox") < 0)
            || wire_allocator(&p->env, s) < 0 || wire_proxy(&p->env, s) < 0))
        oom = true;
    return oom ? brig_error_set(err, ENOMEM, "sandbox profile") : 0;
}
