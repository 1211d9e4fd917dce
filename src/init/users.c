#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "users.h"

/* Splits a colon-separated line in place; returns the number of fields. */
static size_t split_fields(char *line, char **fields, size_t max)
{
    size_t n = 0;
    line[strcspn(line, "\n")] = '\0';
    while (n < max) {
        fields[n++] = line;
        char *colon = strchr(line, ':');
        if (!colon)
            break;
        *colon = '\0';
        line = colon + 1;
    }
    return n;
}

static int parse_id(const char *s, unsigned long *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long n = strtoul(s, &end, 10);
    if (errno || *end || n >= (unsigned long) (uid_t) -1)
        return -1;
    *out = n;
    return 0;
}

static int find_passwd(const char *spec, int numeric, unsigned long id, const char *path,
                       struct init_user *out)
{
    cleanup_file FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        char *fld[7];
        unsigned long uid, gid;
        if (split_fields(line, fld, 7) != 7 || parse_id(fld[2], &uid) < 0
            || parse_id(fld[3], &gid) < 0)
            continue;
        if (numeric ? uid != id : strcmp(fld[0], spec) != 0)
            continue;
        out->uid = uid;
        out->gid = gid;
        snprintf(out->name, sizeof out->name, "%s", fld[0]);
        snprintf(out->home, sizeof out->home, "%s", *fld[5] ? fld[5] : "/");
        found = 1;
    }
    free(line);
    return found ? 0 : -1;
}

static void find_groups(const char *path, struct init_user *out)
{
    cleanup_file FILE *f = fopen(path, "re");
    if (!f || !out->name[0])
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && out->n_groups < INIT_MAX_GROUPS) {
        char *fld[4];
        unsigned long gid;
        if (split_fields(line, fld, 4) != 4 || parse_id(fld[2], &gid) < 0 || gid == out->gid)
            continue;
        char *save = NULL;
        for (char *m = strtok_r(fld[3], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            if (strcmp(m, out->name) == 0) {
                out->groups[out->n_groups++] = gid;
                break;
            }
        }
    }
    free(line);
}

int init_user_lookup(const char *spec, const char *passwd_path, const char *group_path,
                     struct init_user *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    unsigned long id = 0;
    int numeric = parse_id(spec, &id) == 0;
    if (find_passwd(spec, numeric, id, passwd_path, out) < 0) {
        if (!numeric) {
            snprintf(err, errlen, "user `%s` not found in %s", spec, passwd_path);
            return -1;
        }
        out->uid = out->gid = id;
        snprintf(out->home, sizeof out->home, "/");
    }
    find_groups(group_path, out);
    return 0;
}
