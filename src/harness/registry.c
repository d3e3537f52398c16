/* registry.c — maps agent names to their harness descriptors.
 * Each src/harness/<agent>.c defines exactly one `const struct hns_agent hns_agent_<name>`. The
 * declarations here are weak so the list is fixed in one place and a descriptor that is not
 * linked in simply does not appear (the agent is then "unknown"). */
#include "harness/harness.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#define HNS_AGENT_DECL(name) extern const struct hns_agent hns_agent_##name __attribute__((weak));
#define HNS_AGENTS(X)                                                                              \
    X(claude) X(codex) X(gemini) X(qwen) X(kimi) X(opencode) X(droid) X(autohand) X(replay)
HNS_AGENTS(HNS_AGENT_DECL)

#define HNS_AGENT_ADDR(name) &hns_agent_##name,
static const struct hns_agent *const all_agents[] = {HNS_AGENTS(HNS_AGENT_ADDR) NULL};
static const struct hns_agent *linked_agents[sizeof(all_agents) / sizeof(all_agents[0])];
static pthread_once_t linked_once = PTHREAD_ONCE_INIT;

static void build_linked(void)
{
    size_t i, n = 0;

    for (i = 0; i + 1 < sizeof(all_agents) / sizeof(all_agents[0]); i++)
        if (all_agents[i])
            linked_agents[n++] = all_agents[i];
    linked_agents[n] = NULL;
}

const struct hns_agent *const *hns_agent_list(void)
{
    /* Built once: weak symbols are resolved at link time, so the list never changes.
     * pthread_once, not "two first callers write identical values": concurrent first calls
     * (the batch's task threads all creating sessions at once) were a data race under TSan. */
    pthread_once(&linked_once, build_linked);
    return linked_agents;
}

const struct hns_agent *hns_agent_find(const char *name)
{
    const struct hns_agent *const *a;

    if (!name)
        return NULL;
    for (a = hns_agent_list(); *a; a++)
        if (!strcmp((*a)->name, name))
            return *a;
    return NULL;
}
