/* daytona_list.c — listing Daytona sandboxes by this process's labels (GET /sandbox with a
 * labels JSON filter, nextCursor paging) and get_host (GET .../ports/{port}/preview-url).
 * Threads: ops from any thread; completions on the reactor thread. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "providers/daytona_int.h"

/* ---- list (cursor paging, filtered by this process's labels) -----------------------------------
 */

static int list_page(struct dt_op *op, const char *cursor);

static void on_list(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_list *acc = op->ctx;
    struct prov_status st = {0};
    json_t *j = NULL, *items, *it;
    const char *next;
    size_t i;

    if (!dt_ok(rep)) {
        cloud_status_from(&st, rep, op->what);
        goto finish;
    }
    j = json_loadb(rep->body, rep->len, 0, NULL);
    items = json_object_get(j, "items");
    if (!json_is_array(items)) {
        cloud_status_set(&st, EVOLVE_EPROTO, "%s: reply has no items", op->what);
        goto finish;
    }
    json_array_foreach(items, i, it)
    {
        struct prov_box_info *n = realloc(acc->items, (acc->count + 1) * sizeof(*n)), *bi;
        const char *id = json_string_value(json_object_get(it, "id"));
        const char *state = json_string_value(json_object_get(it, "state"));

        if (!n) {
            cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", op->what);
            goto finish;
        }
        acc->items = n;
        if (!id)
            continue;
        bi = &n[acc->count++];
        memset(bi, 0, sizeof(*bi));
        snprintf(bi->id, sizeof(bi->id), "%s", id);
        snprintf(bi->state, sizeof(bi->state), "%s",
                 state && !strcmp(state, "started") ? "running"
                 : state                            ? state
                                                    : "unknown");
        bi->created_ms = cloud_rfc3339_ms(json_string_value(json_object_get(it, "createdAt")));
    }
    next = json_string_value(json_object_get(j, "nextCursor"));
    if (next && *next && list_page(op, next) == 0) {
        json_decref(j);
        return;
    }
finish:
    json_decref(j);
    if (st.code < 0) {
        prov_list_free(acc);
        acc = NULL;
    }
    dt_op_finish(op, &st, acc);
}

static int list_page(struct dt_op *op, const char *cursor)
{
    json_t *lb = dt_labels();
    char *lj = lb ? json_dumps(lb, JSON_COMPACT) : NULL;
    char *enc = lj ? curl_easy_escape(NULL, lj, 0) : NULL;
    char *ec = cursor ? curl_easy_escape(NULL, cursor, 0) : NULL;
    char path[1200];
    int rc;

    json_decref(lb);
    free(lj);
    if (!enc) {
        curl_free(ec);
        return core_error_oom();
    }
    snprintf(path, sizeof(path), "/sandbox?limit=200&labels=%s%s%s", enc, ec ? "&cursor=" : "",
             ec ? ec : "");
    curl_free(enc);
    curl_free(ec);
    rc = dt_api(op, "GET", path, NULL, true, on_list);
    return rc;
}

int dt_list(struct prov *pp, prov_done_cb done, void *payload)
{
    struct dt_op *op = dt_op_new((struct dt_prov *)pp, NULL, done, payload, 0, "daytona list");
    int rc;

    if (!op)
        return EVOLVE_ENOMEM;
    op->ctx = calloc(1, sizeof(struct prov_list));
    if (!op->ctx) {
        dt_op_free(op);
        return core_error_oom();
    }
    rc = list_page(op, NULL);
    if (rc < 0) {
        free(op->ctx);
        dt_op_free(op);
    }
    return rc;
}

/* ---- get_host: the preview-url endpoint ------------------------------------------------------ */

static void on_preview(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_status st = {0};
    char *url = NULL;
    json_t *j;

    if (!dt_ok(rep)) {
        cloud_status_from(&st, rep, op->what);
    } else {
        j = json_loadb(rep->body, rep->len, 0, NULL);
        if (json_string_value(json_object_get(j, "url")))
            url = strdup(json_string_value(json_object_get(j, "url")));
        if (!url)
            cloud_status_set(&st, EVOLVE_EPROTO, "%s: reply has no url", op->what);
        json_decref(j);
    }
    dt_op_finish(op, &st, url);
}

int dt_get_host(struct prov_box *box, unsigned int port, prov_done_cb done, void *payload)
{
    char suffix[64];
    struct dt_op *op;
    char path[200], what[128];
    int rc;

    if (!box || !done || port == 0 || port > 65535)
        return core_error_set(EVOLVE_EINVAL, "daytona get_host: bad port %u", port);
    snprintf(suffix, sizeof(suffix), "/ports/%u/preview-url", port);
    snprintf(what, sizeof(what), "daytona preview-url %u of %s", port, box->id);
    op = dt_op_new((struct dt_prov *)box->prov, NULL, done, payload, 0, what);
    if (!op)
        return EVOLVE_ENOMEM;
    snprintf(path, sizeof(path), "/sandbox/%s%s", box->id, suffix);
    rc = dt_api(op, "GET", path, NULL, true, on_preview);
    if (rc < 0)
        dt_op_free(op);
    return rc;
}
