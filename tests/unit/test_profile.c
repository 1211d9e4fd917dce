#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sandbox/profile.h"
#include "spec/spec.h"
#include "unit.h"

/* A bundle's spec with what the profile must replace or keep: root, caps,
 * a host bind mount, a user namespace, an env that already sets PATH and
 * LD_PRELOAD, its own masked path. */
static const char bundle[] =
    "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"rootfs\"},"
    "\"process\":{\"cwd\":\"/\",\"args\":[\"python3\",\"-c\",\"1\"],\"user\":{\"uid\":0,\"gid\":0,"
    "\"additionalGids\":[4]},\"env\":[\"PATH=/bin\",\"LD_PRELOAD=/evil.so\",\"TERM=xterm\"],"
    "\"capabilities\":{\"bounding\":[\"CAP_SYS_ADMIN\"],\"effective\":[\"CAP_SYS_ADMIN\"]}},"
    "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
    "{\"destination\":\"/host\",\"type\":\"bind\",\"source\":\"/\",\"options\":[\"rbind\"]},"
    "{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"exec\"]}],"
    "\"linux\":{\"namespaces\":[{\"type\":\"user\"},{\"type\":\"pid\"}],"
    "\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}],"
    "\"gidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}],"
    "\"maskedPaths\":[\"/proc/kcore\",\"/secret\"],"
    "\"resources\":{\"memory\":{\"limit\":1048576000000}}}}";

static const char profile_seccomp[] =
    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],"
    "\"action\":\"SCMP_ACT_ALLOW\"}]}";

static struct brig_spec *load(const char *json)
{
    struct brig_spec *spec = NULL;
    brig_error_t err = NULL;
    if (brig_spec_parse(json, strlen(json), "test", &spec, &err) < 0) {
        printf("# %s\n", err->msg);
        brig_error_release(&err);
        return NULL;
    }
    return spec;
}

static struct brig_seccomp *seccomp(void)
{
    struct brig_seccomp *s = NULL;
    brig_error_t err = NULL;
    if (brig_seccomp_parse(profile_seccomp, strlen(profile_seccomp), "sandbox.json", &s, &err) < 0)
        brig_error_release(&err);
    return s;
}

static const char *env_get(const struct brig_process *p, const char *name)
{
    size_t len = strlen(name);
    const char *found = NULL;
    int count = 0;
    for (size_t i = 0; i < p->env.n; i++)
        if (strncmp(p->env.v[i], name, len) == 0 && p->env.v[i][len] == '=') {
            found = p->env.v[i] + len + 1;
            count++;
        }
    return count == 1 ? found : NULL;
}

static const struct brig_mount *mount_at(const struct brig_spec *spec, const char *dest, int *count)
{
    const struct brig_mount *m = NULL;
    *count = 0;
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (strcmp(spec->mounts[i].destination, dest) == 0) {
            m = &spec->mounts[i];
            (*count)++;
        }
    return m;
}

static bool has(const struct brig_strv *s, const char *item)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], item) == 0)
            return true;
    return false;
}

static void settings_for_test(struct brig_profile_settings *s)
{
    brig_error_t err = NULL;
    brig_profile_settings_default(s, &err);
    s->data_dir = strdup("/var/lib/brig/sandboxes/s1");
    s->init_path = strdup("/usr/libexec/brig/brig-init");
}

