/* core/event.h — the concrete event behind evolve_event_t: an act_event envelope plus kind,
 * update type and the event's JSON text. */
#ifndef EVOLVE_CORE_EVENT_H
#define EVOLVE_CORE_EVENT_H

#include <jansson.h>
#include <stddef.h>

#include "actors/bus.h"
#include "evolve/session.h"

struct evolve_event {
    struct act_event base; /* first: the bus sees only this */
    evolve_event_kind_t kind;
    evolve_update_type_t type;
    size_t len;
    char json[]; /* NUL-terminated */
};

/* A new event with one reference (the caller's); `json` is copied. NULL on OOM. */
struct evolve_event *core_event_new(evolve_event_kind_t kind, evolve_update_type_t type,
                                    const char *json, size_t len, uint64_t seq);

/* Serializes `obj` (compact, keys in insertion order) into a new event; does not steal obj. */
struct evolve_event *core_event_from_json(evolve_event_kind_t kind, evolve_update_type_t type,
                                          const json_t *obj, uint64_t seq);

#endif
