/* replay.c — the replay agent for load tests: its "command" re-emits a recorded Claude Code
 * stream-json trace, so a run exercises spawning, stdout plumbing, line splitting, parsing and
 * publishing without any model. The trace file is the run's `prompt` (a path inside the
 * sandbox, e.g. "/home/user/workspace/trace.jsonl"); argv is `cat -- <path>`. Its parser is the
 * claude parser (same events, same deliberate differences; see claude.c).
 * Test mode: with EVOLVE_REPLAY_MODE=sh in evolve's own environment, argv is `sh -- <path>`
 * instead, so a test's "fake agent" is a script that prints a trace and may write
 * output/result.json, sleep past its timeout or exit non-zero (tests/batch, bench/batch).
 * Threads: as claude.c. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/claude.h"

static int build_command(struct hns_command *cmd, const struct hns_run_spec *spec)
{
    const char *mode = getenv("EVOLVE_REPLAY_MODE");
    const char *prog = mode && !strcmp(mode, "sh") ? "sh" : "cat";

    if (!spec || !spec->prompt || !*spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "replay: the run's prompt must be the trace path");
    if (hns_command_arg(cmd, prog) < 0 || hns_command_arg(cmd, "--") < 0 ||
        hns_command_arg(cmd, spec->prompt) < 0)
        return EVOLVE_ENOMEM;
    return 0;
}

static const char *const replay_dirs[] = {NULL};

const struct hns_agent hns_agent_replay = {
    .name = "replay",
    .instruction_file = "CLAUDE.md",
    .state_dirs = replay_dirs,
    .default_model = NULL,
    .api_key_env = NULL,
    .base_url_env = NULL,
    .state_new = hns_claude_state_new,
    .state_free = hns_claude_state_free,
    .parse_line = hns_claude_parse_line,
    .finish = NULL,
    .build_command = build_command,
};
