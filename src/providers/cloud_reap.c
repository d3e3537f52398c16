/* cloud_reap.c — reaping orphaned cloud sandboxes: list this process's labelled sandboxes
 * (same owner, same batch) and kill those created more than an age ago, by id.
 * Threads: prov_cloud_reap from any thread; its steps run on the provider's completion thread
 * (the reactor). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "providers/cloud.h"
#include "providers/daytona.h"
#include "providers/e2b.h"

struct reap {
    struct prov *p;
    prov_done_cb done;
    void *payload;
    long long cutoff_ms; /* wall clock: created before this goes */
    size_t pending, killed;
    struct prov_status st;
};

static void reap_finish(struct reap *r)
{
    size_t *n = malloc(sizeof(*n));

    if (!n && r->st.code == 0)
        cloud_status_set(&r->st, EVOLVE_ENOMEM, "reap: out of memory");
    if (n)
        *n = r->killed;
    r->done(r->payload, &r->st, r->st.code < 0 ? NULL : n);
    if (r->st.code < 0)
        free(n);
    free(r);
}

static void on_killed(void *payload, const struct prov_status *st, void *result)
{
    struct reap *r = payload;

    (void)result;
    if (st->code < 0 && r->st.code == 0)
        r->st = *st;
    else if (st->code == 0)
        r->killed++;
    if (--r->pending == 0)
        reap_finish(r);
}

static void on_listed(void *payload, const struct prov_status *st, void *result)
{
    struct reap *r = payload;
    struct prov_list *l = result;
    size_t i;

    if (st->code < 0) {
        r->st = *st;
        reap_finish(r);
        return;
    }
    r->pending = 1; /* held until every kill has been started */
    for (i = 0; i < l->count; i++) {
        int rc;

        if (l->items[i].created_ms <= 0 || l->items[i].created_ms >= r->cutoff_ms)
            continue;
        r->pending++;
        rc = !strcmp(r->p->ops->name, "e2b")
                 ? prov_e2b_kill_id(r->p, l->items[i].id, on_killed, r)
                 : prov_daytona_kill_id(r->p, l->items[i].id, on_killed, r);
        if (rc < 0) {
            r->pending--;
            if (r->st.code == 0)
                cloud_status_set(&r->st, rc, "reap: %s", evolve_error_last()->message);
        }
    }
    prov_list_free(l);
    if (--r->pending == 0)
        reap_finish(r);
}

int prov_cloud_reap(struct prov *p, uint64_t older_than_ms, prov_done_cb done, void *payload)
{
    struct reap *r;
    struct timespec ts;
    int rc;

    if (!p || !done || (strcmp(p->ops->name, "e2b") && strcmp(p->ops->name, "daytona")))
        return core_error_set(EVOLVE_EINVAL, "reap: only the e2b and daytona providers");
    r = calloc(1, sizeof(*r));
    if (!r)
        return core_error_oom();
    clock_gettime(CLOCK_REALTIME, &ts);
    r->p = p;
    r->done = done;
    r->payload = payload;
    r->cutoff_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - (long long)older_than_ms;
    rc = p->ops->list(p, on_listed, r);
    if (rc < 0)
        free(r);
    return rc;
}
