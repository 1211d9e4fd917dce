#define _GNU_SOURCE
/* unpack.h: which image the archive holds and what its config says.
 *
 * OCI (podman save --format oci-archive, skopeo's oci-archive:):
 * index.json names a manifest (or an index of them) by digest; each blob
 * is blobs/sha256/HEX and must hash to HEX. docker-archive (podman save,
 * docker save): manifest.json names the config, whose file name is its
 * sha256, and the layers' files, whose uncompressed streams must hash to
 * the config's rootfs.diff_ids. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "base/cleanup.h"
#include "unpack.h"

#define INDEX_DEPTH_MAX 4
#define MT_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"

static void free_json(yajl_val *v)
{
    yajl_tree_free(*v);
}
#define cleanup_json __attribute__((cleanup(free_json)))

bool unpack_is_hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

static yajl_val field(yajl_val obj, const char *key, yajl_type type)
{
    const char *path[] = { key, NULL };
    return obj ? yajl_tree_get(obj, path, type) : NULL;
}

static const char *string_field(yajl_val obj, const char *key)
{
    yajl_val v = field(obj, key, yajl_t_string);
    return v ? YAJL_GET_STRING(v) : NULL;
}

static int parse_json(const char *text, const char *what, yajl_val *out, brig_error_t *err)
{
    char msg[256] = "";
    *out = yajl_tree_parse(text, msg, sizeof msg);
    if (*out == NULL) {
        msg[strcspn(msg, "\n")] = '\0';
        return brig_error_kind(err, BRIG_E_INPUT, "%s: not JSON (%s)", what, msg);
    }
    return 0;
}

/* "sha256:HEX" → HEX, checked. */
static int digest_hex(const char *digest, const char *what, char hex[65], brig_error_t *err)
{
    if (digest == NULL || strncmp(digest, "sha256:", 7) != 0 || !unpack_is_hex64(digest + 7))
        return brig_error_kind(err, BRIG_E_INPUT, "%s: digest `%s` is not sha256:HEX", what,
                               digest ? digest : "(none)");
    memcpy(hex, digest + 7, 65);
    return 0;
}

/* A blob read by name and checked against the hash it must have. */
static int read_checked(const char *archive, const char *name, const char *hex, const char *what,
                        yajl_val *json, brig_error_t *err)
{
    cleanup_free char *data = NULL;
    size_t len;
    char got[65];
    if (unpack_read_file(archive, name, UNPACK_JSON_MAX, &data, &len, got, err) < 0)
        return brig_error_wrap(err, "%s", what);
    if (strcmp(got, hex) != 0)
        return brig_error_kind(err, BRIG_E_INPUT,
                               "%s: blob `%s`: digest mismatch (sha256:%s expected, its content "
                               "is sha256:%s)",
                               what, name, hex, got);
    return parse_json(data, what, json, err);
}

static int read_oci_blob(const char *archive, const char *digest, const char *what, yajl_val *json,
                         char hex[65], brig_error_t *err)
{
    char name[128];
    if (digest_hex(digest, what, hex, err) < 0)
        return -1;
    snprintf(name, sizeof name, "blobs/sha256/%s", hex);
    return read_checked(archive, name, hex, what, json, err);
}

/* The manifest an index names: the only one, else the first for
 * linux/amd64 (or without a platform). */
static yajl_val pick_manifest(yajl_val index)
{
    yajl_val list = field(index, "manifests", yajl_t_array);
    if (list == NULL || YAJL_GET_ARRAY(list)->len == 0)
        return NULL;
    size_t n = YAJL_GET_ARRAY(list)->len;
    for (size_t i = 0; i < n && n > 1; i++) {
        yajl_val d = YAJL_GET_ARRAY(list)->values[i];
        yajl_val p = field(d, "platform", yajl_t_object);
        const char *os = string_field(p, "os"), *arch = string_field(p, "architecture");
        if (p == NULL || (os && strcmp(os, "linux") == 0 && arch && strcmp(arch, "amd64") == 0))
            return d;
    }
    return YAJL_GET_ARRAY(list)->values[0];
}