static void test_apply(void)
{
    struct brig_spec *spec = load(bundle);
    CHECK(spec != NULL, "the test bundle parses");
    if (spec == NULL)
        return;
    struct brig_profile_settings s;
    settings_for_test(&s);
    brig_error_t err = NULL;
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) == 0, "the profile applies");
    const struct brig_process *p = spec->process;
    CHECK_STR(spec->root->path, BRIG_SANDBOX_ROOTFS, "root is the shared tree");
    CHECK(spec->root->readonly, "root is read-only");
    CHECK(p->user.uid == 1000 && p->user.gid == 1000 && p->user.n_additional_gids == 0,
          "the process runs as 1000:1000 with no extra groups");
    CHECK(p->no_new_privileges, "no_new_privs");
    CHECK(p->capabilities && p->capabilities->bounding.n == 0 && p->capabilities->effective.n == 0
              && p->capabilities->permitted.n == 0 && p->capabilities->ambient.n == 0,
          "every capability dropped");
    CHECK_STR(p->cwd, "/mnt/data", "cwd /mnt/data");
    CHECK_STR(env_get(p, "LD_PRELOAD"), BRIG_SANDBOX_JEMALLOC, "LD_PRELOAD is jemalloc, once");
    CHECK_STR(env_get(p, "MALLOC_CONF"), BRIG_SANDBOX_MALLOC_CONF, "default MALLOC_CONF");
    CHECK_STR(env_get(p, "PATH"), "/bin", "the bundle's PATH is kept");
    CHECK_STR(env_get(p, "TERM"), "xterm", "the bundle's other env is kept");
    CHECK(p->args.n == 5, "init, --, and the three args");
    CHECK_STR(p->args.v[0], BRIG_SANDBOX_INIT, "brig-init is PID 1");
    CHECK_STR(p->args.v[1], "--", "then --");
    CHECK_STR(p->args.v[2], "python3", "then the command");
    CHECK(p->args.v[5] == NULL, "args stay NULL-terminated");

    int n;
    CHECK(mount_at(spec, "/proc", &n) && n == 1, "the bundle's /proc stays");
    CHECK(mount_at(spec, "/host", &n) == NULL, "the bundle's host bind mount goes");
    const struct brig_mount *m = mount_at(spec, "/tmp", &n);
    CHECK(m && n == 1 && !has(&m->options, "exec") && has(&m->options, "nosuid"),
          "one /tmp, the profile's");
    m = mount_at(spec, "/mnt/data", &n);
    CHECK(m && n == 1 && strcmp(m->source, "/var/lib/brig/sandboxes/s1/data") == 0
              && has(&m->options, "rw"),
          "/mnt/data binds the mounted data image");
    m = mount_at(spec, BRIG_SANDBOX_INIT, &n);
    CHECK(m && strcmp(m->source, "/usr/libexec/brig/brig-init") == 0 && has(&m->options, "ro"),
          "brig-init is bound read-only");
    CHECK(mount_at(spec, "/run", &n) && mount_at(spec, BRIG_SANDBOX_HOME, &n),
          "tmpfs /run and home");
    CHECK(mount_at(spec, BRIG_SANDBOX_INIT_CONF, &n) == NULL,
          "no services file: the tree's config");

    const struct brig_linux *l = spec->linux_;
    CHECK(brig_spec_namespace(spec, BRIG_NS_USER) == NULL && l->n_uid_mappings == 0,
          "no user namespace: the ids are the host's");
    const struct brig_namespace *net = brig_spec_namespace(spec, BRIG_NS_NETWORK);
    CHECK(net && net->path == NULL, "a new network namespace (loopback only)");
    CHECK(brig_spec_namespace(spec, BRIG_NS_PID) && brig_spec_namespace(spec, BRIG_NS_MOUNT),
          "pid and mount namespaces");
    CHECK(l->resources->memory->has_limit && l->resources->memory->limit == BRIG_SANDBOX_MEMORY,
          "memory limit 4 GiB replaces the bundle's");
    CHECK(l->resources->has_pids_limit && l->resources->pids_limit == 1024, "pids 1024");
    CHECK(l->resources->cpu->has_quota && l->resources->cpu->quota == 200000
              && l->resources->cpu->period == 100000,
          "two CPUs of quota");
    CHECK(has(&l->masked_paths, "/proc/keys") && has(&l->masked_paths, "/secret"),
          "the usual masked paths, and the bundle's");
    CHECK(has(&l->readonly_paths, "/proc/sys"), "the usual read-only paths");
    CHECK(l->seccomp && strcmp(l->seccomp->default_action, "SCMP_ACT_ERRNO") == 0,
          "the sandbox seccomp profile");
    brig_profile_settings_clear(&s);
    brig_spec_free(spec);
}

