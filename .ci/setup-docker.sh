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

# gVisor (Debian package runsc) registered as the runtime "runsc", for drafter.runtime: runsc.
# --network=none: the sandbox has no network, and runsc refuses to start otherwise without a
# bridge; --oci-seccomp: apply the container's seccomp profile (ours) inside gVisor too;
# --host-uds=open: the openai drafter's relay socket is a bind-mounted Unix socket.
command -v runsc >/dev/null 2>&1 || {
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q runsc ||
        echo "setup-docker: runsc could not be installed; drafter.runtime: runsc will not work" >&2
}
runsc_registered() {
    docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc".*--oci-seccomp.*--host-uds=open'
}
RUNSC_CHANGED=no
command -v runsc >/dev/null 2>&1 && RUNSC_CHANGED=$($SUDO python3 - "$(command -v runsc)" <<'PY'
import json, os, sys
path, conf = sys.argv[1], "/etc/docker/daemon.json"
want = {"path": path, "runtimeArgs": ["--network=none", "--oci-seccomp", "--host-uds=open"]}
try:
    with open(conf) as f:
        settings = json.load(f)
except FileNotFoundError:
    settings = {}
if settings.get("runtimes", {}).get("runsc") == want:
    print("no")
    sys.exit(0)
settings.setdefault("runtimes", {})["runsc"] = want
os.makedirs(os.path.dirname(conf), exist_ok=True)
with open(conf + ".tmp", "w") as f:
    json.dump(settings, f, indent=2)
    f.write("\n")
    f.flush()
    os.fsync(f.fileno())
os.replace(conf + ".tmp", conf)
print("yes")
PY
)

if docker info >/dev/null 2>&1; then
    # A running engine reloads "runtimes" from daemon.json on SIGHUP: no restart, no container stops.
    if [ "$RUNSC_CHANGED" = yes ] || { command -v runsc >/dev/null 2>&1 && ! runsc_registered; }; then
        $SUDO kill -HUP "$(cat /var/run/docker.pid)"
        tries=0
        until runsc_registered; do
            tries=$((tries + 1))
            if [ "$tries" -gt 10 ]; then
                echo "setup-docker: the engine did not register runsc; see /etc/docker/daemon.json" >&2
                exit 1
            fi
            sleep 1
        done
    fi
else
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
