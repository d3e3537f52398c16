#!/bin/sh
# checksrc.sh — source rules the compiler does not enforce (HACKING.md, "Banned calls").
# Fails on banned libc calls in src/ and, when a built shared library is given or found, on any
# exported symbol outside the evolve_ prefix.
set -eu
cd "$(dirname "$0")/.."
status=0

banned='\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|atoi|atol|atof|gets|system|popen)[[:space:]]*\('
if grep -rnE "$banned" src --include='*.c' --include='*.h' | grep -v 'checksrc:allow'; then
    echo "checksrc: banned call above (use snprintf, memcpy with a size, strtol with an end check)" >&2
    status=1
fi

lib=${1:-}
[ -n "$lib" ] || lib=$(ls build*/libevolve.so 2>/dev/null | head -n 1 || true)
if [ -n "$lib" ] && [ -f "$lib" ]; then
    bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v '^evolve_' |
          grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' || true)
    if [ -n "$bad" ]; then
        echo "checksrc: $lib exports symbols outside evolve_:" >&2
        echo "$bad" >&2
        status=1
    fi
fi
exit $status