static void test_overrides(void)
{
    struct brig_spec *spec = load(bundle);
    struct brig_profile_settings s;
    settings_for_test(&s);
    s.detached_init = 1;
    s.memory = 512 << 20;
    s.pids = 256;
    s.cpus_milli = 500;
    s.netns = strdup("/run/netns/blue");
    s.init_config = strdup("/etc/services.conf");
    free(s.malloc_conf);
    s.malloc_conf = strdup("narenas:2");
    brig_error_t err = NULL;
    CHECK(spec && brig_profile_apply(spec, &s, seccomp(), &err) == 0, "overrides apply");
    if (spec == NULL)
        return;
    CHECK(spec->process->args.n == 2 && strcmp(spec->process->args.v[1], "--exec-port") == 0,
          "a detached init gets no command, and its exec port");
    CHECK_STR(env_get(spec->process, "MALLOC_CONF"), "narenas:2", "MALLOC_CONF override");
    const struct brig_namespace *net = brig_spec_namespace(spec, BRIG_NS_NETWORK);
    CHECK(net && net->path && strcmp(net->path, "/run/netns/blue") == 0,
          "a given network namespace");
    struct brig_resources *r = spec->linux_->resources;
    CHECK(r->memory->limit == 512 << 20 && r->pids_limit == 256 && r->cpu->quota == 50000,
          "memory, pids and cpus overrides");
    int n;
    const struct brig_mount *m = mount_at(spec, BRIG_SANDBOX_INIT_CONF, &n);
    CHECK(m && strcmp(m->source, "/etc/services.conf") == 0, "the services file is bound");
    brig_profile_settings_clear(&s);
    brig_spec_free(spec);
}

static void test_settings_round_trip(void)
{
    struct brig_profile_settings s, back = { 0 };
    settings_for_test(&s);
    s.netns = strdup("/proc/1/ns/net");
    s.data_size = 64 << 20;
    s.detached_init = 1;
    char *text = NULL;
    brig_error_t err = NULL;
    CHECK(brig_profile_settings_format(&s, &text, &err) == 0, "settings format");
    CHECK(text && brig_profile_settings_parse(text, &back, &err) == 0, "settings parse back");
    CHECK_STR(back.rootfs, s.rootfs, "rootfs round-trips");
    CHECK_STR(back.netns, "/proc/1/ns/net", "netns round-trips");
    CHECK(back.data_size == 64 << 20 && back.detached_init == 1 && back.pids == 1024,
          "numbers round-trip");
    CHECK(brig_profile_settings_parse("bogus=1\n", &back, &err) < 0 && err
              && strstr(err->msg, "bogus"),
          "an unknown setting is an error naming it");
    brig_error_release(&err);
    CHECK(brig_profile_settings_parse("memory=lots\n", &back, &err) < 0,
          "a bad number is an error");
    brig_error_release(&err);
    free(text);
    brig_profile_settings_clear(&s);
    brig_profile_settings_clear(&back);
}

static void test_parsers(void)
{
    int64_t v = 0;
    CHECK(brig_profile_parse_size("64M", &v) == 0 && v == 64 << 20, "64M");
    CHECK(brig_profile_parse_size("8G", &v) == 0 && v == INT64_C(8) << 30, "8G");
    CHECK(brig_profile_parse_size("2GiB", &v) == 0 && v == INT64_C(2) << 30, "2GiB");
    CHECK(brig_profile_parse_size("4096", &v) == 0 && v == 4096, "plain bytes");
    CHECK(brig_profile_parse_size("-1G", &v) < 0 && brig_profile_parse_size("1X", &v) < 0
              && brig_profile_parse_size("", &v) < 0 && brig_profile_parse_size("0", &v) < 0
              && brig_profile_parse_size("99999999999T", &v) < 0,
          "bad sizes are refused");
    CHECK(brig_profile_parse_cpus("1.5", &v) == 0 && v == 1500, "1.5 CPUs");
    CHECK(brig_profile_parse_cpus("0", &v) < 0 && brig_profile_parse_cpus("x", &v) < 0,
          "bad CPU counts are refused");
}

