/* registry.c — maps agent names to their harness descriptors.
 * Each src/harness/<agent>.c defines exactly one `const struct hns_agent hns_agent_<name>`; the
 * list below references every one of them, so linking the registry (from the shared or the
 * static library) always brings in every agent. */
#include "harness/harness.h"

#include <stddef.h>
#include <string.h>

#define HNS_AGENTS(X)                                                                              \
    X(claude) X(codex) X(gemini) X(qwen) X(kimi) X(opencode) X(droid) X(autohand) X(replay)
#define HNS_AGENT_DECL(name) extern const struct hns_agent hns_agent_##name;
HNS_AGENTS(HNS_AGENT_DECL)
#undef HNS_AGENT_DECL

#define HNS_AGENT_ADDR(name) &hns_agent_##name,
static const struct hns_agent *const all_agents[] = {HNS_AGENTS(HNS_AGENT_ADDR) NULL};
#undef HNS_AGENT_ADDR

const struct hns_agent *const *hns_agent_list(void)
{
    return all_agents;
}

const struct hns_agent *hns_agent_find(const char *name)
{
    const struct hns_agent *const *a;

    if (!name)
        return NULL;
    for (a = all_agents; *a; a++)
        if (!strcmp((*a)->name, name))
            return *a;
    return NULL;
}
