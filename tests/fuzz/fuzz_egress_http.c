#define _GNU_SOURCE
/* libFuzzer target: a request head as brig-egress reads it from a sandbox
 * (brig_egress_request_parse), the whole input as the bytes read so far,
 * not NUL-terminated. A complete head is judged against a small
 * allow-list (brig_egress_match), and must parse alike from its own
 * bytes alone: the proxy parses again as more bytes come. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "sandbox/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char allow_list[] = "allow deb.example\n"
                                 "allow *.registry.example\n"
                                 "allow mirror.example:8080\n"
                                 "allow-private 10.0.0.1:3142\n"
                                 "allow-private [fd00::1]:8000\n";

/* What a complete request must be, whatever the bytes around it. */
static void check_request(const struct brig_egress_request *r, size_t size)
{
    size_t host_len = strnlen(r->host, sizeof r->host);
    if (r->head_len < 4 || r->head_len > size || host_len == 0 || host_len > BRIG_EGRESS_HOST_MAX
        || r->port < 1 || r->port > 65535)
        __builtin_trap();
    if (r->kind == BRIG_EGRESS_HTTP
        && (r->origin == NULL || r->origin_len < 4
            || memcmp(r->origin + r->origin_len - 4, "\r\n\r\n", 4) != 0))
        __builtin_trap();
}

static void judge(const struct brig_egress_request *r)
{
    struct brig_egress_conf conf;
    brig_error_t err = NULL;
    if (brig_egress_conf_parse(allow_list, "egress.conf", &conf, &err) < 0) {
        brig_error_release(&err);
        return;
    }
    brig_egress_match(&conf, r->host, r->port, r->kind == BRIG_EGRESS_CONNECT);
    brig_egress_conf_free(&conf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brig_egress_request r, again;
    int status = 0;
    const char *reason = NULL;
    if (brig_egress_request_parse((const char *) data, size, &r, &status, &reason) <= 0)
        return 0;
    check_request(&r, size);
    judge(&r);
    if (brig_egress_request_parse((const char *) data, r.head_len, &again, &status, &reason) != 1
        || again.kind != r.kind || again.port != r.port || strcmp(again.host, r.host) != 0
        || again.origin_len != r.origin_len)
        __builtin_trap();
    brig_egress_request_clear(&again);
    brig_egress_request_clear(&r);
    return 0;
}
