#!/usr/bin/env bash
# mockllm_real_clis.sh — the real agent CLIs (claude, codex, gemini, qwen, opencode, from npm)
# complete the hello and tool scenarios against `evolve mock-llm`, offline.
#
#   tests/e2e/mockllm_real_clis.sh [--evolve PATH] [--agents "claude codex"] [--scenarios "hello tool"]
#                                  [--save-traces DIR] [--timeout S]
#
# For each agent and scenario: a fresh HOME/XDG dirs/workspace (with an empty output/), a fresh
# `evolve mock-llm --port 0`, the CLI started under `env -i` with only the environment and config
# files docs/mock-llm.md lists, stdin </dev/null. Passes when the CLI exits 0, its stdout has the
# scenario's final text, the model saw the expected number of calls, and for "tool" the command
# really ran (output/hello.txt holds "hi"). With STRACE=1 (needs strace) each run is also checked
# to connect nowhere but 127.0.0.1.
# Installs the agents with scripts/install-agents.sh first; when the npm registry cannot be
# reached it prints "SKIPPED: npm registry unreachable" and exits 0 (77 with SKIP_EXIT=77).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EVOLVE="${EVOLVE_CLI:-}"
AGENTS="claude codex gemini qwen opencode"
SCENARIOS="hello tool"
SAVE=""
TIMEOUT=180
while [ $# -gt 0 ]; do
    case "$1" in
    --evolve) EVOLVE="$2"; shift 2 ;;
    --agents) AGENTS="$2"; shift 2 ;;
    --scenarios) SCENARIOS="$2"; shift 2 ;;
    --save-traces) SAVE="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    *) echo "mockllm_real_clis: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "$EVOLVE" ]; then
    for c in "$ROOT/build/evolve" "$ROOT/build-asan/evolve"; do
        [ -x "$c" ] && { EVOLVE="$c"; break; }
    done
fi
[ -x "$EVOLVE" ] || { echo "mockllm_real_clis: no evolve binary (build first or pass --evolve)" >&2; exit 2; }
START_ALL=$(date +%s)

# ---- the agents --------------------------------------------------------------------------------
AGENTS_DIR="${EVOLVE_AGENTS_DIR:-$ROOT/.agents}"
if ! EVOLVE_AGENTS_DIR="$AGENTS_DIR" "$ROOT/scripts/install-agents.sh" --check --only "$AGENTS" 2> /dev/null > /dev/null; then
    if ! command -v npm > /dev/null || ! timeout 20 npm ping > /dev/null 2>&1; then
        echo "=================================================================="
        echo "SKIPPED: npm registry unreachable (real agent CLIs not installed)"
        echo "=================================================================="
        exit "${SKIP_EXIT:-0}"
    fi
    EVOLVE_AGENTS_DIR="$AGENTS_DIR" "$ROOT/scripts/install-agents.sh" --only "$AGENTS" > /dev/null || {
        echo "mockllm_real_clis: scripts/install-agents.sh failed" >&2
        exit 1
    }
fi
BIN="$AGENTS_DIR/bin"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-e2e-mockllm.XXXXXX")"
SRV=""
cleanup() {
    [ -n "$SRV" ] && kill "$SRV" 2> /dev/null && wait "$SRV" 2> /dev/null
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# Final text of each scenario (data/scenarios/*.json) and the model calls its script makes.
final_text() {
    case "$1" in
    hello) echo "Hello from evolv" ;;
    tool) echo "Done: I ran the " ;;
    edit) echo "Done: output/no" ;;
    multi-tool) echo "Done: wrote outp" ;;
    *) echo "Done" ;;
    esac
}