static void test_requested(void)
{
    brig_error_t err = NULL;
    struct brig_spec *plain = load(bundle);
    CHECK(plain && brig_profile_requested(plain, &err) == 0, "no annotation: no profile");
    brig_spec_free(plain);
    struct brig_spec *a = load("{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"r\"},"
                               "\"annotations\":{\"run.brig.profile\":\"sandbox\"}}");
    CHECK(a && brig_profile_requested(a, &err) == 1, "the annotation asks for it");
    brig_spec_free(a);
    struct brig_spec *b = load("{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"r\"},"
                               "\"annotations\":{\"run.brig.profile\":\"strict\"}}");
    CHECK(b && brig_profile_requested(b, &err) < 0 && err && strstr(err->msg, "strict"),
          "an unknown profile name is an error");
    brig_error_release(&err);
    brig_spec_free(b);
}

/* An exec into a sandbox that asks for root, capabilities, its own
 * rlimits and its own allocator gets the sandbox's; its args, cwd and the
 * rest of its environment stay; the caller's process is not touched. */
static void test_impose_exec(void)
{
    static const char init_bundle[] =
        "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"rootfs\"},"
        "\"process\":{\"cwd\":\"/\",\"args\":[\"sh\"],\"user\":{\"uid\":0,\"gid\":0},"
        "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1024,\"soft\":1024}]}}";
    static const char asked_json[] =
        "{\"cwd\":\"/tmp\",\"args\":[\"id\",\"-u\"],\"user\":{\"uid\":0,\"gid\":0,"
        "\"additionalGids\":[4,27],\"username\":\"root\"},\"noNewPrivileges\":false,"
        "\"env\":[\"LD_PRELOAD=/tmp/mine.so\",\"HOME=/root\",\"A=b\"],"
        "\"capabilities\":{\"bounding\":[\"CAP_SYS_ADMIN\"],\"effective\":[\"CAP_SYS_ADMIN\"],"
        "\"permitted\":[\"CAP_SYS_ADMIN\"],\"ambient\":[\"CAP_SYS_ADMIN\"]},"
        "\"rlimits\":[{\"type\":\"RLIMIT_NPROC\",\"hard\":99999,\"soft\":99999}]}";
    struct brig_spec *spec = load(init_bundle);
    struct brig_process *asked = NULL, *p = NULL;
    brig_error_t err = NULL;
    struct brig_profile_settings s;
    settings_for_test(&s);
    CHECK(spec && brig_profile_apply(spec, &s, seccomp(), &err) == 0, "the init's spec");
    CHECK(brig_process_parse(asked_json, strlen(asked_json), "exec", &asked, &err) == 0,
          "exec process");
    if (spec == NULL || asked == NULL)
        return;
    CHECK(brig_process_copy(asked, &p, &err) == 0, "copy");
    CHECK(p && brig_profile_impose_exec(p, spec->process, &s, &err) == 0, "impose");
    if (p) {
        CHECK(p->user.uid == 1000 && p->user.gid == 1000, "the sandbox's user");
        CHECK(p->user.n_additional_gids == 0 && p->user.username == NULL,
              "no other groups or name");
        CHECK(p->no_new_privileges, "no_new_privs");
        CHECK(p->capabilities && p->capabilities->bounding.n == 0
                  && p->capabilities->effective.n == 0 && p->capabilities->permitted.n == 0
                  && p->capabilities->ambient.n == 0 && p->capabilities->inheritable.n == 0,
              "every capability set empty");
        CHECK(p->n_rlimits == 1 && strcmp(p->rlimits[0].type, "RLIMIT_NOFILE") == 0
                  && p->rlimits[0].hard == 1024,
              "the init's rlimits, not the caller's");
        const char *pre = env_get(p, "LD_PRELOAD");
        CHECK(pre && strcmp(pre, BRIG_SANDBOX_JEMALLOC) == 0, "LD_PRELOAD is jemalloc, once");
        CHECK(env_get(p, "MALLOC_CONF") && strcmp(env_get(p, "MALLOC_CONF"), s.malloc_conf) == 0,
              "MALLOC_CONF");
        CHECK(env_get(p, "HOME") && strcmp(env_get(p, "HOME"), "/root") == 0,
              "the caller's HOME stays");
        CHECK(env_get(p, "A") && env_get(p, "PATH") && env_get(p, "USER"),
              "caller's env kept, PATH and USER added");
        CHECK(strcmp(p->cwd, "/tmp") == 0 && p->args.n == 2 && strcmp(p->args.v[0], "id") == 0,
              "args and cwd stay the caller's");
    }
    CHECK(asked->user.uid == 0 && asked->capabilities->effective.n == 1 && asked->n_rlimits == 1,
          "the caller's process is untouched");
    brig_process_free(p);
    brig_process_free(asked);
    brig_spec_free(spec);
    brig_profile_settings_clear(&s);
}

