/* agents.c — what a checkpoint contains per agent (spec runtime-storage-swarm §4.2, seed 002):
 * the agent's state dirs relative to the sandbox home and its own excludes (both from the
 * agent's harness descriptor), and the reference's global excludes. Owns: the exclude rule. Threads: any (read-only data). */
#include "storage/storage.h"

#include <fnmatch.h>
#include <string.h>

#include "core/error.h"
#include "harness/harness.h"

/* Bare names match a path component at any depth, as GNU tar's --exclude does. */
static const char *const global_excl[] = {"node_modules", "__pycache__", "*.pyc", ".cache", ".npm",
                                          ".pip",         ".venv",       "venv",  NULL};

/* The agent's state dirs and excludes come from its harness descriptor: one table for both. */
int sto_agent_dirs(const char *agent, const char *const **dirs, const char *const **excludes)
{
    static const char *const none[] = {NULL};
    const struct hns_agent *a = hns_agent_find(agent);

    if (!a)
        return core_error_set(EVOLVE_EINVAL, "Unknown agent type: %s", agent ? agent : "(none)");
    *dirs = a->state_dirs ? a->state_dirs : none;
    *excludes = a->state_excludes ? a->state_excludes : none;
    return 0;
}

bool sto_excluded(const char *path, const char *workspace_dir, const char *const *agent_excl)
{
    size_t wl = strlen(workspace_dir);
    const char *c = path;
    size_t i;

    if (!strncmp(path, workspace_dir, wl) && !strcmp(path + wl, "/temp"))
        return true;
    for (i = 0; agent_excl && agent_excl[i]; i++)
        if (!strcmp(path, agent_excl[i]))
            return true;
    while (*c) {
        const char *end = strchr(c, '/');
        char comp[256];
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (n < sizeof(comp)) {
            memcpy(comp, c, n);
            comp[n] = '\0';
            for (i = 0; global_excl[i]; i++)
                if (!fnmatch(global_excl[i], comp, 0))
                    return true;
        }
        c += n;
        if (*c == '/')
            c++;
    }
    return false;
}
