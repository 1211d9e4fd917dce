/* /proc/self/mountinfo lines (rootfs/mountinfo.h). Pure. */
#define _GNU_SOURCE
#include "rootfs/mountinfo.h"

#include <stddef.h>
#include <string.h>

static void unescape_octal(char *s)
{
    char *out = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0'
            && s[3] <= '7') {
            *out++ = (char) ((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
            s += 3;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

/* Fields 0-5 are fixed (id, parent, dev, root, mount point, options), then
 * optional fields up to "-", then type, source and superblock options. */
bool brig_mountinfo_parse_line(char *line, struct brig_mountinfo *e)
{
    char *save = NULL;
    int after_dash = -1;
    *e = (struct brig_mountinfo){ .super_options = "" };
    int i = 0;
    for (char *tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), i++) {
        if (i == 3) {
            e->root = tok;
        } else if (i == 4) {
            e->mountpoint = tok;
        } else if (i >= 6 && after_dash < 0) {
            if (strcmp(tok, "-") == 0)
                after_dash = 0;
            else if (strncmp(tok, "shared:", 7) == 0)
                e->shared = true;
        } else if (after_dash >= 0) {
            /* type, source, superblock options */
            if (after_dash == 0)
                e->fstype = tok;
            else if (after_dash == 2)
                e->super_options = tok;
            if (++after_dash > 2)
                break;
        }
    }
    if (e->root == NULL || e->mountpoint == NULL || e->fstype == NULL)
        return false;
    unescape_octal(e->root);
    unescape_octal(e->mountpoint);
    return true;
}

bool brig_path_is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}
