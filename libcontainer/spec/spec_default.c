/* The config.json that `brig spec` writes: the same starting point as
 * `runc spec`, so bundles and habits carry over between the two. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "spec/spec.h"

/* The writer remembers the first failure, so the generating code reads as
 * the document it produces instead of a check after every token. */
struct writer {
    yajl_gen g;
    yajl_gen_status status;
};

static void put_str(struct writer *w, const char *s)
{
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_string(w->g, (const unsigned char *) s, strlen(s));
}

static void put_int(struct writer *w, long long x)
{
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_integer(w->g, x);
}

static void put_bool(struct writer *w, bool b)
{
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_bool(w->g, b);
}

static void open_map(struct writer *w, const char *key)
{
    if (key)
        put_str(w, key);
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_map_open(w->g);
}

static void close_map(struct writer *w)
{
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_map_close(w->g);
}

static void open_array(struct writer *w, const char *key)
{
    put_str(w, key);
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_array_open(w->g);
}

static void close_array(struct writer *w)
{
    if (w->status == yajl_gen_status_ok)
        w->status = yajl_gen_array_close(w->g);
}

static void put_key_str(struct writer *w, const char *key, const char *value)
{
    put_str(w, key);
    put_str(w, value);
}

static void put_key_int(struct writer *w, const char *key, long long value)
{
    put_str(w, key);
    put_int(w, value);
}

static void put_key_bool(struct writer *w, const char *key, bool value)
{
    put_str(w, key);
    put_bool(w, value);
}

/* A NULL-terminated list of strings, skipping those keep() rejects. */
static void put_strv(struct writer *w, const char *key, const char *const *v,
                     bool (*keep)(const char *))
{
    open_array(w, key);
    for (; *v; v++)
        if (keep == NULL || keep(*v))
            put_str(w, *v);
    close_array(w);
}

static const char *const default_caps[] = {
    "CAP_AUDIT_WRITE",
    "CAP_KILL",
    "CAP_NET_BIND_SERVICE",
    NULL,
};

static void put_process(struct writer *w)
{
    static const char *const args[] = { "sh", NULL };
    static const char *const env[] = {
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "TERM=xterm",
        NULL,
    };
    open_map(w, "process");
    put_key_bool(w, "terminal", true);
    open_map(w, "user");
    put_key_int(w, "uid", 0);
    put_key_int(w, "gid", 0);
    close_map(w);
    put_strv(w, "args", args, NULL);
    put_strv(w, "env", env, NULL);
    put_key_str(w, "cwd", "/");
    open_map(w, "capabilities");
    put_strv(w, "bounding", default_caps, NULL);
    put_strv(w, "effective", default_caps, NULL);
    put_strv(w, "permitted", default_caps, NULL);
    close_map(w);
    open_array(w, "rlimits");
    open_map(w, NULL);
    put_key_str(w, "type", "RLIMIT_NOFILE");
    put_key_int(w, "hard", 1024);
    put_key_int(w, "soft", 1024);
    close_map(w);
    close_array(w);
    put_key_bool(w, "noNewPrivileges", true);
    close_map(w);
}

struct default_mount {
    const char *destination, *type, *source;
    const char *const options[7];
};

