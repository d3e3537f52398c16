/* harness/claude.h — pieces of the claude parser shared with replay (whose traces are Claude
 * stream-json) and split across claude.c / claude_tools.c.
 * Ownership: returned updates are new jansson references (NULL on OOM). Threads: per parser. */
#ifndef EVOLVE_HARNESS_CLAUDE_H
#define EVOLVE_HARNESS_CLAUDE_H

#include "harness/hline.h"

/* The tool_call update of a tool_use block named `name` (NUL-terminated copy of block.name,
 * "" when absent). */
json_t *hns_claude_tool_call(struct hns_jdoc *d, int block, const char *name);

/* The tool_call_update of a tool_result block; `name` is the cached tool's name or NULL when
 * the call was not seen in this run. */
json_t *hns_claude_tool_result(struct hns_jdoc *d, int block, const char *name);

/* The claude parser's entry points, shared with replay. */
int hns_claude_state_new(void **out);
void hns_claude_state_free(void *state);
int hns_claude_parse_line(struct hns_parser *p, const char *line, size_t len);

#endif
