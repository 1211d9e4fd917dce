#define _GNU_SOURCE
/* /v1/sandboxes/ID/files/PATH and /download: the workspace's files
 * through sandbox/files.h (uploads land whole or not at all) and
 * downloads through sandbox/download.h, all inside /mnt/data. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "base/cleanup.h"
#include "sandbox/download.h"
#include "sandbox/files.h"

void api_file_put_begin(struct api_request *r)
{
    r->uploading = true;
    if (r->file_dir) {
        brig_error_kind(&r->upload_err, BRIG_E_INPUT, "PUT wants a file's path, not a directory's");
        return;
    }
    brig_sandbox_upload_begin(r->parts[1], r->file, &r->upload, &r->upload_err);
}

static enum MHD_Result reply_path(struct MHD_Connection *c, unsigned status, const char *path,
                                  unsigned long long size)
{
    yajl_gen g = api_gen();
    if (g == NULL)
        return api_reply_error(c, 500, "out of memory");
    yajl_gen_map_open(g);
    api_gen_key(g, "path");
    api_gen_string(g, path);
    api_gen_key(g, "size");
    yajl_gen_integer(g, (long long) size);
    yajl_gen_map_close(g);
    return api_reply_gen(c, status, g);
}

enum MHD_Result api_file_put(struct MHD_Connection *c, struct api_request *r)
{
    if (r->upload_err == NULL)
        brig_sandbox_upload_commit(&r->upload, &r->upload_err);
    if (r->upload_err)
        return api_reply_brig_error(c, &r->upload_err);
    return reply_path(c, 201, r->upload.path, r->upload.size);
}

static void gen_entry(yajl_gen g, const struct brig_sandbox_file_entry *e)
{
    yajl_gen_map_open(g);
    api_gen_key(g, "name");
    api_gen_string(g, e->name);
    api_gen_key(g, "type");
    api_gen_string(g, brig_sandbox_file_type_name(e->type));
    api_gen_key(g, "size");
    yajl_gen_integer(g, (long long) e->size);
    api_gen_time(g, "mtime", e->mtime);
    yajl_gen_map_close(g);
}

static enum MHD_Result list_dir(struct MHD_Connection *c, struct api_request *r)
{
    struct brig_sandbox_file_entry *entries;
    size_t n;
    brig_error_t err = NULL;
    if (brig_sandbox_file_list(r->parts[1], r->file[0] ? r->file : ".", &entries, &n, &err) < 0)
        return api_reply_brig_error(c, &err);
    yajl_gen g = api_gen();
    if (g) {
        yajl_gen_map_open(g);
        api_gen_key(g, "entries");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < n; i++)
            gen_entry(g, &entries[i]);
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    }
    brig_sandbox_file_list_free(entries, n);
    return api_reply_gen(c, 200, g);
}

enum MHD_Result api_file_get(struct MHD_Connection *c, struct api_request *r)
{
    if (r->file_dir)
        return list_dir(c, r);
    uint64_t size;
    brig_error_t err = NULL;
    int fd = brig_sandbox_file_open(r->parts[1], r->file, &size, &err);
    if (fd < 0)
        return api_reply_brig_error(c, &err);
    /* libmicrohttpd takes the fd, and closes it once sent. */
    struct MHD_Response *resp = MHD_create_response_from_fd(size, fd);
    if (resp == NULL) {
        close(fd);
        return api_reply_error(c, 500, "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    enum MHD_Result res = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return res;
}

/* ---- download ---- */

enum MHD_Result api_download(struct MHD_Connection *c, struct api_request *r)
{
    static const char *const allowed[] = { "url", "path", NULL };
    yajl_val body = NULL;
    brig_error_t err = NULL;
    const char *url = NULL, *path = NULL;
    struct api_argv a = { 0 };
    cleanup_free char *said = NULL;
    int rc = api_body_object(r, allowed, &body, &err);
    if (rc == 0
        && (api_field_string(body, "url", &url, &err) <= 0
            || api_field_string(body, "path", &path, &err) <= 0))
        rc = err ? -1 : brig_error_kind(&err, BRIG_E_INPUT, "body: `url` and `path` are required");
    if (rc == 0
        && (api_argv_add(&a, "brig-api") | api_argv_add(&a, "--job") | api_argv_add(&a, "download")
            | api_argv_add(&a, "%s", r->parts[1]) | api_argv_add(&a, "%s", url)
            | api_argv_add(&a, "%s", path))
               != 0)
        rc = brig_error_set(&err, ENOMEM, "download");
    if (rc == 0)
        rc = api_job_run(&a, &said, &err);
    api_argv_free(&a);
    yajl_tree_free(body);
    if (rc < 0)
        return api_reply_brig_error(c, &err);
    char *space = said ? strchr(said, ' ') : NULL;
    return reply_path(c, 201, space ? space + 1 : "", said ? strtoull(said, NULL, 10) : 0);
}
