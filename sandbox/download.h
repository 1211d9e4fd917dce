/* `brig sandbox download` (and the API's download): a URL fetched on the
 * host's side into a sandbox's /mnt/data, owned by the sandbox user,
 * whole or not at all.
 *
 * The network part is brig-fetch's (src/fetch/, man brig-sandbox): a
 * small program linked with libcurl, which brig's static binary can't
 * carry. It applies the policy itself, with egress.h's pure functions:
 * the host of every URL, redirects included, on egress.conf's `allow` or
 * `download` rules (or the host's package sources, without the file);
 * every address it connects to public unless the rule says
 * allow-private; a size cap; timeouts. It writes the body to its stdout,
 * an unnamed file in the data tree that this side opened
 * (transfer.h), so brig-fetch never opens a path of the sandbox and a
 * download that fails leaves nothing behind. */
#ifndef BRIG_SANDBOX_DOWNLOAD_H
#define BRIG_SANDBOX_DOWNLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

#define BRIG_SANDBOX_DOWNLOAD_TIMEOUT_MS (10 * 60 * 1000)
#define BRIG_SANDBOX_DOWNLOAD_CONNECT_TIMEOUT_MS (10 * 1000)
#define BRIG_SANDBOX_DOWNLOAD_MAX_REDIRECTS 5

/* brig-fetch's exit statuses; but for USAGE, one line on its stderr says
 * why. */
#define BRIG_FETCH_EXIT_FAILED 1  /* the URL could not be fetched */
#define BRIG_FETCH_EXIT_USAGE 2   /* bad arguments */
#define BRIG_FETCH_EXIT_FULL 3    /* its stdout's file system is full */
#define BRIG_FETCH_EXIT_TOO_BIG 4 /* past the size cap */
#define BRIG_FETCH_EXIT_REFUSED 5 /* a host or an address the rules refuse */

struct brig_sandbox_download_options {
    uint64_t max_size; /* bytes; 0: egress.conf's download-max-size (1G) */
    int timeout_ms;    /* the whole download; 0: BRIG_SANDBOX_DOWNLOAD_TIMEOUT_MS */
};

/* Whether `url` is one brig downloads: http:// or https://. Pure. */
bool brig_sandbox_download_scheme_ok(const char *url);

/* The file name a URL gives, as `curl -O` takes it: the last component
 * of its path, without query or fragment; NULL in *name when it has none
 * (a path that ends in `/`, `.` or `..`). Pure; -1 only on ENOMEM. */
int brig_sandbox_download_name(const char *url, char **name);

/* `url` fetched into the sandbox `id` at `path` (inside /mnt/data: as
 * brig_sandbox_data_relpath takes it, without `..`; a directory, or a
 * path ending in `/`, receives the URL's file name). *final_path is the
 * file as the sandbox sees it (/mnt/data/...), *bytes its size. Errors
 * read "sandbox download: ..."; their errnum tells the ones a caller may
 * answer apart: EACCES a host or address refused, EFBIG past the cap,
 * ENOSPC /mnt/data full (no strerror follows the message for these). */
int brig_sandbox_download(const char *id, const char *url, const char *path,
                          const struct brig_sandbox_download_options *o, char **final_path,
                          uint64_t *bytes, brig_error_t *err);

#endif
