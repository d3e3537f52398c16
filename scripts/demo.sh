#!/usr/bin/env bash
# demo.sh — `make demo`: the real claude and codex CLIs, each in its own local sandbox, run the
# tasks of examples/demo.jsonl at once against `evolve mock-llm` (offline, no key, no tokens).
#
#   scripts/demo.sh [--real] [--manifest FILE] [--out DIR] [--jobs N]
#
# On a fresh Debian 12 with Node.js >= 20 it installs what is missing: build dependencies
# (scripts/install-deps.sh, as root), a release build, the pinned claude and codex CLIs
# (scripts/install-agents.sh, into ./.agents). Then it starts the mock on a free port, runs the
# batch (`evolve batch MANIFEST -o OUT -j N`), prints the summary and the report path, and stops
# the mock. --real skips the mock: the CLIs use ANTHROPIC_API_KEY and
# OPENAI_API_KEY from the environment and real models (that costs tokens).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MANIFEST=examples/demo.jsonl
OUT=demo-out
JOBS=8
REAL=0
while [ $# -gt 0 ]; do
    case "$1" in
    --real) REAL=1; shift ;;
    --manifest) MANIFEST="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --jobs | -j) JOBS="$2"; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option $1" >&2; exit 2 ;;
    esac
done
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# ---- what is missing ----------------------------------------------------------------------------
EVOLVE="$ROOT/build/evolve"
if [ ! -x "$EVOLVE" ]; then
    say "building evolve (make build: installs build dependencies as root first)"
    make -C "$ROOT" build
fi
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
    echo "demo: Node.js >= 20 with npm is needed for the agent CLIs (apt-get install nodejs npm," >&2
    echo "      or https://nodejs.org); then run make demo again." >&2
    exit 1
fi
say "agent CLIs: claude and codex (pinned, into ./.agents)"
BIN="$(scripts/install-agents.sh --only "claude codex" | tail -n 1)"
AGENTS_DIR="$(dirname "$BIN")"
command -v python3 > /dev/null || { echo "demo: python3 is needed (scripts/install-deps.sh)" >&2; exit 1; }

# The sandboxes see /usr, /etc and /opt; the agents live in ./.agents, bound read-only.
export EVOLVE_SANDBOX_BINDS="$AGENTS_DIR"
export PATH="$BIN:$PATH"
export EVOLVE_SESSION_LOG_DIR="$ROOT/$OUT/session-logs"
mkdir -p "$OUT"

SRV=""
stop_mock() {
    if [ -n "$SRV" ]; then
        kill "$SRV" 2> /dev/null || true
        wait "$SRV" 2> /dev/null || true
        SRV=""
        echo "demo: mock stopped"
    fi
}
trap stop_mock EXIT
trap 'exit 130' INT TERM

if [ "$REAL" = 0 ]; then
    say "starting evolve mock-llm (scenario multi-tool) on a free port"
    "$EVOLVE" mock-llm --scenario multi-tool --port 0 --quiet --log "$OUT/mock-requests.jsonl" \
        > "$OUT/mock.out" 2> "$OUT/mock.err" &
    SRV=$!
    for _ in $(seq 200); do grep -q '^listening on ' "$OUT/mock.out" 2> /dev/null && break; sleep 0.05; done
    BASE="$(sed -n 's/^listening on //p' "$OUT/mock.out")"
    [ -n "$BASE" ] || { echo "demo: evolve mock-llm did not start: $(cat "$OUT/mock.err")" >&2; exit 1; }
    echo "mock model at $BASE"
    export ANTHROPIC_BASE_URL="$BASE" ANTHROPIC_API_KEY=sk-mock
    export OPENAI_BASE_URL="$BASE/v1" OPENAI_API_KEY=sk-mock
else
    : "${ANTHROPIC_API_KEY:?--real needs ANTHROPIC_API_KEY}" "${OPENAI_API_KEY:?--real needs OPENAI_API_KEY}"
fi

T0=$(date +%s)
say "evolve batch $MANIFEST -o $OUT -j $JOBS"
rc=0
"$EVOLVE" batch "$MANIFEST" -o "$OUT" -j "$JOBS" || rc=$?
say "summary ($(($(date +%s) - T0)) s, exit $rc)"
[ -f "$OUT/summary.json" ] && cat "$OUT/summary.json" && echo
echo "report: $ROOT/$OUT/report.html"
exit "$rc"
