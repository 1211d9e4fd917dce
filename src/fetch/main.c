/* brig-fetch [--max-size BYTES] [--timeout-ms MS] [--] URL
 *
 * The network side of `brig sandbox download` (sandbox/download.h,
 * fetch.h): URL's body on stdout, following up to five redirects, each
 * hop's host checked against egress.conf's `allow` and `download` rules
 * ($BRIG_EGRESS_CONFIG, else /etc/brig/egress.conf; without the file,
 * the host's package sources) and every address it connects to against
 * brig-egress's. A failure is one line on stderr and an exit status that
 * says its kind (sandbox/download.h: BRIG_FETCH_EXIT_*). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fetch.h"
#include "sandbox/download.h"
#include "sandbox/egress_sources.h"

struct options {
    uint64_t max_size; /* 0: egress.conf's */
    long timeout_ms;
    const char *url;
};

static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option opts[] = {
        { "max-size", required_argument, NULL, 'm' },
        { "timeout-ms", required_argument, NULL, 't' },
        { 0 },
    };
    *o = (struct options){ 0, BRIG_SANDBOX_DOWNLOAD_TIMEOUT_MS, NULL };
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        errno = 0;
        if (c == 'm')
            o->max_size = strtoull(optarg, &end, 10);
        else if (c == 't')
            o->timeout_ms = strtol(optarg, &end, 10);
        else
            return -1;
        if (errno || end == optarg || *end || optarg[0] == '-' || (c == 't' && o->timeout_ms < 1))
            return -1;
    }
    if (optind != argc - 1)
        return -1;
    o->url = argv[optind];
    return 0;
}

/* "1G", "512M", "64K" or "N bytes", as the cap was likely written. */
static void show_size(uint64_t n, char *buf, size_t size)
{
    static const char units[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        unsigned shift = (unsigned) (40 - 10 * i);
        if (n >= (UINT64_C(1) << shift) && n % (UINT64_C(1) << shift) == 0) {
            snprintf(buf, size, "%" PRIu64 "%c", n >> shift, units[i]);
            return;
        }
    }
    snprintf(buf, size, "%" PRIu64 "-byte", n);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A failed transfer in one line; the exit status. */
static int transfer_failed(struct fetch *f, CURLcode rc, const char *url, char *why, size_t size)
{
    char cap[32];
    if (f->too_big) {
        show_size(f->max_size, cap, sizeof cap);
        snprintf(why, size, "%s: larger than the %s cap", url, cap);
        return BRIG_FETCH_EXIT_TOO_BIG;
    }
    if (rc == CURLE_WRITE_ERROR && f->write_errno) {
        snprintf(why, size, "%s: writing: %s", url, strerror(f->write_errno));
        if (f->write_errno == ENOSPC || f->write_errno == EDQUOT)
            return BRIG_FETCH_EXIT_FULL;
    } else if (rc == CURLE_COULDNT_CONNECT && f->refused[0]) {
        snprintf(why, size, "%s", f->refused);
        return BRIG_FETCH_EXIT_REFUSED;
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(why, size, "%s: timed out (%s)", url, f->errbuf[0] ? f->errbuf : "no answer");
    } else {
        snprintf(why, size, "%s: %s", url, f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc));
    }
    return BRIG_FETCH_EXIT_FAILED;
}

#define HOP_REDIRECT (-1)

/* One hop: 0 when the body is written, HOP_REDIRECT when *next is where
 * it redirects, else the exit status with why filled. */
