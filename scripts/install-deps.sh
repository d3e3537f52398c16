#!/bin/sh
# install-deps.sh — the one list of Debian packages evolve needs to build, test and benchmark.
# Run as root to install what is missing; as another user it only reports what is missing.
set -eu

PACKAGES="build-essential cmake pkg-config clang clang-format \
libcurl4-openssl-dev libjansson-dev libarchive-dev libssl-dev zlib1g-dev \
libcriterion-dev libmicrohttpd-dev libjsmn-dev \
bubblewrap python3 procps iproute2 util-linux \
chromium"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages:$missing (run as root to install them)" >&2
    exit 1
fi

echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
