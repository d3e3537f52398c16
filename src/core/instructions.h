/* core/instructions.h — the agent instruction file (CLAUDE.md, AGENTS.md, ...) of seed 002. */
#ifndef EVOLVE_CORE_INSTRUCTIONS_H
#define EVOLVE_CORE_INSTRUCTIONS_H

#include <jansson.h>

/* Builds the file's text: the default filesystem instructions for `workdir` (seed 002,
 * "Filesystem Instructions"), then "## SYSTEM PROMPT" with `system_prompt` when given, then the
 * "## STRUCTURED OUTPUT" section with `schema` pretty-printed (2-space indent) when given; parts
 * separated by two blank lines. *out is malloc'd. Returns 0 or EVOLVE_ENOMEM. */
int core_instructions_build(char **out, const char *workdir, const char *system_prompt,
                            const json_t *schema);

#endif
