#!/bin/sh
# run-bench.sh BUILD_DIR [NAME...] — runs the benchmarks of a release build and keeps their JSON.
# Each bench_<name> prints one JSON object per figure on stdout (bench/README.md explains them);
# the lines of every run are appended to BUILD_DIR/bench-results.jsonl. With names, only those
# run (e.g. `scripts/run-bench.sh build parse actors`).
set -eu
dir=${1:?usage: run-bench.sh BUILD_DIR [NAME...]}
shift
out="$dir/bench-results.jsonl"
if [ $# -eq 0 ]; then
    set -- $(cd "$dir" && ls bench_* 2>/dev/null | sed 's/^bench_//')
fi
status=0
for name in "$@"; do
    bin="$dir/bench_$name"
    if [ ! -x "$bin" ]; then
        echo "run-bench: no $bin" >&2
        status=1
        continue
    fi
    echo "== bench_$name" >&2
    if ! "$bin" | tee -a "$out"; then
        echo "run-bench: bench_$name failed" >&2
        status=1
    fi
done
echo "run-bench: figures appended to $out" >&2
exit $status
