/* agents.c — what a checkpoint contains per agent (spec runtime-storage-swarm §4.2, seed 002):
 * the agent's state dirs relative to the sandbox home, its own excludes, and the reference's
 * global excludes. Owns: the table and the exclude rule. Threads: any (read-only data). */
#include "storage/storage.h"

#include <fnmatch.h>
#include <string.h>

#include "core/error.h"

struct agent_dirs {
    const char *name;
    const char *const *dirs;
    const char *const *excludes;
};

static const char *const none[] = {NULL};
static const char *const d_claude[] = {".claude", NULL};
static const char *const d_codex[] = {".codex", NULL};
static const char *const d_gemini[] = {".gemini", NULL};
static const char *const d_qwen[] = {".qwen", NULL};
static const char *const d_kimi[] = {".kimi-code", NULL};
static const char *const x_kimi[] = {".kimi-code/config.toml", NULL}; /* gateway credentials */
static const char *const d_droid[] = {".factory", NULL};
/* The reference archives opencode's XDG data, config and state dirs, never its settingsDir ".". */
static const char *const d_opencode[] = {".local/share/opencode", ".config/opencode",
                                         ".local/state/opencode", NULL};
static const char *const d_autohand[] = {".autohand", NULL};

static const struct agent_dirs table[] = {
    {"claude", d_claude, none},     {"codex", d_codex, none},       {"gemini", d_gemini, none},
    {"qwen", d_qwen, none},         {"kimi", d_kimi, x_kimi},       {"droid", d_droid, none},
    {"opencode", d_opencode, none}, {"autohand", d_autohand, none},
};

/* Bare names match a path component at any depth, as GNU tar's --exclude does. */
static const char *const global_excl[] = {"node_modules", "__pycache__", "*.pyc", ".cache", ".npm",
                                          ".pip",         ".venv",       "venv",  NULL};

int sto_agent_dirs(const char *agent, const char *const **dirs, const char *const **excludes)
{
    size_t i;

    for (i = 0; agent && i < sizeof(table) / sizeof(table[0]); i++) {
        if (!strcmp(table[i].name, agent)) {
            *dirs = table[i].dirs;
            *excludes = table[i].excludes;
            return 0;
        }
    }
    return core_error_set(EVOLVE_EINVAL, "Unknown agent type: %s", agent ? agent : "(none)");
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
