/* evolve/autohand.h — answering the Autohand CLI's permission requests.
 * The Autohand harness runs `autohand --mode rpc`, which asks before running a tool by printing
 * an `autohand.permissionRequest` notification (surfaced as a `tool_call` with status "pending"
 * whose extra.requestId names the request). The embedding program answers by writing one JSON-RPC
 * line on the agent's stdin; this header builds that line. Ownership: the returned text is the
 * caller's, released with evolve_autohand_reply_free(). */
#ifndef EVOLVE_AUTOHAND_H
#define EVOLVE_AUTOHAND_H

#include "evolve/common.h"

EVOLVE_BEGIN_DECL

/** How to answer one permission request. */
typedef enum evolve_permission_decision {
    EVOLVE_PERMISSION_ALLOW_ONCE = 0, /**< run this call only ("allow_once") */
    EVOLVE_PERMISSION_ALLOW_SESSION,  /**< allow for the rest of the session ("allow_session") */
    EVOLVE_PERMISSION_ALLOW_ALWAYS,   /**< remember for the project ("allow_always_project") */
    EVOLVE_PERMISSION_DENY,           /**< refuse this call ("deny_once") */
    EVOLVE_PERMISSION_DENY_ALWAYS,    /**< refuse and remember for the project
                                           ("deny_always_project") */
    EVOLVE_PERMISSION_DECISION_COUNT
} evolve_permission_decision_t;

/** Builds the line that answers permission request `request_id`:
 *  `{"jsonrpc":"2.0","id":"evolve-permission-<request_id>","method":"autohand.permissionResponse",
 *  "params":{"requestId":<request_id>,"decision":<decision>,"allowed":<bool>}}` followed by "\n",
 *  the request the Autohand CLI accepts on stdin (its reply to it comes back on stdout as a
 *  JSON-RPC response with the same id).
 *  @param[out] json_out receives the NUL-terminated line; free with evolve_autohand_reply_free()
 *  @param request_id the request's id, a non-empty UTF-8 string (copied)
 *  @return 0, EVOLVE_EINVAL (NULL or empty or non-UTF-8 id, unknown decision) or EVOLVE_ENOMEM
 *  @thread any */
EVOLVE_API int evolve_autohand_permission_reply(char **json_out, const char *request_id,
                                                evolve_permission_decision_t decision);

/** The CLI's wire name of a decision ("allow_once"), or NULL when out of range. @thread any */
EVOLVE_API const char *evolve_permission_decision_name(evolve_permission_decision_t decision);

/** Releases a line built by evolve_autohand_permission_reply(). NULL is a no-op. @thread any */
EVOLVE_API void evolve_autohand_reply_free(char *json);

EVOLVE_END_DECL

#endif
