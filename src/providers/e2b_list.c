/* e2b_list.c — listing E2B sandboxes by this process's labels (GET /v2/sandboxes with the
 * double-encoded metadata filter, X-Next-Token paging) and get_host (computed URL).
 * Threads: ops from any thread; completions on the reactor thread. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "providers/e2b_int.h"

/* ---- list (paged, filtered by this process's labels) -------------------------------------- */

struct list_op {
    struct e2b_op *op;
    struct prov_list *acc;
    char query[700];
};

static int list_page(struct list_op *lo, const char *token);

static void on_list_reply(const struct cloud_reply *rep, void *payload)
{
    struct list_op *lo = ((struct e2b_op *)payload)->ctx;
    struct prov_status st = {0};
    const char *next;
    json_t *j, *it;
    size_t i;

    if (rep->res->code < 0 || rep->res->status != 200) {
        cloud_status_from(&st, rep, lo->op->what);
        goto finish;
    }
    j = json_loadb(rep->body, rep->len, 0, NULL);
    if (!json_is_array(j)) {
        json_decref(j);
        cloud_status_set(&st, EVOLVE_EPROTO, "%s: reply is not an array", lo->op->what);
        goto finish;
    }
    json_array_foreach(j, i, it)
    {
        struct prov_box_info *items =
            realloc(lo->acc->items, (lo->acc->count + 1) * sizeof(*items));
        struct prov_box_info *bi;
        const char *id = json_string_value(json_object_get(it, "sandboxID"));
        const char *state = json_string_value(json_object_get(it, "state"));

        if (!items) {
            cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", lo->op->what);
            json_decref(j);
            goto finish;
        }
        lo->acc->items = items;
        if (!id)
            continue;
        bi = &items[lo->acc->count++];
        memset(bi, 0, sizeof(*bi));
        snprintf(bi->id, sizeof(bi->id), "%s", id);
        snprintf(bi->state, sizeof(bi->state), "%s", state ? state : "running");
        bi->created_ms = cloud_rfc3339_ms(json_string_value(json_object_get(it, "startedAt")));
    }
    json_decref(j);
    next = cloud_header(rep->res, "X-Next-Token");
    if (next && *next && list_page(lo, next) == 0)
        return;
finish:
    if (st.code < 0) {
        prov_list_free(lo->acc);
        lo->acc = NULL;
    }
    e2b_op_finish(lo->op, &st, lo->acc);
    free(lo);
}

static int list_page(struct list_op *lo, const char *token)
{
    char path[1200];
    char *enc = token ? curl_easy_escape(NULL, token, 0) : NULL;
    int rc;

    snprintf(path, sizeof(path), "/v2/sandboxes?state=running,paused&limit=100&metadata=%s%s%s",
             lo->query, enc ? "&nextToken=" : "", enc ? enc : "");
    curl_free(enc);
    rc = e2b_api_call(lo->op, "GET", path, NULL, on_list_reply, true);
    return rc;
}

int e2b_list(struct prov *pp, prov_done_cb done, void *payload)
{
    struct e2b_prov *p = (struct e2b_prov *)pp;
    struct list_op *lo = calloc(1, sizeof(*lo));
    const char *k[4], *v[4];
    size_t n = cloud_labels(k, v, 4), i, off = 0;
    char inner[600] = "";

    if (!lo || !(lo->acc = calloc(1, sizeof(*lo->acc))) ||
        !(lo->op = e2b_op_new(p, NULL, done, payload, 0, "e2b list"))) {
        if (lo)
            free(lo->acc);
        free(lo);
        return core_error_oom();
    }
    lo->op->ctx = lo;
    /* The metadata filter is a URL-encoded "k=v&k=v" whose keys and values were encoded first. */
    for (i = 0; i < n; i++) {
        char *ek = curl_easy_escape(NULL, k[i], 0), *evl = curl_easy_escape(NULL, v[i], 0);

        off += (size_t)snprintf(inner + off, sizeof(inner) - off, "%s%s=%s", i ? "&" : "",
                                ek ? ek : "", evl ? evl : "");
        curl_free(ek);
        curl_free(evl);
        if (off >= sizeof(inner))
            off = sizeof(inner) - 1;
    }
    {
        char *outer = curl_easy_escape(NULL, inner, 0);

        snprintf(lo->query, sizeof(lo->query), "%s", outer ? outer : "");
        curl_free(outer);
    }
    if (list_page(lo, NULL) < 0) {
        e2b_op_free(lo->op);
        free(lo->acc);
        free(lo);
        return EVOLVE_ERROR;
    }
    return 0;
}

/* ---- get_host: computed, answered on the reactor ------------------------------------------ */

struct host_job {
    struct e2b_op *op;
    char *url;
};

static void host_post(struct io_reactor *r, void *arg)
{
    struct host_job *j = arg;
    struct prov_status st = {0};

    (void)r;
    e2b_op_finish(j->op, &st, j->url);
    free(j);
}

int e2b_get_host(struct prov_box *box, unsigned int port, prov_done_cb done, void *payload)
{
    struct e2b_box *b = (struct e2b_box *)box;
    struct host_job *j;
    char url[300];
    int rc;

    if (!box || !done || port == 0 || port > 65535)
        return core_error_set(EVOLVE_EINVAL, "e2b get_host: bad port %u", port);
    j = calloc(1, sizeof(*j));
    snprintf(url, sizeof(url), "https://%u-%s.%s", port, box->id, b->sbx->domain);
    if (!j || !(j->url = strdup(url)) ||
        !(j->op = e2b_op_new((struct e2b_prov *)box->prov, NULL, done, payload, 0, ""))) {
        if (j)
            free(j->url);
        free(j);
        return core_error_oom();
    }
    rc = io_reactor_post(((struct e2b_prov *)box->prov)->r, host_post, j);
    if (rc < 0) {
        free(j->url);
        e2b_op_free(j->op);
        free(j);
        return core_error_set(rc, "e2b get_host: the reactor is shutting down");
    }
    return 0;
}
