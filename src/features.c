#define _GNU_SOURCE
/* `brig features`: generated from the tables the code itself uses (the
 * namespace names, libcap's capability list, the mount option table), so
 * it can't claim what the runtime doesn't do. */
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "brig.h"
#include "process/identity.h"
#include "cli.h"
#include "rootfs/mounts.h"
#include "process/seccomp.h"
#include "spec/spec.h"
#include "container/state.h"

static const char usage[] =
    "Usage: brig features\n\n"
    "Print what this runtime supports as an OCI features document (JSON).\n";

static const char *const hook_kinds[] = {
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop", NULL,
};

#define STR(g, s) yajl_gen_string((g), (const unsigned char *) (s), strlen(s))

static void gen_list(yajl_gen g, const char *key, const char *const *items)
{
    STR(g, key);
    yajl_gen_array_open(g);
    for (; *items; items++)
        STR(g, *items);
    yajl_gen_array_close(g);
}

static void gen_bool(yajl_gen g, const char *key, bool value)
{
    STR(g, key);
    yajl_gen_bool(g, value);
}

static void gen_linux(yajl_gen g)
{
    const char *namespaces[BRIG_NS_COUNT + 1] = { 0 };
    for (int t = 0; t < BRIG_NS_COUNT; t++)
        namespaces[t] = brig_ns_type_name((enum brig_ns_type) t);
    STR(g, "linux");
    yajl_gen_map_open(g);
    gen_list(g, "namespaces", namespaces);
    gen_list(g, "capabilities", brig_cap_names());
    STR(g, "cgroup");
    yajl_gen_map_open(g);
    gen_bool(g, "v1", true);
    gen_bool(g, "v2", true);
    gen_bool(g, "systemd", true);
    gen_bool(g, "systemdUser", false);
    gen_bool(g, "rdma", true);
    yajl_gen_map_close(g);
    STR(g, "seccomp");
    yajl_gen_map_open(g);
    gen_bool(g, "enabled", true);
    gen_list(g, "actions", brig_seccomp_action_names());
    gen_list(g, "operators", brig_seccomp_operator_names());
    gen_list(g, "archs", brig_seccomp_arch_names());
    gen_list(g, "knownFlags", brig_seccomp_flag_names());
    gen_list(g, "supportedFlags", brig_seccomp_supported_flag_names());
    yajl_gen_map_close(g);
    STR(g, "apparmor");
    yajl_gen_map_open(g);
    gen_bool(g, "enabled", false);
    yajl_gen_map_close(g);
    STR(g, "selinux");
    yajl_gen_map_open(g);
    gen_bool(g, "enabled", false);
    yajl_gen_map_close(g);
    STR(g, "intelRdt");
    yajl_gen_map_open(g);
    gen_bool(g, "enabled", false);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
}

int brig_cmd_features(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, usage, 0, "nothing");
    if (done != BRIG_CLI_GO_ON)
        return done;
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return brig_fail_msg("features: out of memory");
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_indent_string, "  ");
    yajl_gen_map_open(g);
    STR(g, "ociVersionMin");
    STR(g, "1.0.0");
    STR(g, "ociVersionMax");
    STR(g, BRIG_OCI_VERSION);
    gen_list(g, "hooks", hook_kinds);
    gen_list(g, "mountOptions", brig_mount_option_names());
    gen_linux(g);
    STR(g, "annotations");
    yajl_gen_map_open(g);
    const struct scmp_version *v = seccomp_version();
    char version[32];
    snprintf(version, sizeof version, "%u.%u.%u", v ? v->major : 0, v ? v->minor : 0,
             v ? v->micro : 0);
    STR(g, "io.github.seccomp.libseccomp.version");
    STR(g, version);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
    const unsigned char *buf;
    size_t len;
    yajl_gen_get_buf(g, &buf, &len);
    fwrite(buf, 1, len, stdout);
    fputc('\n', stdout);
    yajl_gen_free(g);
    return 0;
}
