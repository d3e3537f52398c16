/* event_type.c — names of update types and the agent-work predicate (DESIGN.md §4). */
#include "evolve/event.h"

#include <string.h>

static const char *const update_names[EVOLVE_UPDATE_TYPE_COUNT] = {
#define EVOLVE_UPDATE_NAME(name, text) [EVOLVE_UPDATE_##name] = text,
    EVOLVE_UPDATE_TYPE_MAP(EVOLVE_UPDATE_NAME)
#undef EVOLVE_UPDATE_NAME
};

const char *evolve_update_type_name(evolve_update_type_t type)
{
    if ((unsigned)type >= EVOLVE_UPDATE_TYPE_COUNT)
        return NULL;
    return update_names[type];
}

evolve_update_type_t evolve_update_type_from_name(const char *name)
{
    int i;

    if (!name)
        return EVOLVE_UPDATE_TYPE_COUNT;
    for (i = 0; i < EVOLVE_UPDATE_TYPE_COUNT; i++)
        if (!strcmp(update_names[i], name))
            return (evolve_update_type_t)i;
    return EVOLVE_UPDATE_TYPE_COUNT;
}

bool evolve_update_is_agent_work(evolve_update_type_t type)
{
    return type < EVOLVE_UPDATE_TYPE_COUNT && type != EVOLVE_UPDATE_ERROR &&
           type != EVOLVE_UPDATE_USAGE && type != EVOLVE_UPDATE_UNKNOWN;
}
