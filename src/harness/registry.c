/* registry.c — maps agent names to their harness descriptors.
 * Each src/harness/<agent>.c defines exactly one `const struct hns_agent hns_agent_<name>`. The
 * declarations here are weak so the list is fixed in one place and a descriptor that is not
 * linked in simply does not appear (the agent is then "unknown"). */
#include "harness/harness.h"

#include <stddef.h>
#include <string.h>

#define HNS_AGENT_DECL(name) extern const struct hns_agent hns_agent_##name __attribute__((weak));
#define HNS_AGENTS(X)                                                                              \
    X(claude) X(codex) X(gemini) X(qwen) X(kimi) X(opencode) X(droid) X(autohand) X(replay)
HNS_AGENTS(HNS_AGENT_DECL)

const struct hns_agent *const *hns_agent_list(void)
{
    /* Built once: weak symbols are resolved at link time, so the list never changes. */
#define HNS_AGENT_ADDR(name) &hns_agent_##name,
    static const struct hns_agent *const all[] = {HNS_AGENTS(HNS_AGENT_ADDR) NULL};
    static const struct hns_agent *linked[sizeof(all) / sizeof(all[0])];
    static int ready;
    size_t i, n = 0;

    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) /* pairs with the release store below */
        return linked;
    for (i = 0; i + 1 < sizeof(all) / sizeof(all[0]); i++)
        if (all[i])
            linked[n++] = all[i];
    linked[n] = NULL;
    /* release: publishes `linked` to readers that see ready == 1. Two first callers may both
     * build it; they write identical values. */
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    return linked;
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
