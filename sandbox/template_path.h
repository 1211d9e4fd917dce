/* The rules that keep an image's entries inside the tree they are
 * unpacked into (template.h), as pure functions over names: the
 * unpacker (brig-unpack) applies them to every entry of every layer
 * before it touches the disk, and walks the parents it opens without
 * following a symlink (its own part of the rule). */
#ifndef BRIG_SANDBOX_TEMPLATE_PATH_H
#define BRIG_SANDBOX_TEMPLATE_PATH_H

#include <stdbool.h>

#include "base/error.h"

/* Longest entry name or link target taken from an image. */
#define BRIG_TEMPLATE_NAME_MAX 4095

/* An entry's name made relative to the image's root: leading `/` and
 * `./`, `.` components and doubled slashes dropped; "" is the root
 * itself. A `..` component, or a name past BRIG_TEMPLATE_NAME_MAX, is
 * BRIG_E_INPUT, the message naming the entry; -1 with ENOMEM too. */
int brig_template_entry_path(const char *name, char **out, brig_error_t *err);

/* Whether a symlink at `path` (an entry path as above) pointing at
 * `target` stays in the image: an absolute target does (the sandbox
 * resolves it in its own root at run time), a relative one must not
 * climb above the root from the link's dir, counted lexically. An empty
 * target does not. */
bool brig_template_link_inside(const char *path, const char *target);

enum brig_whiteout {
    BRIG_WHITEOUT_NONE,
    BRIG_WHITEOUT_FILE,   /* `.wh.NAME`: NAME of the layers below goes */
    BRIG_WHITEOUT_OPAQUE, /* `.wh..wh..opq`: the dir hides what is below */
};

/* What a base name (the last component of an entry path) says. For
 * BRIG_WHITEOUT_FILE, *victim points at NAME in `base`; a whiteout of
 * nothing, `.` or `..` is BRIG_WHITEOUT_NONE with *victim NULL, and
 * bad: the caller refuses it. */
enum brig_whiteout brig_template_whiteout(const char *base, const char **victim, bool *bad);

#endif