pass=0
fail=0
results=()
for agent in $AGENTS; do
    for scen in $SCENARIOS; do
        R="$WORK/$agent-$scen"
        H="$R/home"
        WS="$R/ws"
        mkdir -p "$H" "$WS/output" "$R/xdg/config" "$R/xdg/data" "$R/xdg/cache" "$R/xdg/state" "$R/tmp"
        "$EVOLVE" mock-llm --scenario "$scen" --port 0 --log "$R/requests.jsonl" --quiet \
            > "$R/server.out" 2> "$R/server.err" &
        SRV=$!
        for _ in $(seq 100); do grep -q '^listening on ' "$R/server.out" 2> /dev/null && break; sleep 0.05; done
        BASE="$(sed -n 's/^listening on //p' "$R/server.out")"
        if [ -z "$BASE" ]; then
            echo "FAIL $agent $scen: evolve mock-llm did not start: $(cat "$R/server.err")"
            fail=$((fail + 1))
            continue
        fi
        case "$scen" in
        tool) PROMPT="Run the shell command: echo hi > output/hello.txt" ;;
        edit) PROMPT="Create output/notes.txt saying draft, then change draft to final." ;;
        multi-tool) PROMPT="Create output/one.txt and output/two.txt." ;;
        *) PROMPT="Say hello." ;;
        esac
        ENVV=("PATH=$BIN:/usr/local/bin:/usr/bin:/bin" "HOME=$H" "USER=${USER:-root}" "LANG=C.UTF-8"
            "TERM=dumb" "TMPDIR=$R/tmp" "SHELL=/bin/bash" "NO_COLOR=1" "CI=1"
            "XDG_CONFIG_HOME=$R/xdg/config" "XDG_DATA_HOME=$R/xdg/data"
            "XDG_CACHE_HOME=$R/xdg/cache" "XDG_STATE_HOME=$R/xdg/state"
            "NO_PROXY=127.0.0.1,localhost" "no_proxy=127.0.0.1,localhost")
        case "$agent" in
        claude)
            ENVV+=("ANTHROPIC_BASE_URL=$BASE" "ANTHROPIC_API_KEY=sk-mock"
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" "DISABLE_AUTOUPDATER=1"
                "DISABLE_TELEMETRY=1" "DISABLE_ERROR_REPORTING=1" "DISABLE_BUG_COMMAND=1"
                "CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1" "IS_SANDBOX=1")
            CMD=("$BIN/claude" -p "$PROMPT" --output-format stream-json --verbose
                --permission-mode bypassPermissions)
            ;;
        codex)
            mkdir -p "$H/.codex"
            cat > "$H/.codex/config.toml" << EOF
model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "$BASE/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
EOF
            ENVV+=("CODEX_HOME=$H/.codex" "FAKE_API_KEY=sk-mock")
            CMD=("$BIN/codex" exec --json --skip-git-repo-check
                --dangerously-bypass-approvals-and-sandbox "$PROMPT")
            ;;
        gemini)
            mkdir -p "$H/.gemini"
            cat > "$H/.gemini/settings.json" << 'EOF'
{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "ide": {"enabled": false}}
EOF
            ENVV+=("GEMINI_API_KEY=sk-mock" "GOOGLE_GEMINI_BASE_URL=$BASE" "GEMINI_CLI_NO_RELAUNCH=true")
            CMD=("$BIN/gemini" -p "$PROMPT" --output-format stream-json -m gemini-2.5-pro
                --approval-mode yolo)
            ;;
        qwen)
            mkdir -p "$H/.qwen"
            cat > "$H/.qwen/settings.json" << 'EOF'
{"security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": false}},
 "general": {"enableAutoUpdate": false}, "privacy": {"usageStatisticsEnabled": false},
 "telemetry": {"enabled": false}, "ide": {"enabled": false},
 "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false}}
EOF
            ENVV+=("OPENAI_API_KEY=sk-mock" "OPENAI_BASE_URL=$BASE/v1" "OPENAI_MODEL=mock-model")
            CMD=("$BIN/qwen" -p "$PROMPT" --output-format stream-json --approval-mode yolo
                --auth-type openai)
            ;;
        opencode)
            OC="$R/xdg/config/opencode"
            mkdir -p "$OC/node_modules"
            OCV="$(node -p 'require(process.argv[1]).version' "$AGENTS_DIR/opencode/node_modules/opencode-ai/package.json")"
            echo "{\"dependencies\":{\"@opencode-ai/plugin\":\"$OCV\"}}" > "$OC/package.json"
            echo "{\"lockfileVersion\":3,\"packages\":{\"\":{\"dependencies\":{\"@opencode-ai/plugin\":\"$OCV\"}}}}" > "$OC/package-lock.json"
            cat > "$OC/opencode.json" << EOF
{"autoupdate": false, "share": "disabled", "model": "mock/mock-model", "small_model": "mock/mock-model",
 "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "evolve mock-llm",
   "options": {"baseURL": "$BASE/v1", "apiKey": "sk-mock"},
   "models": {"mock-model": {"name": "mock-model", "tool_call": true, "limit": {"context": 200000, "output": 8192}}}}},
 "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"}}
