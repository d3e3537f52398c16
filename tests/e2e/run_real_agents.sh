#!/usr/bin/env bash
# run_real_agents.sh — the real agent CLIs (claude, codex, gemini, qwen, opencode, from npm) driven
# by `evolve run` on the local provider against `evolve mock-llm`, offline; then, when this tree
# has `evolve batch`, a 20-task batch mixing the five.
#
#   tests/e2e/run_real_agents.sh [--evolve PATH] [--agents "claude codex"] [--scenarios "hello tool"]
#                                [--save-traces DIR] [--jobs N] [--timeout S] [--batch-tasks N]
#
# One `evolve mock-llm --port 0` serves every run; each run picks its scenario with the path
# prefix /s/<scenario>/ of its base URL. Each run is `evolve run --agent A --json --base-url URL
# --api-key sk-mock --raw raw.jsonl --out out/ PROMPT` with its own session log dir, in the
# local provider's sandboxes (bubblewrap when it works). The agents installed by
# scripts/install-agents.sh (./.agents) reach the sandbox read-only through
# EVOLVE_SANDBOX_BINDS, their bin dir through PATH. tests/e2e/check_run.py then checks: exit 0,
# message chunks with the scenario's text, usage, no unknown lines, for "tool" a tool_call with
# the CLI's own shell tool name and its completed tool_call_update (same toolCallId), and
# output/hello.txt = "hi"; the session log has _meta, _prompt and every raw stdout line.
# --save-traces DIR keeps each raw stdout as DIR/evolve-<agent>-<scenario>.stdout.jsonl.
# When the npm registry cannot be reached it prints "SKIPPED: npm registry unreachable" and exits
# 0 (or $SKIP_EXIT: ctest sets 77, reported as skipped).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EVOLVE="${EVOLVE_CLI:-}"
AGENTS="claude codex gemini qwen opencode"
SCENARIOS="hello tool"
SAVE=""
JOBS=2
TIMEOUT=240
BATCH_TASKS=20
while [ $# -gt 0 ]; do
    case "$1" in
    --evolve) EVOLVE="$2"; shift 2 ;;
    --agents) AGENTS="$2"; shift 2 ;;
    --scenarios) SCENARIOS="$2"; shift 2 ;;
    --save-traces) SAVE="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --batch-tasks) BATCH_TASKS="$2"; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_real_agents: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "$EVOLVE" ]; then
    for c in "$ROOT/build/evolve" "$ROOT/build-asan/evolve"; do
        [ -x "$c" ] && { EVOLVE="$c"; break; }
    done