static int oci_manifest(const char *archive, yajl_val *manifest, brig_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len;
    char hex[65];
    if (unpack_read_file(archive, "index.json", UNPACK_JSON_MAX, &text, &len, hex, err) < 0)
        return -1;
    yajl_val index;
    if (parse_json(text, "index.json", &index, err) < 0)
        return -1;
    /* An index may name another index (a multi-platform image): a blob
     * that lists manifests is one, whatever its descriptor said. */
    for (int depth = 0; depth < INDEX_DEPTH_MAX; depth++) {
        cleanup_json yajl_val parent = index;
        yajl_val d = pick_manifest(parent), next = NULL;
        if (d == NULL)
            return brig_error_kind(err, BRIG_E_INPUT, "index.json: no manifest");
        const char *mt = string_field(d, "mediaType");
        bool nested = mt && (strcmp(mt, MT_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0);
        if (read_oci_blob(archive, string_field(d, "digest"), nested ? "index" : "manifest", &next,
                          hex, err)
            < 0)
            return -1;
        if (field(next, "manifests", yajl_t_array) == NULL) {
            *manifest = next;
            return 0;
        }
        index = next;
    }
    yajl_tree_free(index);
    return brig_error_kind(err, BRIG_E_INPUT, "index.json: indexes nested too deep");
}

static int add_layer(struct unpack_image *im, const char *blob, const char *blob_hex,
                     brig_error_t *err)
{
    if (im->n_layers == UNPACK_LAYERS_MAX)
        return brig_error_kind(err, BRIG_E_INPUT, "more than %d layers", UNPACK_LAYERS_MAX);
    struct unpack_layer *bigger = realloc(im->layers, (im->n_layers + 1) * sizeof *bigger);
    if (bigger == NULL)
        return brig_error_set(err, ENOMEM, "layers");
    im->layers = bigger;
    struct unpack_layer *l = &bigger[im->n_layers];
    *l = (struct unpack_layer){ .blob = strdup(blob) };
    if (l->blob == NULL)
        return brig_error_set(err, ENOMEM, "layers");
    snprintf(l->blob_hex, sizeof l->blob_hex, "%s", blob_hex);
    im->n_layers++;
    return 0;
}

static int load_oci(struct unpack_image *im, yajl_val *config, brig_error_t *err)
{
    cleanup_json yajl_val manifest = NULL;
    if (oci_manifest(im->archive, &manifest, err) < 0)
        return -1;
    yajl_val cd = field(manifest, "config", yajl_t_object);
    if (read_oci_blob(im->archive, string_field(cd, "digest"), "config", config, im->config_hex,
                      err)
        < 0)
        return -1;
    yajl_val layers = field(manifest, "layers", yajl_t_array);
    if (layers == NULL)
        return brig_error_kind(err, BRIG_E_INPUT, "manifest: no layers");
    for (size_t i = 0; i < YAJL_GET_ARRAY(layers)->len; i++) {
        char hex[65], name[128], what[32];
        snprintf(what, sizeof what, "layer %zu", i + 1);
        if (digest_hex(string_field(YAJL_GET_ARRAY(layers)->values[i], "digest"), what, hex, err)
            < 0)
            return -1;
        snprintf(name, sizeof name, "blobs/sha256/%s", hex);
        if (add_layer(im, name, hex, err) < 0)
            return -1;
    }
    return 0;
}

/* docker-archive: the config's name, without a `.json` and any dirs, is
 * its sha256. */
static int config_name_hex(const char *name, char hex[65], brig_error_t *err)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0)
        n -= 5;
    if (n != 64)
        return brig_error_kind(err, BRIG_E_INPUT, "config `%s`: its name is not its sha256", name);
    memcpy(hex, base, 64);
    hex[64] = '\0';
    if (!unpack_is_hex64(hex))
        return brig_error_kind(err, BRIG_E_INPUT, "config `%s`: its name is not its sha256", name);
    return 0;
}

static int load_docker(struct unpack_image *im, const char *text, yajl_val *config,
                       brig_error_t *err)
{
    cleanup_json yajl_val manifest = NULL;
    if (parse_json(text, "manifest.json", &manifest, err) < 0)
        return -1;
    if (!YAJL_IS_ARRAY(manifest) || YAJL_GET_ARRAY(manifest)->len == 0)
        return brig_error_kind(err, BRIG_E_INPUT, "manifest.json: no image");
    yajl_val first = YAJL_GET_ARRAY(manifest)->values[0];
    const char *name = string_field(first, "Config");
    if (name == NULL)
        return brig_error_kind(err, BRIG_E_INPUT, "manifest.json: no Config");
    if (config_name_hex(name, im->config_hex, err) < 0
        || read_checked(im->archive, name, im->config_hex, "config", config, err) < 0)
        return -1;
    yajl_val layers = field(first, "Layers", yajl_t_array);
    if (layers == NULL)
        return brig_error_kind(err, BRIG_E_INPUT, "manifest.json: no Layers");
    for (size_t i = 0; i < YAJL_GET_ARRAY(layers)->len; i++) {
        yajl_val l = YAJL_GET_ARRAY(layers)->values[i];
        if (!YAJL_IS_STRING(l))
            return brig_error_kind(err, BRIG_E_INPUT, "manifest.json: a layer is not a name");
        if (add_layer(im, YAJL_GET_STRING(l), "", err) < 0)
            return -1;
    }
    return 0;
}