/* A range known: a user namespace of the sandbox's own, mapping 0-65535
 * onto it, and the root at the tree's id-mapped bind; twice is once. */
static void test_userns(void)
{
    struct brig_spec *spec = load(bundle);
    if (spec == NULL)
        return;
    struct brig_profile_settings s;
    settings_for_test(&s);
    CHECK_STR(s.userns, BRIG_USERNS_AUTO, "userns: auto by default");
    brig_error_t err = NULL;
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) == 0, "userns: no range yet applies");
    size_t users = 0;
    for (size_t i = 0; i < spec->linux_->n_namespaces; i++)
        users += spec->linux_->namespaces[i].type == BRIG_NS_USER;
    CHECK(users == 0 && spec->linux_->n_uid_mappings == 0,
          "userns: no range, no user namespace yet (the handler adds it)");
    s.userns_uid = 1879048192;
    s.userns_gid = 1879113728;
    CHECK(brig_profile_apply_userns(spec, &s, &err) == 0
              && brig_profile_apply_userns(spec, &s, &err) == 0,
          "userns: applied twice");
    users = 0;
    for (size_t i = 0; i < spec->linux_->n_namespaces; i++)
        users += spec->linux_->namespaces[i].type == BRIG_NS_USER;
    const struct brig_linux *l = spec->linux_;
    CHECK(users == 1, "userns: one user namespace");
    CHECK(l->n_uid_mappings == 1 && l->uid_mappings[0].container_id == 0
              && l->uid_mappings[0].host_id == 1879048192 && l->uid_mappings[0].size == 65536,
          "userns: uids 0-65535 on the range");
    CHECK(l->n_gid_mappings == 1 && l->gid_mappings[0].host_id == 1879113728,
          "userns: gids on the gid range");
    CHECK_STR(spec->root->path, "/var/lib/brig/sandboxes/s1/tree",
              "userns: root is the id-mapped tree");
    CHECK(spec->process->user.uid == 1000, "userns: still uid 1000 inside");

    char *text = NULL;
    struct brig_profile_settings back = { 0 };
    CHECK(brig_profile_settings_format(&s, &text, &err) == 0
              && brig_profile_settings_parse(text, &back, &err) == 0
              && back.userns_uid == 1879048192 && back.userns_gid == 1879113728
              && strcmp(back.userns, "auto") == 0,
          "userns: the range round-trips with the settings");
    free(text);
    brig_profile_settings_clear(&back);
    brig_profile_settings_clear(&s);
    brig_spec_free(spec);
}

/* A pod's container, as containerd's CRI plugin writes it: the pod's
 * image, mounts and namespaces (joined by path) stay; the process, the
 * root and the limits become the sandbox's. */
