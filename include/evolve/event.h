/* evolve/event.h — the event model: OutputEvent updates, lifecycle, raw output.
 * The JSON shape (DESIGN.md §4) is normative; the C API exposes each event's kind, update type,
 * sequence number and its JSON text. Ownership: events are immutable and refcounted; a callback's
 * event is borrowed for the call, evolve_event_ref() keeps it longer and evolve_event_unref()
 * releases it. */
#ifndef EVOLVE_EVENT_H
#define EVOLVE_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evolve/common.h"

EVOLVE_BEGIN_DECL

/** What an event carries. */
typedef enum evolve_event_kind {
    EVOLVE_EVENT_CONTENT = 0, /**< an OutputEvent parsed from the agent's stream */
    EVOLVE_EVENT_LIFECYCLE,   /**< {sandboxId, sandbox, agent, timestamp, reason} */
    EVOLVE_EVENT_STDOUT,      /**< a raw stdout line of the agent, with its LF */
    EVOLVE_EVENT_STDERR,      /**< a raw stderr chunk */
    EVOLVE_EVENT_GAP,         /**< a drop-oldest subscriber lost events: {"gap": n} */
    EVOLVE_EVENT_KIND_COUNT
} evolve_event_kind_t;

/** `update.sessionUpdate` of a content event. */
#define EVOLVE_UPDATE_TYPE_MAP(X)                                                                  \
    X(AGENT_MESSAGE_CHUNK, "agent_message_chunk")                                                  \
    X(AGENT_THOUGHT_CHUNK, "agent_thought_chunk")                                                  \
    X(USER_MESSAGE_CHUNK, "user_message_chunk")                                                    \
    X(TOOL_CALL, "tool_call")                                                                      \
    X(TOOL_CALL_UPDATE, "tool_call_update")                                                        \
    X(PLAN, "plan")                                                                                \
    X(ERROR, "error")                                                                              \
    X(USAGE, "usage")                                                                              \
    X(UNKNOWN, "unknown")

typedef enum evolve_update_type {
#define EVOLVE_UPDATE_ENUM(name, text) EVOLVE_UPDATE_##name,
    EVOLVE_UPDATE_TYPE_MAP(EVOLVE_UPDATE_ENUM)
#undef EVOLVE_UPDATE_ENUM
        EVOLVE_UPDATE_TYPE_COUNT
} evolve_update_type_t;

/** The wire name of an update type ("tool_call"), or NULL when out of range. @thread any */
EVOLVE_API const char *evolve_update_type_name(evolve_update_type_t type);

/** Parses a wire name; returns EVOLVE_UPDATE_TYPE_COUNT for names evolve does not know. */
EVOLVE_API evolve_update_type_t evolve_update_type_from_name(const char *name);

/** True for updates that are the agent's own work: false for error, usage and unknown.
 *  @thread any */
EVOLVE_API bool evolve_update_is_agent_work(evolve_update_type_t type);

EVOLVE_END_DECL

#endif
