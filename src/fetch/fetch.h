/* brig-fetch: one URL fetched for `brig sandbox download` (sandbox/
 * download.h), its body written to stdout. The policy is its own, with
 * the sandbox layer's pure rules (egress.h): a hop's host on the
 * allow-list (hop.c), every address it connects to public unless the
 * rule says private (at connect time: a name that resolves anew can't
 * slip past), redirects followed here, hop by hop, each checked the same
 * way (main.c). */
#ifndef BRIG_FETCH_H
#define BRIG_FETCH_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "sandbox/egress.h"

#define FETCH_WHY_MAX 768

struct fetch {
    CURL *curl;
    struct brig_egress_conf conf;
    const char *conf_path;
    bool from_sources; /* no egress.conf: the host's package sources */
    bool npm_asked;
    struct brig_egress_net *local;
    size_t n_local;
    uint64_t max_size, written;
    /* The hop under way. */
    char host[BRIG_EGRESS_HOST_MAX + 1];
    bool private_ok;
    long status;
    /* What stopped the transfer from our side. */
    bool too_big;
    int write_errno;
    char refused[FETCH_WHY_MAX];
    char errbuf[CURL_ERROR_SIZE];
};

/* hop.c: `url` checked against the allow-list, its host and rule made
 * the hop's; -1 with why (a line) when it is refused. */
int fetch_allow(struct fetch *f, const char *url, char *why, size_t size);

/* hop.c: the handle's options and callbacks, set once. */
int fetch_setup(struct fetch *f);

#endif