static const char pod_bundle[] =
    "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"/run/k8s/rootfs\"},"
    "\"process\":{\"cwd\":\"/app\",\"args\":[\"server\"],\"user\":{\"uid\":0,\"gid\":0,"
    "\"additionalGids\":[0,2000]},\"env\":[\"PATH=/bin\",\"K=v\"],"
    "\"capabilities\":{\"bounding\":[\"CAP_NET_RAW\"],\"effective\":[\"CAP_NET_RAW\"]}},"
    "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
    "{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":\"/var/lib/hosts\","
    "\"options\":[\"rbind\",\"ro\"]},"
    "{\"destination\":\"/var/run/secrets/kubernetes.io/serviceaccount\",\"type\":\"bind\","
    "\"source\":\"/var/lib/kubelet/token\",\"options\":[\"rbind\",\"ro\"]}],"
    "\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\"},"
    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},"
    "{\"type\":\"network\",\"path\":\"/proc/42/ns/net\"},{\"type\":\"ipc\",\"path\":\"/proc/42/ns/ipc\"}],"
    "\"resources\":{\"memory\":{\"limit\":67108864}}}}";

static void test_pod(void)
{
    struct brig_spec *spec = load(pod_bundle);
    CHECK(spec && brig_profile_is_pod_container(spec), "a CRI container is a pod's");
    struct brig_spec *plain = load(bundle);
    CHECK(plain && !brig_profile_is_pod_container(plain), "a bundle without CRI's mark is not");
    brig_spec_free(plain);
    if (spec == NULL)
        return;
    struct brig_profile_settings s;
    settings_for_test(&s);
    s.pod = 1;
    brig_error_t err = NULL;
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) == 0, "the pod profile applies");
    CHECK(strcmp(spec->root->path, "/run/k8s/rootfs") == 0 && spec->root->readonly,
          "the pod's image, read-only");
    CHECK(spec->process->user.uid == 1000 && spec->process->user.gid == 1000,
          "a root image runs as the sandbox's user");
    CHECK(spec->process->user.n_additional_gids == 1
              && spec->process->user.additional_gids[0] == 2000,
          "the pod's groups stay, but root's");
    CHECK(spec->process->no_new_privileges && spec->process->capabilities->bounding.n == 0,
          "no capability, no_new_privs");
    CHECK(spec->linux_->seccomp && spec->linux_->seccomp->syscalls,
          "the sandbox's seccomp profile");
    int n;
    CHECK(mount_at(spec, "/etc/hosts", &n) && n == 1
              && mount_at(spec, "/var/run/secrets/kubernetes.io/serviceaccount", &n) && n == 1,
          "CRI's mounts are kept");
    const struct brig_mount *tmp = mount_at(spec, "/tmp", &n);
    CHECK(tmp && n == 1 && strcmp(tmp->type, "tmpfs") == 0, "a tmpfs /tmp over the read-only root");
    CHECK(mount_at(spec, BRIG_SANDBOX_DATA, &n) == NULL
              && mount_at(spec, BRIG_SANDBOX_INIT, &n) == NULL,
          "no sandbox tree, data image or init");
    bool joined = false, cgroup = false;
    for (size_t i = 0; i < spec->linux_->n_namespaces; i++) {
        const struct brig_namespace *ns = &spec->linux_->namespaces[i];
        joined = joined
                 || (ns->type == BRIG_NS_NETWORK && ns->path
                     && strcmp(ns->path, "/proc/42/ns/net") == 0);
        cgroup = cgroup || ns->type == BRIG_NS_CGROUP;
    }
    CHECK(joined && spec->linux_->n_namespaces == 5 && cgroup,
          "the pod's namespaces joined, a cgroup namespace added");
    CHECK(spec->linux_->resources->memory->limit == 67108864, "the pod's memory limit stays");
    CHECK(spec->linux_->resources->has_pids_limit && spec->linux_->resources->pids_limit == s.pids,
          "the profile's pids limit where the pod sets none");
    CHECK(has(&spec->linux_->masked_paths, "/proc/kcore"), "the runtime's masked paths");
    CHECK(strcmp(spec->process->cwd, "/app") == 0 && spec->process->args.n == 5
              && strcmp(spec->process->args.v[4], "server") == 0
              && env_get(spec->process, "LD_PRELOAD") == NULL,
          "the image's command, directory and environment stay");
    const struct brig_mount *init = mount_at(spec, BRIG_POD_INIT, &n);
    CHECK(init && n == 1 && strcmp(init->source, s.init_path) == 0
              && strcmp(spec->process->args.v[0], BRIG_POD_INIT) == 0
              && strcmp(spec->process->args.v[3], "--") == 0,
          "brig-init in front of the command, bound from the host");
    struct brig_spec *pause = load(pod_bundle);
    if (pause) {
        free(pause->annotations.items[0].value);
        pause->annotations.items[0].value = strdup("sandbox");
        CHECK(brig_profile_apply(pause, &s, seccomp(), &err) == 0 && pause->process->args.n == 1
                  && mount_at(pause, BRIG_POD_INIT, &n) == NULL,
              "not in front of the pause container, an init itself");
        brig_spec_free(pause);
    }
    /* an image's own non-root user stays */
    spec->process->user.uid = 4242;
    spec->process->user.gid = 4343;
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) == 0 && spec->process->user.uid == 4242
              && spec->process->user.gid == 4343,
          "the image's non-root user stays");
    static const char asked_json[] =
        "{\"cwd\":\"/srv\",\"args\":[\"id\"],\"user\":{\"uid\":0,\"gid\":0},"
        "\"env\":[\"A=b\"],\"capabilities\":{\"effective\":[\"CAP_SYS_ADMIN\"]}}";
    struct brig_process *p = NULL;
    CHECK(brig_process_parse(asked_json, strlen(asked_json), "exec", &p, &err) == 0,
          "exec process");
    CHECK(p && brig_profile_impose_exec(p, spec->process, &s, &err) == 0, "impose on a pod's exec");
    if (p) {
        CHECK(p->user.uid == 4242 && p->user.gid == 4343 && p->user.n_additional_gids == 1,
              "an exec runs as the container's init, with its groups");
        CHECK(p->capabilities && p->capabilities->effective.n == 0 && p->no_new_privileges,
              "an exec gets no capability");
        CHECK(strcmp(p->cwd, "/srv") == 0 && env_get(p, "A") && env_get(p, "LD_PRELOAD") == NULL,
              "its directory and environment are the caller's");
    }
    brig_process_free(p);
    brig_error_release(&err);
    brig_spec_free(spec);
    brig_profile_settings_clear(&s);
}

