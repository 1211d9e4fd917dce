#define _GNU_SOURCE
/* libFuzzer target: what `sandbox template import` takes from an image
 * archive. The input is files cut at each NUL. brig-unpack's image loader
 * (unpack_image_load) reads them as the archive's: the first is
 * manifest.json when it opens with `[` (a docker-archive), else index.json
 * (OCI), and each blob or config it asks for next is the next file; the
 * archive itself is this file's unpack_read_file, which blob.c would be.
 * Every file is then a layer's entry name (brig_template_entry_path), its
 * base name a whiteout or not (brig_template_whiteout), and the next file
 * a symlink's target from it (brig_template_link_inside): a clean path
 * never has a `..` to climb with. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "sandbox/template_path.h"
#include "src/unpack/unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILES_MAX 16

static struct {
    const char *file[FILES_MAX];
    size_t len[FILES_MAX], n, next;
} archive;

/* The sha256 a name says its file has: a blob's, or a docker config's
 * (HEX.json). The fuzzer can't forge a hash, so each file is taken to
 * have the one its name asks for; the check itself is a strcmp. */
static void claimed_hex(const char *name, char hex[65])
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    memset(hex, '0', 64);
    hex[64] = '\0';
    if (strlen(base) >= 64)
        memcpy(hex, base, 64);
}

int unpack_read_file(const char *path, const char *name, size_t max, char **data, size_t *len,
                     char hex[65], brig_error_t *err)
{
    size_t i;
    *data = NULL;
    if (strcmp(name, "manifest.json") == 0 || strcmp(name, "index.json") == 0) {
        bool docker = archive.n > 0 && archive.file[0][strspn(archive.file[0], " \t\r\n")] == '[';
        if (archive.n == 0 || docker != (strcmp(name, "manifest.json") == 0))
            return brig_error_kind(err, ENOENT, "`%s`: no file `%s` in the archive", path, name);
        i = 0;
    } else if (archive.next < archive.n) {
        i = archive.next++;
    } else {
        return brig_error_kind(err, ENOENT, "`%s`: no file `%s` in the archive", path, name);
    }
    if (archive.len[i] > max)
        return brig_error_kind(err, BRIG_E_INPUT, "`%s`: larger than %zu bytes", name, max);
    if ((*data = strndup(archive.file[i], archive.len[i])) == NULL)
        return brig_error_set(err, ENOMEM, "`%s`", name);
    *len = archive.len[i];
    claimed_hex(name, hex);
    return 0;
}

static void check_entry(const char *name, const char *target)
{
    char *path = NULL;
    brig_error_t err = NULL;
    if (brig_template_entry_path(name, &path, &err) < 0) {
        brig_error_release(&err);
        return;
    }
    for (const char *p = path; *p; p += strcspn(p, "/"), p += *p == '/')
        if (strncmp(p, "..", 2) == 0 && (p[2] == '/' || p[2] == '\0'))
            __builtin_trap();
    if (path[0] == '/' || strstr(path, "//"))
        __builtin_trap();
    const char *base = strrchr(path, '/');
    const char *victim;
    bool bad;
    if (brig_template_whiteout(base ? base + 1 : path, &victim, &bad) == BRIG_WHITEOUT_FILE
        && (victim == NULL || strchr(victim, '/') || strcmp(victim, "..") == 0))
        __builtin_trap();
    brig_template_link_inside(path, target);
    free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    archive.n = archive.next = 0;
    for (size_t at = 0; at <= size && archive.n < FILES_MAX;) {
        size_t len = strlen(copy + at);
        archive.file[archive.n] = copy + at;
        archive.len[archive.n++] = len;
        at += len + 1;
    }
    archive.next = 1;
    struct unpack_image im;
    brig_error_t err = NULL;
    if (unpack_image_load("image.tar", &im, &err) < 0)
        brig_error_release(&err);
    else
        unpack_image_clear(&im);
    for (size_t i = 0; i < archive.n; i++)
        check_entry(archive.file[i], i + 1 < archive.n ? archive.file[i + 1] : "");
    free(copy);
    return 0;
}