/* A string field of the config's `config`, "" when unset; one with a
 * newline is refused (brig keeps them as lines). */
static int config_string(yajl_val conf, const char *key, char **out, brig_error_t *err)
{
    const char *v = string_field(conf, key);
    if (v && strchr(v, '\n'))
        return brig_error_kind(err, BRIG_E_INPUT, "config: %s has a newline", key);
    *out = strdup(v ? v : "");
    return *out ? 0 : brig_error_set(err, ENOMEM, "config");
}

static int config_env(yajl_val conf, char ***out, brig_error_t *err)
{
    yajl_val env = field(conf, "Env", yajl_t_array);
    size_t n = env ? YAJL_GET_ARRAY(env)->len : 0;
    if ((*out = calloc(n + 1, sizeof **out)) == NULL)
        return brig_error_set(err, ENOMEM, "config");
    for (size_t i = 0, k = 0; i < n; i++) {
        yajl_val v = YAJL_GET_ARRAY(env)->values[i];
        const char *text = YAJL_IS_STRING(v) ? v->u.string : NULL;
        if (text == NULL || !strchr(text, '=') || text[0] == '=' || strchr(text, '\n'))
            return brig_error_kind(err, BRIG_E_INPUT, "config: Env entry %zu is not NAME=VALUE",
                                   i + 1);
        if (((*out)[k++] = strdup(text)) == NULL)
            return brig_error_set(err, ENOMEM, "config");
    }
    return 0;
}

/* Env, WorkingDir, User, and each layer's diff_id. */
static int read_config(struct unpack_image *im, yajl_val config, brig_error_t *err)
{
    yajl_val conf = field(config, "config", yajl_t_object);
    if (config_string(conf, "User", &im->user, err) < 0
        || config_string(conf, "WorkingDir", &im->workdir, err) < 0
        || config_env(conf, &im->env, err) < 0)
        return -1;
    const char *path[] = { "rootfs", "diff_ids", NULL };
    yajl_val ids = yajl_tree_get(config, path, yajl_t_array);
    if (ids == NULL || YAJL_GET_ARRAY(ids)->len != im->n_layers)
        return brig_error_kind(err, BRIG_E_INPUT,
                               "config: rootfs.diff_ids does not list the %zu layers",
                               im->n_layers);
    for (size_t i = 0; i < im->n_layers; i++) {
        yajl_val id = YAJL_GET_ARRAY(ids)->values[i];
        char what[48];
        snprintf(what, sizeof what, "config: diff_id %zu", i + 1);
        if (digest_hex(YAJL_IS_STRING(id) ? YAJL_GET_STRING(id) : NULL, what,
                       im->layers[i].diff_hex, err)
            < 0)
            return -1;
    }
    return 0;
}

int unpack_image_load(const char *archive, struct unpack_image *im, brig_error_t *err)
{
    *im = (struct unpack_image){ .archive = archive };
    cleanup_free char *docker = NULL;
    size_t len;
    char hex[65];
    cleanup_json yajl_val config = NULL;
    int r = unpack_read_file(archive, "manifest.json", UNPACK_JSON_MAX, &docker, &len, hex, err);
    if (r < 0 && (*err)->errnum == ENOENT) {
        brig_error_release(err);
        im->oci = true;
        r = load_oci(im, &config, err);
        if (r < 0 && (*err)->errnum == ENOENT)
            brig_error_kind(err, BRIG_E_INPUT,
                            "`%s`: not an image archive (neither index.json nor manifest.json)",
                            archive);
    } else if (r == 0) {
        r = load_docker(im, docker, &config, err);
    }
    if (r == 0)
        r = read_config(im, config, err);
    if (r < 0)
        unpack_image_clear(im);
    return r;
}

void unpack_image_clear(struct unpack_image *im)
{
    for (size_t i = 0; i < im->n_layers; i++)
        free(im->layers[i].blob);
    free(im->layers);
    for (size_t i = 0; im->env && im->env[i]; i++)
        free(im->env[i]);
    free(im->env);
    free(im->user);
    free(im->workdir);
    *im = (struct unpack_image){ 0 };
}