EOF
            ENVV+=("OPENCODE_DISABLE_AUTOUPDATE=1" "OPENCODE_DISABLE_MODELS_FETCH=1"
                "OPENCODE_DISABLE_DEFAULT_PLUGINS=1" "OPENCODE_DISABLE_LSP_DOWNLOAD=1"
                "OPENCODE_DISABLE_SHARE=1" "OPENCODE_DISABLE_CLAUDE_CODE=1"
                "OPENCODE_DISABLE_EXTERNAL_SKILLS=1")
            CMD=("$BIN/opencode" run --format json -m mock/mock-model "$PROMPT")
            ;;
        *)
            echo "mockllm_real_clis: unknown agent $agent" >&2
            exit 2
            ;;
        esac
        t0=$(date +%s.%N)
        if [ "${STRACE:-0}" = 1 ]; then
            (cd "$WS" && env -i "${ENVV[@]}" strace -f -qq -e trace=connect -o "$R/strace.txt" \
                timeout -k 5 "$TIMEOUT" "${CMD[@]}" < /dev/null > "$R/stdout.jsonl" 2> "$R/stderr.txt")
        else
            (cd "$WS" && env -i "${ENVV[@]}" timeout -k 5 "$TIMEOUT" "${CMD[@]}" \
                < /dev/null > "$R/stdout.jsonl" 2> "$R/stderr.txt")
        fi
        rc=$?
        secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        kill "$SRV" 2> /dev/null
        wait "$SRV" 2> /dev/null
        SRV=""
        why=""
        [ "$rc" -eq 0 ] || why="exit code $rc"
        grep -qF "$(final_text "$scen")" "$R/stdout.jsonl" || why="${why:+$why; }final text missing from stdout"
        if [ "$scen" = tool ]; then
            [ "$(cat "$WS/output/hello.txt" 2> /dev/null)" = hi ] || why="${why:+$why; }output/hello.txt is not 'hi'"
            grep -q '"turn":1' "$R/requests.jsonl" || why="${why:+$why; }no request after the tool result"
        fi
        if [ "$scen" = edit ]; then
            [ "$(cat "$WS/output/notes.txt" 2> /dev/null)" = "status: final" ] || why="${why:+$why; }output/notes.txt is not 'status: final'"
        fi
        if [ "$scen" = multi-tool ]; then
            [ "$(cat "$WS/output/one.txt" "$WS/output/two.txt" 2> /dev/null | tr '\n' ' ')" = "one two " ] || why="${why:+$why; }output/one.txt or two.txt missing"
        fi
        if [ "${STRACE:-0}" = 1 ]; then
            bad=$(grep -E 'AF_INET6?' "$R/strace.txt" | grep -vE '127\.0\.0\.1|::1|inet_pton\(AF_INET6, "::ffff:127' || true)
            [ -z "$bad" ] || why="${why:+$why; }non-loopback connect: $(echo "$bad" | head -n 1)"
        fi
        if [ -n "$SAVE" ]; then
            mkdir -p "$SAVE"
            cp "$R/stdout.jsonl" "$SAVE/$agent-$scen.stdout.jsonl"
        fi
        if [ -z "$why" ]; then
            pass=$((pass + 1))
            results+=("PASS $agent $scen (${secs}s)")
        else
            fail=$((fail + 1))
            results+=("FAIL $agent $scen (${secs}s): $why")
            echo "---- $agent $scen stderr (last lines):" >&2
            tail -n 15 "$R/stderr.txt" >&2
        fi
        echo "${results[-1]}"
    done
done
echo "mockllm_real_clis: $pass passed, $fail failed in $(($(date +%s) - START_ALL))s"
[ "$fail" -eq 0 ]
