#!/bin/sh
# demo.sh — `make demo`: the main job on a small scale, offline. Runs examples/demo.jsonl (recorded
# Claude sessions replayed by the replay agent, one sandbox each) through `evolve batch`, then
# shows where results, events and the report are. Sandboxes go to a temp EVOLVE_HOME.
set -eu
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo-out}
home=$(mktemp -d "${TMPDIR:-/tmp}/evolve-demo-XXXXXX")
trap 'rm -rf "$home"' EXIT
status=0
EVOLVE_HOME=$home build/evolve batch examples/demo.jsonl -o "$out" -j 4 || status=$?
# 3 = some tasks failed: the demo manifest has one task that fails its schema on purpose.
[ "$status" -eq 0 ] || [ "$status" -eq 3 ] || exit "$status"
echo "results: $out/results.jsonl  summary: $out/summary.json  report: $out/report.html"
echo "events of one task: $out/events/tool-use.jsonl"