static const struct default_mount default_mounts[] = {
    { "/proc", "proc", "proc", { NULL } },
    { "/dev", "tmpfs", "tmpfs", { "nosuid", "strictatime", "mode=755", "size=65536k", NULL } },
    { "/dev/pts",
      "devpts",
      "devpts",
      { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", NULL } },
    { "/dev/shm",
      "tmpfs",
      "shm",
      { "nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL } },
    { "/dev/mqueue", "mqueue", "mqueue", { "nosuid", "noexec", "nodev", NULL } },
    { "/sys", "sysfs", "sysfs", { "nosuid", "noexec", "nodev", "ro", NULL } },
    { "/sys/fs/cgroup",
      "cgroup",
      "cgroup",
      { "nosuid", "noexec", "nodev", "relatime", "ro", NULL } },
};

/* A user namespace can't mount a fresh sysfs without its own network
 * namespace, so rootless containers see the host's /sys through a bind. */
static const struct default_mount rootless_sys = {
    "/sys",
    "none",
    "/sys",
    { "rbind", "nosuid", "noexec", "nodev", "ro", NULL },
};

/* Only ids mapped into the user namespace can be named in mount options,
 * and rootless maps just one. */
static bool not_an_id_option(const char *opt)
{
    return strncmp(opt, "uid=", 4) != 0 && strncmp(opt, "gid=", 4) != 0;
}

static void put_mounts(struct writer *w, bool rootless)
{
    open_array(w, "mounts");
    for (size_t i = 0; i < sizeof default_mounts / sizeof default_mounts[0]; i++) {
        const struct default_mount *m = &default_mounts[i];
        if (rootless && strcmp(m->destination, "/sys") == 0)
            m = &rootless_sys;
        open_map(w, NULL);
        put_key_str(w, "destination", m->destination);
        put_key_str(w, "type", m->type);
        put_key_str(w, "source", m->source);
        if (m->options[0])
            put_strv(w, "options", m->options, rootless ? not_an_id_option : NULL);
        close_map(w);
    }
    close_array(w);
}

static void put_id_mapping(struct writer *w, const char *key, unsigned host_id)
{
    open_array(w, key);
    open_map(w, NULL);
    put_key_int(w, "containerID", 0);
    put_key_int(w, "hostID", host_id);
    put_key_int(w, "size", 1);
    close_map(w);
    close_array(w);
}

/* What a container must not read, and what it must not write, of the
 * kernel's files: the default spec's lists, which profiles reuse. */
const char *const brig_default_masked_paths[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/proc/scsi",
    "/sys/devices/virtual/powercap",
    NULL,
};
const char *const brig_default_readonly_paths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

static void put_linux(struct writer *w, bool rootless)
{
    /* Rootless keeps the host's network (it can't configure a new one) and
     * gets a user namespace instead; it can't write cgroup device rules. */
    static const char *const ns_root[] = {
        "pid", "network", "ipc", "uts", "mount", "cgroup", NULL,
    };
    static const char *const ns_rootless[] = {
        "pid", "ipc", "uts", "mount", "cgroup", "user", NULL,
    };

    open_map(w, "linux");
    if (rootless) {
        put_id_mapping(w, "uidMappings", (unsigned) geteuid());
        put_id_mapping(w, "gidMappings", (unsigned) getegid());
    } else {
        open_map(w, "resources");
        open_array(w, "devices");
        open_map(w, NULL);
        put_key_bool(w, "allow", false);
        put_key_str(w, "access", "rwm");
        close_map(w);
        close_array(w);
        close_map(w);
    }
    open_array(w, "namespaces");
    for (const char *const *ns = rootless ? ns_rootless : ns_root; *ns; ns++) {
        open_map(w, NULL);
        put_key_str(w, "type", *ns);
        close_map(w);
    }
    close_array(w);
    put_strv(w, "maskedPaths", brig_default_masked_paths, NULL);
    put_strv(w, "readonlyPaths", brig_default_readonly_paths, NULL);
    close_map(w);
}

static void put_document(struct writer *w, bool rootless)
{
    open_map(w, NULL);
    put_key_str(w, "ociVersion", "1.2.0");
    put_process(w);
    open_map(w, "root");
    put_key_str(w, "path", "rootfs");
    put_key_bool(w, "readonly", true);
    close_map(w);
    put_key_str(w, "hostname", "brig");
    put_mounts(w, rootless);
    put_linux(w, rootless);
    close_map(w);
}

int brig_spec_default_json(bool rootless, char **out, brig_error_t *err)
{
    *out = NULL;
    struct writer w = { .g = yajl_gen_alloc(NULL), .status = yajl_gen_status_ok };
    if (w.g == NULL)
        return brig_error_set(err, ENOMEM, "default spec");
    yajl_gen_config(w.g, yajl_gen_beautify, 1);
    yajl_gen_config(w.g, yajl_gen_indent_string, "\t");
    put_document(&w, rootless);

    const unsigned char *buf = NULL;
    size_t len = 0;
    if (w.status == yajl_gen_status_ok)
        w.status = yajl_gen_get_buf(w.g, &buf, &len);
    if (w.status != yajl_gen_status_ok) {
        yajl_gen_free(w.g);
        return brig_error_set(err, 0, "default spec: JSON generator failed (status %d)",
                              (int) w.status);
    }
    *out = strndup((const char *) buf, len);
    yajl_gen_free(w.g);
    if (*out == NULL)
        return brig_error_set(err, ENOMEM, "default spec");
    return 0;
}
