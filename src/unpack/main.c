/* brig-unpack [--into DIR --expect HEX] IMAGE
 *
 * The archive side of `brig sandbox template import` (sandbox/
 * template.h, unpack.h). Without --into it reads IMAGE's manifest and
 * config, checked against their digests, and says what they hold on
 * stdout, one `key=value` a line:
 *
 *   config=HEX     the sha256 of the image's config (its id)
 *   format=oci|docker-archive
 *   layers=N
 *   user=USER      the config's User, WorkingDir and each Env entry
 *   workdir=DIR
 *   env=NAME=VALUE
 *
 * With --into it also applies the layers to DIR (an empty dir), every
 * blob and uncompressed layer checked, when the config is still HEX (the
 * file could have changed since the first look), and adds `size=BYTES`
 * (of the regular files written). A failure is one line on stderr and
 * exit status 1; bad arguments 2. What it wrote into DIR is then the
 * caller's to remove. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "unpack.h"

struct options {
    const char *into, *expect, *image;
};

static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option opts[] = {
        { "into", required_argument, NULL, 'i' },
        { "expect", required_argument, NULL, 'e' },
        { 0 },
    };
    *o = (struct options){ 0 };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'i')
            o->into = optarg;
        else if (c == 'e')
            o->expect = optarg;
        else
            return -1;
    }
    if (optind != argc - 1 || (o->into == NULL) != (o->expect == NULL))
        return -1;
    o->image = argv[optind];
    return 0;
}

static void print_summary(const struct unpack_image *im)
{
    printf("config=%s\nformat=%s\nlayers=%zu\nuser=%s\nworkdir=%s\n", im->config_hex,
           im->oci ? "oci" : "docker-archive", im->n_layers, im->user, im->workdir);
    for (size_t i = 0; im->env[i]; i++)
        printf("env=%s\n", im->env[i]);
}

static int unpack_into(const struct unpack_image *im, const struct options *o, uint64_t *size,
                       brig_error_t *err)
{
    if (strcmp(im->config_hex, o->expect) != 0)
        return brig_error_kind(err, BRIG_E_INPUT,
                               "`%s` changed while it was imported (its config is now sha256:%s)",
                               o->image, im->config_hex);
    cleanup_close int root = open(o->into, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return brig_error_set(err, errno, "`%s`", o->into);
    return unpack_layers(im, root, size, err);
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse_args(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: brig-unpack [--into DIR --expect HEX] IMAGE\n");
        return 2;
    }
    /* Modes exactly as the archive says: nothing masked off. */
    umask(0);
    brig_error_t err = NULL;
    struct unpack_image im;
    uint64_t size = 0;
    int r = unpack_image_load(o.image, &im, &err);
    if (r == 0 && o.into && unpack_into(&im, &o, &size, &err) < 0) {
        unpack_image_clear(&im);
        r = -1;
    }
    if (r < 0) {
        fprintf(stderr, "%s\n", err->msg);
        brig_error_release(&err);
        return 1;
    }
    print_summary(&im);
    if (o.into)
        printf("size=%" PRIu64 "\n", size);
    unpack_image_clear(&im);
    return fflush(stdout) == 0 ? 0 : 1;
}
