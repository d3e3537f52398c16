#!/bin/sh
# run-fuzz.sh DIR SECONDS — runs every libFuzzer binary DIR/fuzz_* for SECONDS each, seeded from
# tests/data/traces/<agent>-*.stdout.jsonl and the vectors' input lines (fuzz_parse_<agent>),
# with the corpus kept in DIR/corpus/<name>. Fails when any target finds a crash.
set -eu
dir=${1:?usage: run-fuzz.sh BUILD_DIR SECONDS}
secs=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
found=0
for bin in "$dir"/fuzz_*; do
    [ -x "$bin" ] || continue
    found=1
    name=$(basename "$bin")
    agent=${name#fuzz_parse_}
    corpus="$dir/corpus/$name"
    mkdir -p "$corpus"
    for t in "$root"/tests/data/traces/"$agent"-*.stdout.jsonl; do
        [ -f "$t" ] && cp "$t" "$corpus/" 2>/dev/null || true
    done
    if [ -f "$root/tests/data/vectors/$agent.jsonl" ] && command -v python3 >/dev/null; then
        python3 - "$root/tests/data/vectors/$agent.jsonl" "$corpus" <<'PY'
import json, sys, os
for i, line in enumerate(open(sys.argv[1])):
    case = json.loads(line)
    with open(os.path.join(sys.argv[2], "vector-%d" % i), "w") as f:
        f.write("\n".join(case["input"]) + "\n")
PY
    fi
    echo "== $name for ${secs}s (corpus $corpus)"
    if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
            -artifact_prefix="$dir/$name-" "$corpus"; then
        echo "run-fuzz: $name failed" >&2
        status=1
    fi
done
[ "$found" = 1 ] || { echo "run-fuzz: no fuzz_* binaries in $dir" >&2; exit 1; }
exit $status
