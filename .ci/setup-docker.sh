#!/bin/sh
# Install and start a Docker engine, then build the drafter's sandbox image offline.
# Idempotent: every step is skipped when its result is already there.
# Usage: .ci/setup-docker.sh [PYTHON]   (PYTHON defaults to .venv/bin/python)
set -eu

PYTHON=${1:-.venv/bin/python}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q docker.io debootstrap
fi

if ! docker info >/dev/null 2>&1; then
    # No bridge and no iptables: the sandbox uses network_mode=none, and a build needs no network.
    $SUDO sh -c 'nohup dockerd --bridge=none --iptables=false >/tmp/dockerd.log 2>&1 &'
    tries=0
    until docker info >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -gt 60 ]; then
            echo "setup-docker: the engine did not answer within 60 s; see /tmp/dockerd.log" >&2
            tail -5 /tmp/dockerd.log >&2 || true
            exit 1
        fi
        sleep 1
    done
fi

start=$(date +%s)
"$PYTHON" -m mergegate sandbox build --if-missing --image mergegate-sandbox:latest
echo "setup-docker: engine up, image ready in $(( $(date +%s) - start )) s"