fi
[ -x "$EVOLVE" ] || { echo "run_real_agents: no evolve binary (build first or pass --evolve)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "run_real_agents: python3 is needed for the checks" >&2; exit 2; }
START_ALL=$(date +%s)

# ---- the agents --------------------------------------------------------------------------------
AGENTS_DIR="${EVOLVE_AGENTS_DIR:-$ROOT/.agents}"
if ! EVOLVE_AGENTS_DIR="$AGENTS_DIR" "$ROOT/scripts/install-agents.sh" --check --only "$AGENTS" > /dev/null 2>&1; then
    if ! command -v npm > /dev/null || ! timeout 20 npm ping > /dev/null 2>&1; then
        echo "=================================================================="
        echo "SKIPPED: npm registry unreachable (real agent CLIs not installed)"
        echo "=================================================================="
        exit "${SKIP_EXIT:-0}"
    fi
    echo "run_real_agents: installing the agent CLIs into $AGENTS_DIR" >&2
    EVOLVE_AGENTS_DIR="$AGENTS_DIR" "$ROOT/scripts/install-agents.sh" --only "$AGENTS" > /dev/null || {
        echo "run_real_agents: scripts/install-agents.sh failed" >&2
        exit 1
    }
fi
AGENTS_DIR="$(cd "$AGENTS_DIR" && pwd)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-e2e-real.XXXXXX")"
SRV=""
cleanup() {
    [ -n "$SRV" ] && kill "$SRV" 2> /dev/null && wait "$SRV" 2> /dev/null
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The environment of every evolve process: its own EVOLVE_HOME, the agents' install dir bound
# read-only into the sandboxes and their bin dir first on PATH (the sandbox inherits PATH).
export EVOLVE_HOME="$WORK/evolve-home"
export EVOLVE_SANDBOX_BINDS="$AGENTS_DIR"
export PATH="$AGENTS_DIR/bin:$PATH"
export NO_COLOR=1
# Vendor endpoints and keys of the host must not leak into the runs.
unset ANTHROPIC_BASE_URL ANTHROPIC_API_KEY OPENAI_BASE_URL OPENAI_API_KEY GEMINI_API_KEY \
    GOOGLE_GEMINI_BASE_URL OPENROUTER_API_KEY

"$EVOLVE" mock-llm --scenario hello --port 0 --log "$WORK/requests.jsonl" --quiet \
    > "$WORK/server.out" 2> "$WORK/server.err" &
SRV=$!
for _ in $(seq 200); do grep -q '^listening on ' "$WORK/server.out" 2> /dev/null && break; sleep 0.05; done
BASE="$(sed -n 's/^listening on //p' "$WORK/server.out")"
[ -n "$BASE" ] || { echo "run_real_agents: evolve mock-llm did not start: $(cat "$WORK/server.err")" >&2; exit 1; }

# The base URL each CLI wants for scenario $2 (the mock's path prefix picks the scenario).
base_url() {
    case "$1" in
    claude | gemini) echo "$BASE/s/$2" ;;
    *) echo "$BASE/s/$2/v1" ;;
    esac
}

prompt_of() {
    case "$1" in
    tool) echo "Run the shell command: echo hi > output/hello.txt" ;;
    *) echo "Say hello." ;;
    esac
}

# The agent's own variables for its endpoint and key (what evolve reads when no --base-url).
agent_env() {
    case "$1" in
    claude) echo "ANTHROPIC_BASE_URL=$2 ANTHROPIC_API_KEY=sk-mock" ;;
    codex | qwen) echo "OPENAI_BASE_URL=$2 OPENAI_API_KEY=sk-mock" ;;
    gemini) echo "GOOGLE_GEMINI_BASE_URL=$2 GEMINI_API_KEY=sk-mock" ;;
    opencode) echo "OPENCODE_BASE_URL=$2 OPENROUTER_API_KEY=sk-mock" ;;
    esac
}

# One run: writes $R/{events.jsonl,raw.jsonl,stderr.txt,out/,logs/,rc,secs}. The tool scenario
# passes the endpoint with --base-url/--api-key, the others through the agent's variables, so
# both ways are exercised for every agent.
one_run() {
    local agent="$1" scen="$2" R="$WORK/runs/$1-$2" t0 rc url
    local -a how
    mkdir -p "$R/out" "$R/logs"
    url="$(base_url "$agent" "$scen")"
    if [ "$scen" = tool ]; then
        how=(--base-url "$url" --api-key sk-mock)
        set -- env
    else
        how=()
        # shellcheck disable=SC2046
        set -- env $(agent_env "$agent" "$url")
    fi
    t0=$(date +%s.%N)
    "$@" EVOLVE_SESSION_LOG_DIR="$R/logs" timeout -k 5 "$TIMEOUT" "$EVOLVE" run --agent "$agent" \
        --json ${how[@]+"${how[@]}"} --raw "$R/raw.jsonl" --out "$R/out" "$(prompt_of "$scen")" \
        < /dev/null > "$R/events.jsonl" 2> "$R/stderr.txt"
    rc=$?
    echo "$rc" > "$R/rc"
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' > "$R/secs"
}

pass=0
fail=0
pids=()
for agent in $AGENTS; do
    for scen in $SCENARIOS; do
        one_run "$agent" "$scen" &
        pids+=($!)
        if [ "${#pids[@]}" -ge "$JOBS" ]; then
            wait "${pids[0]}"
            pids=("${pids[@]:1}")
        fi
    done
