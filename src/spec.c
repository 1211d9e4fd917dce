#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "spec/spec.h"
#include "base/utils.h"

static const char usage[] =
    "Usage: brig spec [options]\n\n"
    "Write a default config.json into the bundle; an existing one is kept.\n"
    "With --seccomp, the profile goes into linux.seccomp of the new config, or\n"
    "of the existing one (the rest of which is kept).\n\n"
    "Options:\n"
    "  -b, --bundle DIR     the bundle (default: the current directory)\n"
    "      --rootless       a config for running without root (user namespace)\n"
    "      --seccomp PROF   a seccomp profile: a file, or `default` / `sandbox`\n"
    "                       (the profiles installed with brig)\n"
    "  -h, --help           print this help\n";

#define GEN_STR(g, s, n) yajl_gen_string((g), (const unsigned char *) (s), (n))

/* Writes a parsed tree back out, with `seccomp` (when given) replacing
 * linux.seccomp; numbers keep their original text. */
static void gen_tree(yajl_gen g, yajl_val v, yajl_val seccomp, int depth, bool in_linux)
{
    if (YAJL_IS_OBJECT(v)) {
        yajl_gen_map_open(g);
        bool replaced = false;
        for (size_t i = 0; i < v->u.object.len; i++) {
            const char *key = v->u.object.keys[i];
            bool is_linux = depth == 0 && strcmp(key, "linux") == 0;
            if (in_linux && seccomp && strcmp(key, "seccomp") == 0) {
                GEN_STR(g, key, strlen(key));
                gen_tree(g, seccomp, NULL, depth + 1, false);
                replaced = true;
                continue;
            }
            GEN_STR(g, key, strlen(key));
            gen_tree(g, v->u.object.values[i], seccomp, depth + 1, is_linux);
        }
        if (in_linux && seccomp && !replaced) {
            GEN_STR(g, "seccomp", 7);
            gen_tree(g, seccomp, NULL, depth + 1, false);
        }
        yajl_gen_map_close(g);
    } else if (YAJL_IS_ARRAY(v)) {
        yajl_gen_array_open(g);
        for (size_t i = 0; i < v->u.array.len; i++)
            gen_tree(g, v->u.array.values[i], seccomp, depth + 1, false);
        yajl_gen_array_close(g);
    } else if (YAJL_IS_STRING(v)) {
        const char *s = v->u.string;
        GEN_STR(g, s, strlen(s));
    } else if (YAJL_IS_NUMBER(v)) {
        yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
    } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        yajl_gen_bool(g, YAJL_IS_TRUE(v));
    } else {
        yajl_gen_null(g);
    }
}

static yajl_val parse_json(const char *text, const char *what)
{
    char msg[256] = "";
    yajl_val v = yajl_tree_parse(text, msg, sizeof msg);
    if (v == NULL) {
        char *nl = strchr(msg, '\n');
        if (nl)
            *nl = '\0';
        brig_fail_msg("spec: %s: invalid JSON: %s", what, msg);
    }
    return v;
}

/* A name of an installed profile, or a path. */
static int load_profile(const char *name, char **json)
{
    cleanup_free char *path = NULL;
    if (strchr(name, '/') == NULL && strchr(name, '.') == NULL) {
        if (asprintf(&path, "%s/%s.json", BRIG_SECCOMP_DIR, name) < 0)
            return brig_fail_msg("spec: out of memory");
    } else if ((path = strdup(name)) == NULL) {
        return brig_fail_msg("spec: out of memory");
    }
    brig_error_t err = NULL;
    size_t len;
    if (brig_read_file(path, json, &len, &err) < 0)
        return brig_fail(&err);
    /* The profile must be one that brig would accept in config.json. */
    struct brig_spec *check = NULL;
    cleanup_free char *wrapped = NULL;
    if (asprintf(&wrapped,
                 "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"r\"},\"linux\":{\"seccomp\":%s}}",
                 *json)
        < 0)
        return brig_fail_msg("spec: out of memory");
    if (brig_spec_parse(wrapped, strlen(wrapped), path, &check, &err) < 0)
        return brig_fail(&err);
    brig_spec_free(check);
    return 0;
}

