#define _GNU_SOURCE
/* libFuzzer target: the egress allow-list. The input up to its first NUL
 * is an egress.conf (brig_egress_conf_parse) and, as the host's package
 * sources would be, apt's, npm's and pip's text at once
 * (brig_egress_conf_from_sources); what follows the NUL is a request's
 * `HOST:PORT`, matched against both lists as the proxy and `sandbox
 * download` would (brig_egress_match, brig_egress_download_match), and
 * added to the first when it is a URL (brig_egress_conf_add_url). A rule
 * that lets a request through must be for its port. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "sandbox/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* `host:port` of the request, split at its last `:`; no port is 443. */
static void split_request(char *request, int *port)
{
    char *colon = strrchr(request, ':');
    *port = 443;
    if (colon == NULL)
        return;
    *colon = '\0';
    long p = strtol(colon + 1, NULL, 10);
    *port = p >= 0 && p <= 65535 ? (int) p : 0;
}

static void check_rule(const struct brig_egress_rule *r, int port, bool connect)
{
    if (r && (r->port ? r->port : (connect ? 443 : 80)) != port)
        __builtin_trap();
}

static void match_all(const struct brig_egress_conf *c, const char *host, int port)
{
    for (int connect = 0; connect < 2; connect++) {
        check_rule(brig_egress_match(c, host, port, connect), port, connect);
        check_rule(brig_egress_download_match(c, host, port, connect), port, connect);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *) data, size);
    if (text == NULL)
        return 0;
    size_t text_len = strlen(text);
    char *request = text_len < size
                        ? strndup((const char *) data + text_len + 1, size - text_len - 1)
                        : NULL;
    struct brig_egress_conf conf, sources;
    brig_error_t err = NULL;
    bool parsed = brig_egress_conf_parse(text, "egress.conf", &conf, &err) == 0;
    if (!parsed)
        brig_error_release(&err);
    const char *apt[] = { text };
    bool listed = brig_egress_conf_from_sources(apt, 1, text, text, &sources, &err) == 0;
    if (!listed)
        brig_error_release(&err);
    if (request && parsed && strstr(request, "://"))
        brig_egress_conf_add_url(&conf, request);
    if (request) {
        int port;
        split_request(request, &port);
        if (parsed)
            match_all(&conf, request, port);
        if (listed)
            match_all(&sources, request, port);
    }
    if (parsed)
        brig_egress_conf_free(&conf);
    if (listed)
        brig_egress_conf_free(&sources);
    free(request);
    free(text);
    return 0;
}