/* A pod's user namespace (pod_userns.h): the pause container's own range,
 * mapped; its other containers join it by path, with no maps of their own. */
static void test_pod_userns(void)
{
    struct brig_spec *spec = load(pod_bundle);
    if (spec == NULL)
        return;
    struct brig_profile_settings s;
    settings_for_test(&s);
    s.pod = 1;
    free(s.userns);
    s.userns = strdup(BRIG_USERNS_AUTO);
    s.userns_uid = s.userns_gid = 7 * 65536;
    brig_error_t err = NULL;
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) == 0, "the pod profile with a range");
    const struct brig_namespace *user = brig_spec_namespace(spec, BRIG_NS_USER);
    CHECK(user && user->path == NULL && spec->linux_->n_uid_mappings == 1
              && spec->linux_->uid_mappings[0].host_id == 7 * 65536
              && spec->linux_->uid_mappings[0].size == 65536,
          "the pause container's range: a new user namespace");
    char tree[4096];
    snprintf(tree, sizeof tree, "%s/%s", s.data_dir, BRIG_SANDBOX_TREE);
    CHECK(strcmp(spec->root->path, tree) == 0, "the image's root, id-mapped in the data dir");
    s.pod_userns = strdup("/proc/42/ns/user");
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) == 0, "the pod profile, joining");
    user = brig_spec_namespace(spec, BRIG_NS_USER);
    CHECK(user && user->path && strcmp(user->path, "/proc/42/ns/user") == 0
              && spec->linux_->n_uid_mappings == 0 && spec->linux_->n_gid_mappings == 0,
          "another container joins the pause's user namespace, no maps of its own");
    spec->process->user.uid = 70000;
    CHECK(brig_profile_apply(spec, &s, seccomp(), &err) < 0 && strstr(err->msg, "70000"),
          "an image user past the range is refused, named");
    brig_error_release(&err);
    brig_spec_free(spec);
    brig_profile_settings_clear(&s);
}