done
[ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}" # not a bare wait: the mock server is a child too
for agent in $AGENTS; do
    for scen in $SCENARIOS; do
        R="$WORK/runs/$agent-$scen"
        rc="$(cat "$R/rc" 2> /dev/null || echo '?')"
        why=""
        [ "$rc" = 0 ] || why="exit code $rc"
        checks="$(python3 "$ROOT/tests/e2e/check_run.py" "$agent" "$scen" "$R" 2>&1)" ||
            why="${why:+$why; }$(echo "$checks" | paste -sd ';' -)"
        if [ -n "$SAVE" ] && [ -s "$R/raw.jsonl" ]; then
            mkdir -p "$SAVE"
            cp "$R/raw.jsonl" "$SAVE/evolve-$agent-$scen.stdout.jsonl"
        fi
        if [ -z "$why" ]; then
            pass=$((pass + 1))
            echo "PASS $agent $scen ($(cat "$R/secs")s)"
        else
            fail=$((fail + 1))
            echo "FAIL $agent $scen ($(cat "$R/secs" 2> /dev/null)s): $why"
            echo "---- $agent $scen stderr (last lines):" >&2
            tail -n 15 "$R/stderr.txt" >&2
        fi
    done
done
echo "run_real_agents: runs: $pass passed, $fail failed in $(($(date +%s) - START_ALL))s"

# ---- a batch mixing the five agents (only when this tree has `evolve batch`) ---------------------
if "$EVOLVE" batch --help > /dev/null 2>&1; then
    B="$WORK/batch"
    mkdir -p "$B"
    set -- $AGENTS
    n=0
    : > "$B/manifest.jsonl"
    while [ "$n" -lt "$BATCH_TASKS" ]; do
        for agent in "$@"; do
            [ "$n" -lt "$BATCH_TASKS" ] || break
            printf '{"id":"t%02d-%s","agent":"%s","prompt":"%s"}\n' "$n" "$agent" "$agent" \
                "$(prompt_of tool)" >> "$B/manifest.jsonl"
            n=$((n + 1))
        done
    done
    # A batch has one environment for every task: each agent's own variables point it at the
    # mock's tool scenario (path prefix); every task must succeed and leave output/hello.txt.
    t0=$(date +%s)
    ANTHROPIC_BASE_URL="$BASE/s/tool" ANTHROPIC_API_KEY=sk-mock \
        OPENAI_BASE_URL="$BASE/s/tool/v1" OPENAI_API_KEY=sk-mock \
        GOOGLE_GEMINI_BASE_URL="$BASE/s/tool" GEMINI_API_KEY=sk-mock \
        OPENCODE_BASE_URL="$BASE/s/tool/v1" OPENROUTER_API_KEY=sk-mock \
        EVOLVE_SESSION_LOG_DIR="$B/logs" \
        timeout -k 5 "$((TIMEOUT * 3))" "$EVOLVE" batch "$B/manifest.jsonl" -o "$B/out" -j 4 --quiet \
        > "$B/stdout.txt" 2> "$B/stderr.txt"
    brc=$?
    ok=$(grep -c '"status":"success"' "$B/out/results.jsonl" 2> /dev/null)
    files=$(cat "$B"/out/outputs/*/hello.txt 2> /dev/null | grep -c '^hi$')
    echo "run_real_agents: batch of $BATCH_TASKS: exit $brc, ${ok:-0} succeeded, $files output/hello.txt in $(($(date +%s) - t0))s"
    if [ "$brc" != 0 ] || [ "${ok:-0}" != "$BATCH_TASKS" ] || [ "$files" != "$BATCH_TASKS" ]; then
        fail=$((fail + 1))
        echo "FAIL batch (see $B; stderr tail below)"
        tail -n 20 "$B/stderr.txt" >&2
    else
        pass=$((pass + 1))
        echo "PASS batch"
    fi
else
    echo "run_real_agents: NOTE: this evolve has no 'batch' command; the mixed batch was not run"
fi
echo "run_real_agents: $pass passed, $fail failed in $(($(date +%s) - START_ALL))s"
[ "$fail" -eq 0 ]
