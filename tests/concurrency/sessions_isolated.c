/* 200 concurrent sessions in one process: each gets exactly its own events, in order, with
 * increasing sequence numbers, and nothing of another session's. Runs under ASan and TSan. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "support/support.h"
#include "support/tap.h"

#ifdef EVOLVE_TSAN
#define SESSIONS 48 /* TSan multiplies memory and time per thread; the race check is the point */
#else
#define SESSIONS 200
#endif
#define LINES 20

struct one {
    evolve_t *ev;
    evolve_subscription_t *sub;
    int index;
    atomic_int content; /* content events seen by the callback */
    atomic_int foreign; /* events carrying another session's marker */
    atomic_uint_fast64_t last_seq;
    atomic_int out_of_order;
    int rc, exit_code;
    char err[256];
};

static evolve_runtime_t *rt;

static void on_event(const evolve_event_t *e, void *payload)
{
    struct one *o = payload;
    char mine[32];
    const char *j;
    uint64_t prev = atomic_load(&o->last_seq);

    if (evolve_event_seq(e) <= prev)
        atomic_fetch_add(&o->out_of_order, 1);
    atomic_store(&o->last_seq, evolve_event_seq(e));
    if (evolve_event_kind(e) != EVOLVE_EVENT_CONTENT)
        return;
    atomic_fetch_add(&o->content, 1);
    j = evolve_event_json(e, NULL);
    snprintf(mine, sizeof(mine), "session-%03d-", o->index);
    if (strstr(j, "session-") && !strstr(j, mine))
        atomic_fetch_add(&o->foreign, 1);
}

static void *drive(void *arg)
{
    struct one *o = arg;
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_result_t *res = NULL;
    char trace[LINES * 160];
    size_t n = 0;
    int i;

    for (i = 0; i < LINES; i++)
        n += (size_t)snprintf(trace + n, sizeof(trace) - n,
                              "{\"type\":\"assistant\",\"message\":{\"id\":\"m%d\",\"content\":"
                              "[{\"type\":\"text\",\"text\":\"session-%03d-line-%d\"}]}}\n",
                              i, o->index, i);
    o->rc = evolve_upload_file(o->ev, "t.jsonl", trace, n);
    if (o->rc == 0) {
        ro.prompt = "t.jsonl";
        o->rc = evolve_run(&res, o->ev, &ro);
    }
    if (o->rc < 0)
        snprintf(o->err, sizeof(o->err), "%s", evolve_error_last()->message);
    else
        o->exit_code = evolve_result_exit_code(res);
    evolve_result_free(res);
    return NULL;
}

TAP_TEST(every_session_gets_exactly_its_own_events)
{
    static struct one s[SESSIONS];
    pthread_t t[SESSIONS];
    char home[512];
    int i, bad = 0;

    ts_mkdtemp(home, sizeof(home), "sessions");
    setenv("EVOLVE_HOME", home, 1);
    TAP_CHECK(evolve_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < SESSIONS; i++) {
        evolve_options_t o = EVOLVE_OPTIONS_INIT;
        evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;
        char logs[600];

        snprintf(logs, sizeof(logs), "%s/logs", home);
        o.agent = "replay";
        o.session_log_dir = logs;
        s[i].index = i;
        TAP_CHECK(evolve_new(&s[i].ev, rt, &o) == 0, "%s", evolve_error_last()->message);
        so.callback = on_event;
        so.payload = &s[i];
        so.capacity = 4096;
        TAP_CHECK(evolve_subscribe(&s[i].sub, s[i].ev, &so) == 0, "%s",
                  evolve_error_last()->message);
    }
    for (i = 0; i < SESSIONS; i++)
        TAP_CHECK(pthread_create(&t[i], NULL, drive, &s[i]) == 0, "pthread_create");
    for (i = 0; i < SESSIONS; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < SESSIONS; i++) {
        /* Free first: no callback starts after it returns, so the counts are final. */
        evolve_subscription_free(s[i].sub);
        if (s[i].rc != 0 || s[i].exit_code != 0 || atomic_load(&s[i].content) != LINES ||
            atomic_load(&s[i].foreign) || atomic_load(&s[i].out_of_order)) {
            if (bad++ < 5)
                fprintf(stderr, "# session %d: rc %d (%s) exit %d content %d foreign %d order %d\n",
                        i, s[i].rc, s[i].err, s[i].exit_code, atomic_load(&s[i].content),
                        atomic_load(&s[i].foreign), atomic_load(&s[i].out_of_order));
        }
        evolve_free(s[i].ev);
    }
    evolve_runtime_free(rt);
    ts_rmtree(home);
    TAP_CHECK(bad == 0, "%d of %d sessions saw wrong events", bad, SESSIONS);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {TAP_CASE(every_session_gets_exactly_its_own_events),
                                            {0}};
    return tap_run(cases, argc, argv);
}