/* A sandbox from a template (sandbox/template.h): the image's user,
 * WorkingDir and Env on the init and on every exec, the home its user's,
 * no preload when the image has no jemalloc; all of it kept in the
 * settings' text. */
static void test_template(void)
{
    static const char asked_json[] = "{\"cwd\":\"/tmp\",\"args\":[\"id\"],\"user\":{\"uid\":0,"
                                     "\"gid\":0},\"env\":[\"MINE=1\"]}";
    struct brig_spec *spec = load(bundle);
    struct brig_profile_settings s, back = { 0 };
    settings_for_test(&s);
    s.template_name = strdup("app");
    s.jemalloc = strdup(BRIG_JEMALLOC_NONE);
    s.user_uid = 1001;
    s.user_gid = 1002;
    s.user_name = strdup("app");
    s.workdir = strdup("/srv");
    s.env.v = calloc(3, sizeof *s.env.v);
    s.env.v[0] = strdup("FOO=bar=baz");
    s.env.v[1] = strdup("PATH=/opt/bin:/bin");
    s.env.n = 2;
    char *text = NULL;
    brig_error_t err = NULL;
    CHECK(brig_profile_settings_format(&s, &text, &err) == 0
              && brig_profile_settings_parse(text, &back, &err) == 0,
          "template: settings round-trip");
    CHECK(back.env.n == 2 && strcmp(back.env.v[0], "FOO=bar=baz") == 0 && back.user_uid == 1001
              && back.user_gid == 1002 && back.template_name
              && strcmp(back.template_name, "app") == 0 && back.workdir
              && strcmp(back.workdir, "/srv") == 0,
          "template: env, user, name and workdir come back");
    free(text);
    CHECK(spec && brig_profile_apply(spec, &back, seccomp(), &err) == 0, "template: applies");
    if (spec == NULL)
        return;
    struct brig_process *init = spec->process;
    CHECK(init->user.uid == 1001 && init->user.gid == 1002, "template: the image's user");
    CHECK_STR(init->cwd, "/srv", "template: WorkingDir is the init's cwd");
    CHECK_STR(env_get(init, "FOO"), "bar=baz", "template: Env on the init");
    CHECK_STR(env_get(init, "PATH"), "/opt/bin:/bin", "template: its PATH over the bundle's");
    CHECK_STR(env_get(init, "USER"), "app", "template: USER is its user");
    CHECK(env_get(init, "LD_PRELOAD") && strcmp(env_get(init, "LD_PRELOAD"), "/evil.so") == 0,
          "template: no jemalloc, no preload added");
    int n;
    const struct brig_mount *home = mount_at(spec, BRIG_SANDBOX_HOME, &n);
    CHECK(home && has(&home->options, "uid=1001") && has(&home->options, "gid=1002"),
          "template: the home is its user's");
    struct brig_process *asked = NULL;
    CHECK(brig_process_parse(asked_json, strlen(asked_json), "exec", &asked, &err) == 0
              && brig_profile_impose_exec(asked, init, &back, &err) == 0,
          "template: an exec");
    CHECK(asked && asked->user.uid == 1001 && asked->user.gid == 1002,
          "template: an exec runs as its user");
    brig_process_free(asked);
    brig_spec_free(spec);
    brig_profile_settings_clear(&s);
    brig_profile_settings_clear(&back);
}

int main(void)
{
    test_apply();
    test_pod();
    test_pod_userns();
    test_userns();
    test_impose_exec();
    test_overrides();
    test_settings_round_trip();
    test_parsers();
    test_requested();
    test_template();
    return unit_done();
}
