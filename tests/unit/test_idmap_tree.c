/* The layers of an overlay, read from its mountinfo super options
 * (rootfs/idmap_tree.h): the upper one first, then the lower ones in
 * order, in both the `lowerdir=a:b` and the `lowerdir+=` forms. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "rootfs/idmap_tree.h"
#include "unit.h"

static char *joined(char **v, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(v[i]) + 1;
    char *out = calloc(1, len);
    for (size_t i = 0; out && i < n; i++) {
        if (i)
            strcat(out, " ");
        strcat(out, v[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return out;
}

/* The layers as one space-separated string; NULL on an error. */
static char *layers(const char *options)
{
    char **v = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    if (brig_overlay_layers(options, &v, &n, &err) < 0) {
        brig_error_release(&err);
        return NULL;
    }
    return joined(v, n);
}

static void check_layers(const char *options, const char *want, const char *what)
{
    char *got = layers(options);
    CHECK(got && strcmp(got, want) == 0, what);
    free(got);
}

int main(void)
{
    check_layers("rw,lowerdir=/s/2/fs:/s/1/fs,upperdir=/s/3/fs,workdir=/s/3/work",
                 "/s/3/fs /s/2/fs /s/1/fs",
                 "containerd's overlay: upper first, then the lower ones");
    check_layers("rw,upperdir=/u,lowerdir+=/a,lowerdir+=/b,workdir=/w", "/u /a /b",
                 "the lowerdir+= form, in order");
    check_layers("ro,lowerdir=/a:/b", "/a /b", "no upper layer: the lower ones alone");
    check_layers("rw,lowerdir=/x\\:y:/b,upperdir=/u\\,v,workdir=/w", "/u,v /x:y /b",
                 "escaped colons and commas stay in their paths");
    check_layers("rw,xino=off", "", "no layer at all: none");
    char *rel = layers("rw,lowerdir=12/fs:/b,upperdir=/u");
    CHECK(rel == NULL, "a relative layer (a mounter's chdir) is refused");
    free(rel);
    return unit_done();
}