static int hop(struct fetch *f, const char *url, int64_t deadline, char **next, char *why,
               size_t size)
{
    if (fetch_allow(f, url, why, size) < 0)
        return BRIG_FETCH_EXIT_REFUSED;
    int64_t left = deadline - now_ms();
    f->refused[0] = f->errbuf[0] = '\0';
    f->status = 0;
    if (left <= 0 || curl_easy_setopt(f->curl, CURLOPT_TIMEOUT_MS, (long) left) != CURLE_OK
        || curl_easy_setopt(f->curl, CURLOPT_URL, url) != CURLE_OK) {
        snprintf(why, size, "%s: %s", url, left <= 0 ? "timed out" : "out of memory");
        return BRIG_FETCH_EXIT_FAILED;
    }
    CURLcode rc = curl_easy_perform(f->curl);
    if (rc != CURLE_OK)
        return transfer_failed(f, rc, url, why, size);
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &f->status);
    if (f->status >= 200 && f->status <= 299)
        return 0;
    char *location = NULL;
    if (f->status >= 300 && f->status <= 399
        && curl_easy_getinfo(f->curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) {
        *next = strdup(location);
        return HOP_REDIRECT;
    }
    snprintf(why, size, "%s: HTTP %ld", url, f->status);
    return BRIG_FETCH_EXIT_FAILED;
}

/* The URL and its redirects, hop by hop; the exit status. */
static int fetch(struct fetch *f, const char *first, long timeout_ms, char *why, size_t size)
{
    int64_t deadline = now_ms() + timeout_ms;
    cleanup_free char *url = strdup(first);
    for (int redirects = 0; url; redirects++) {
        char *next = NULL;
        int r = hop(f, url, deadline, &next, why, size);
        if (r != HOP_REDIRECT)
            return r;
        if (redirects == BRIG_SANDBOX_DOWNLOAD_MAX_REDIRECTS) {
            free(next);
            snprintf(why, size, "%s: more than %d redirects", first,
                     BRIG_SANDBOX_DOWNLOAD_MAX_REDIRECTS);
            return BRIG_FETCH_EXIT_FAILED;
        }
        free(url);
        url = next;
    }
    snprintf(why, size, "%s: out of memory", first);
    return BRIG_FETCH_EXIT_FAILED;
}

/* What is written is on the disk, or the disk's error said. */
static int flush_out(const char *url, char *why, size_t size)
{
    if (fsync(STDOUT_FILENO) == 0 || errno == EINVAL || errno == EROFS)
        return 0;
    int saved = errno;
    snprintf(why, size, "%s: writing: %s", url, strerror(saved));
    return saved == ENOSPC || saved == EDQUOT ? BRIG_FETCH_EXIT_FULL : BRIG_FETCH_EXIT_FAILED;
}

static int load(struct fetch *f, const struct options *o, char *why, size_t size)
{
    brig_error_t err = NULL;
    f->conf_path = brig_egress_conf_path();
    if (brig_egress_load_conf(f->conf_path, &f->conf, &f->from_sources, &err) < 0) {
        snprintf(why, size, "%s", err->msg);
        brig_error_release(&err);
        return -1;
    }
    brig_egress_local_nets(&f->local, &f->n_local);
    f->max_size = o->max_size ? o->max_size : f->conf.download_max_size;
    f->curl = curl_easy_init();
    if (f->curl == NULL || fetch_setup(f) < 0) {
        snprintf(why, size, "libcurl: cannot set up a transfer");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse_args(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: brig-fetch [--max-size BYTES] [--timeout-ms MS] [--] URL\n");
        return BRIG_FETCH_EXIT_USAGE;
    }
    /* A backstop past curl's own timeouts (a name lookup that hangs). */
    alarm((unsigned) (o.timeout_ms / 1000 + 60));
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "libcurl: cannot start\n");
        return BRIG_FETCH_EXIT_FAILED;
    }
    static struct fetch f;
    char why[FETCH_WHY_MAX] = "";
    int r = load(&f, &o, why, sizeof why) < 0 ? BRIG_FETCH_EXIT_FAILED
                                              : fetch(&f, o.url, o.timeout_ms, why, sizeof why);
    if (r == 0)
        r = flush_out(o.url, why, sizeof why);
    if (r != 0)
        fprintf(stderr, "%s\n", why);
    if (f.curl)
        curl_easy_cleanup(f.curl);
    brig_egress_conf_free(&f.conf);
    free(f.local);
    curl_global_cleanup();
    return r;
}
