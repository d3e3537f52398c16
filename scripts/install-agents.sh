#!/usr/bin/env bash
# install-agents.sh — installs the five real coding-agent CLIs evolve is tested against, at pinned
# versions, with npm into a local prefix (never global), one npm prefix per agent so their
# dependency trees never clash. Idempotent: an agent whose pinned version is already installed is
# skipped. Prints the bin dir (holding claude codex gemini qwen opencode) as the last line.
#
#   scripts/install-agents.sh [--prefix DIR] [--only "claude codex"] [--check]
#
#   --prefix DIR   where to install (default: ./.agents, or $EVOLVE_AGENTS_DIR)
#   --only LIST    install only these agents (space or comma separated)
#   --check        install nothing; exit 0 when every selected agent is at its pinned version
#
# Pins (override one with e.g. VERSION_claude=2.1.197): the versions the offline runs against
# evolve mock-llm were verified with (docs/mock-llm.md). Needs node >= 20 and npm.
set -euo pipefail

PREFIX="${EVOLVE_AGENTS_DIR:-./.agents}"
ONLY=""
CHECK=0
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) PREFIX="$2"; shift 2 ;;
    --only) ONLY="${2//,/ }"; shift 2 ;;
    --check) CHECK=1; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-agents: unknown option $1" >&2; exit 2 ;;
    esac
done

declare -A PKG=(
    [claude]=@anthropic-ai/claude-code
    [codex]=@openai/codex
    [gemini]=@google/gemini-cli
    [qwen]=@qwen-code/qwen-code
    [opencode]=opencode-ai
)
declare -A PIN=(
    [claude]="${VERSION_claude:-2.1.197}"
    [codex]="${VERSION_codex:-0.171.0}"
    [gemini]="${VERSION_gemini:-0.61.0}"
    [qwen]="${VERSION_qwen:-0.15.10}"
    [opencode]="${VERSION_opencode:-1.18.33}"
)
AGENTS="claude codex gemini qwen opencode"
[ -n "$ONLY" ] && AGENTS="$ONLY"
for a in $AGENTS; do
    [ -n "${PKG[$a]:-}" ] || { echo "install-agents: unknown agent '$a'" >&2; exit 2; }
done

command -v npm > /dev/null || { echo "install-agents: npm not found (install Node.js >= 20)" >&2; exit 1; }
mkdir -p "$PREFIX/bin"
PREFIX="$(cd "$PREFIX" && pwd)"

# The version npm installed for agent $1 ("" when absent), read from its package.json.
installed_version() {
    local pj="$PREFIX/$1/node_modules/${PKG[$1]}/package.json"
    [ -f "$pj" ] && node -p 'require(process.argv[1]).version' "$pj" 2> /dev/null || true
}

status=0
pids=()
names=()
for a in $AGENTS; do
    have="$(installed_version "$a")"
    if [ "$have" = "${PIN[$a]}" ]; then
        echo "install-agents: $a ${PIN[$a]} already installed" >&2
        continue
    fi
    if [ "$CHECK" = 1 ]; then
        echo "install-agents: $a: have '${have:-none}', want ${PIN[$a]}" >&2
        status=1
        continue
    fi
    mkdir -p "$PREFIX/$a"
    echo "install-agents: installing ${PKG[$a]}@${PIN[$a]} into $PREFIX/$a" >&2
    # Two at a time at most: the machine is shared and npm is CPU and disk heavy.
    (npm install --prefix "$PREFIX/$a" --no-fund --no-audit --no-save --loglevel=error \
        "${PKG[$a]}@${PIN[$a]}" > "$PREFIX/$a.install.log" 2>&1) &
    pids+=($!)
    names+=("$a")
    if [ "${#pids[@]}" -ge 2 ]; then
        if ! wait "${pids[0]}"; then
            echo "install-agents: ${names[0]} FAILED, see $PREFIX/${names[0]}.install.log" >&2
            status=1
        fi
        pids=("${pids[@]:1}")
        names=("${names[@]:1}")
    fi
done
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "install-agents: ${names[$i]} FAILED, see $PREFIX/${names[$i]}.install.log" >&2
        status=1
    fi
done

# One bin dir with a link per agent, pointing into its own prefix.
for a in $AGENTS; do
    if [ -x "$PREFIX/$a/node_modules/.bin/$a" ]; then
        ln -sfn "$PREFIX/$a/node_modules/.bin/$a" "$PREFIX/bin/$a"
        have="$(installed_version "$a")"
        if [ "$have" != "${PIN[$a]}" ]; then
            echo "install-agents: $a is $have after install, wanted ${PIN[$a]}" >&2
            status=1
        fi
    elif [ "$CHECK" = 0 ]; then
        echo "install-agents: $a has no executable after install" >&2
        status=1
    fi
done
echo "$PREFIX/bin"
exit $status
