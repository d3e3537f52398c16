/* event.c — evolve_event_t: immutable, refcounted events with their JSON text.
 * Owns: the event memory layout (one allocation: header + JSON) and the public accessors.
 * Threads: any; events are immutable once published. */
#include "core/event.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static void event_destroy(struct act_event *ev)
{
    free(ev);
}

struct evolve_event *core_event_new(evolve_event_kind_t kind, evolve_update_type_t type,
                                    const char *json, size_t len, uint64_t seq)
{
    struct evolve_event *e = malloc(sizeof(*e) + len + 1);

    if (!e) {
        core_error_oom();
        return NULL;
    }
    act_event_init(&e->base, event_destroy, seq);
    e->kind = kind;
    e->type = type;
    e->len = len;
    memcpy(e->json, json, len);
    e->json[len] = '\0';
    return e;
}

struct evolve_event *core_event_from_json(evolve_event_kind_t kind, evolve_update_type_t type,
                                          const json_t *obj, uint64_t seq)
{
    size_t len = json_dumpb(obj, NULL, 0, JSON_COMPACT);
    struct evolve_event *e;

    if (len == 0) {
        core_error_oom();
        return NULL;
    }
    e = malloc(sizeof(*e) + len + 1);
    if (!e) {
        core_error_oom();
        return NULL;
    }
    act_event_init(&e->base, event_destroy, seq);
    e->kind = kind;
    e->type = type;
    e->len = json_dumpb(obj, e->json, len, JSON_COMPACT);
    e->json[e->len] = '\0';
    return e;
}

evolve_event_kind_t evolve_event_kind(const evolve_event_t *e)
{
    return e->kind;
}

uint64_t evolve_event_seq(const evolve_event_t *e)
{
    return e->base.seq;
}

evolve_update_type_t evolve_event_update_type(const evolve_event_t *e)
{
    return e->kind == EVOLVE_EVENT_CONTENT ? e->type : EVOLVE_UPDATE_TYPE_COUNT;
}

const char *evolve_event_json(const evolve_event_t *e, size_t *len_out)
{
    if (len_out)
        *len_out = e->len;
    return e->json;
}

void evolve_event_ref(const evolve_event_t *e)
{
    /* Refcounting mutates only the atomic counter; the event itself stays immutable. */
    act_event_ref((struct act_event *)&e->base);
}

void evolve_event_unref(const evolve_event_t *e)
{
    if (e)
        act_event_unref((struct act_event *)&e->base);
}
