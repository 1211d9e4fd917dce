/* User lookup without NSS: brig-init is static, so it reads the sandbox's
 * /etc/passwd and /etc/group itself. */
#ifndef BRIG_INIT_USERS_H
#define BRIG_INIT_USERS_H

#include <stddef.h>
#include <sys/types.h>

#define INIT_MAX_GROUPS 64

struct init_user {
    uid_t uid;
    gid_t gid;
    char name[64]; /* empty when the uid has no passwd entry */
    char home[256];
    gid_t groups[INIT_MAX_GROUPS]; /* supplementary, from the group file */
    size_t n_groups;
};

/* SPEC is a user name or a numeric uid; a uid without a passwd entry gets
 * gid = uid and home "/". -1 with a message in ERR when not found. */
int init_user_lookup(const char *spec, const char *passwd_path, const char *group_path,
                     struct init_user *out, char *err, size_t errlen);

#endif
