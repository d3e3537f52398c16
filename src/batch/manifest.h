/* batch/manifest.h — reading a task manifest (JSONL, one task per line) into validated tasks.
 * Ownership: a manifest and everything in it belong to the manifest (bat_manifest_free). */
#ifndef EVOLVE_BATCH_MANIFEST_H
#define EVOLVE_BATCH_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One entry of `context` or `files`: the destination path and where its bytes come from. */
enum bat_source_kind { BAT_SOURCE_INLINE, BAT_SOURCE_FILE, BAT_SOURCE_DIR };
struct bat_source {
    char *dest; /* relative path in the sandbox (context/ or workspace) */
    enum bat_source_kind kind;
    char *text; /* INLINE: the content */
    size_t text_len;
    char *local_path; /* FILE/DIR: resolved against the manifest's directory */
};

struct bat_task {
    char *id;
    char *prompt;
    char *agent;    /* never NULL after load: the line's, else the default */
    char *model;    /* NULL: the agent's default */
    char *provider; /* sandbox provider for this task; NULL: the batch's */
    struct bat_source *context;
    size_t context_count;
    struct bat_source *files;
    size_t files_count;
    json_t *schema; /* NULL when none; loaded from file when given as a path */
    char *system_prompt;
    uint64_t timeout_ms; /* never 0 after load */
    char *from;          /* checkpoint id or "latest"; NULL when none */
    char **tags;         /* NULL-terminated; never NULL after load */
    unsigned attempts;   /* >= 1 */
    size_t line;         /* 1-based line in the manifest */
};

/* Defaults for fields a line leaves out (command-line flags). Zero/NULL = built-in default. */
struct bat_defaults {
    const char *agent; /* NULL = "claude" */
    const char *model;
    const char *system_prompt;
    const char *schema_path; /* JSON Schema file for tasks without their own */
    uint64_t timeout_ms;     /* 0 = 3,600,000 */
    unsigned attempts;       /* 0 = 1 */
    /* Says whether an agent name is known; NULL = the harness registry. */
    bool (*agent_known)(const char *name);
};

struct bat_manifest {
    char *path;
    struct bat_task *tasks; /* valid tasks in manifest order */
    size_t count;
    char **problems; /* "path:line: reason" for every bad line, NULL-terminated */
    size_t problems_count;
};

/* Reads and validates `path`. Every bad line (invalid JSON, missing or non-string id or prompt,
 * duplicate id, unknown agent, unreadable context/files/schema file, bad field type) is listed
 * in (*out)->problems and left out of tasks. Returns 0 when every line is valid; EVOLVE_EINVAL
 * when some are not (the manifest is still returned in *out, so `--skip-invalid` can run the
 * rest; evolve_error_last() names the first problem and the count); EVOLVE_EIO when the file
 * cannot be read (*out is NULL); EVOLVE_ENOMEM. */
int bat_manifest_load(struct bat_manifest **out, const char *path, const struct bat_defaults *defs);

void bat_manifest_free(struct bat_manifest *m);

/* Parses one task (a manifest line's JSON text) into *t, which the caller then owns
 * (bat_task_dispose). Relative file paths resolve against base_dir (NULL: "."). Returns 0,
 * EVOLVE_EINVAL naming the problem, or EVOLVE_ENOMEM. Duplicate ids are the caller's concern. */
int bat_task_parse(struct bat_task *t, const char *json, const char *base_dir,
                   const struct bat_defaults *defs);

/* Frees what a task owns (not the struct); a zeroed task is fine. Tasks moved out of a manifest
 * are zeroed there so bat_manifest_free does not free them twice. */
void bat_task_dispose(struct bat_task *t);

/* True when the task belongs to shard `index` (1-based) of `count`: FNV-1a of the id modulo
 * count, so the split is deterministic, independent of line order, and disjoint. */
bool bat_task_in_shard(const struct bat_task *t, unsigned index, unsigned count);

/* Parses "I/N" (1 <= I <= N). Returns 0 or EVOLVE_EINVAL naming the text. */
int bat_shard_parse(const char *text, unsigned *index, unsigned *count);

#endif