static int write_config(const char *path, const char *json, bool replace)
{
    if (replace) {
        brig_error_t err = NULL;
        cleanup_free char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash == NULL)
            return brig_fail_msg("spec: out of memory");
        *slash = '\0';
        cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0
            || brig_write_file_atomic_at(dfd, "config.json", json, strlen(json), 0644, &err) < 0)
            return err ? brig_fail(&err)
                       : brig_fail_msg("spec: open `%s`: %s", dir, strerror(errno));
        return 0;
    }
    cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            return brig_fail_msg("spec: `%s` already exists", path);
        return brig_fail_msg("spec: create `%s`: %s", path, strerror(errno));
    }
    if (brig_write_all(fd, json, strlen(json)) < 0) {
        int saved = errno;
        unlink(path);
        return brig_fail_msg("spec: write `%s`: %s", path, strerror(saved));
    }
    return 0;
}

/* The config (the existing one, or the default) with the profile merged. */
static int merge_seccomp(const char *path, const char *base_json, const char *profile_json,
                         char **out)
{
    yajl_val base = parse_json(base_json, path), profile = NULL;
    if (base == NULL || (profile = parse_json(profile_json, "seccomp profile")) == NULL) {
        yajl_tree_free(base);
        return 1;
    }
    yajl_gen g = yajl_gen_alloc(NULL);
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_indent_string, "\t");
    /* A config without a linux object gets one for the profile. */
    const char *linux_path[] = { "linux", NULL };
    if (yajl_tree_get(base, linux_path, yajl_t_object) == NULL) {
        yajl_gen_map_open(g);
        for (size_t i = 0; i < base->u.object.len; i++) {
            GEN_STR(g, base->u.object.keys[i], strlen(base->u.object.keys[i]));
            gen_tree(g, base->u.object.values[i], NULL, 1, false);
        }
        GEN_STR(g, "linux", 5);
        yajl_gen_map_open(g);
        GEN_STR(g, "seccomp", 7);
        gen_tree(g, profile, NULL, 2, false);
        yajl_gen_map_close(g);
        yajl_gen_map_close(g);
    } else {
        gen_tree(g, base, profile, 0, false);
    }
    const unsigned char *buf;
    size_t len;
    yajl_gen_get_buf(g, &buf, &len);
    if (asprintf(out, "%.*s\n", (int) len, buf) < 0)
        *out = NULL;
    yajl_gen_free(g);
    yajl_tree_free(base);
    yajl_tree_free(profile);
    return *out ? 0 : brig_fail_msg("spec: out of memory");
}

int brig_cmd_spec(int argc, char **argv)
{
    static const struct option opts[] = {
        { "bundle", required_argument, NULL, 'b' },
        { "rootless", no_argument, NULL, 'r' },
        { "seccomp", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *bundle = ".", *seccomp = NULL;
    bool rootless = false;
    int c;
    while ((c = getopt_long(argc, argv, "+b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            bundle = optarg;
            break;
        case 'r':
            rootless = true;
            break;
        case 's':
            seccomp = optarg;
            break;
        case 'h':
            return brig_usage(usage);
        default:
            return brig_bad_option(argv);
        }
    }
    int done = brig_parse_args(argc, argv, 0, 0, "nothing");
    if (done != BRIG_CLI_GO_ON)
        return done;
    brig_error_t err = NULL;
    cleanup_free char *json = NULL, *path = NULL, *profile = NULL, *merged = NULL;
    if (asprintf(&path, "%s/config.json", bundle) < 0)
        return brig_fail_msg("spec: out of memory");
    bool exists = access(path, F_OK) == 0;
    if (exists && seccomp == NULL)
        return brig_fail_msg("spec: `%s` already exists", path);
    if (seccomp && load_profile(seccomp, &profile) != 0)
        return 1;
    if (exists) {
        if (brig_read_file(path, &json, NULL, &err) < 0)
            return brig_fail(&err);
    } else if (brig_spec_default_json(rootless, &json, &err) < 0) {
        return brig_fail(&err);
    }
    if (profile && merge_seccomp(path, json, profile, &merged) != 0)
        return 1;
    return write_config(path, merged ? merged : json, exists);
}
