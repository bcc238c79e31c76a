#!/usr/bin/env bash
# The action's first step: make bubblewrap work for the runner's user, or stop (exit 2) before anything runs.
# ubuntu-24.04 runners restrict unprivileged user namespaces through AppArmor
# (kernel.apparmor_restrict_unprivileged_userns=1: "setting up uid map: Permission denied"); the runner is a
# throw-away machine, so the job lifts the restriction for itself.
set -euo pipefail
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
if ! command -v bwrap >/dev/null; then
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q bubblewrap
fi
knob="${GATE_USERNS_KNOB:-/proc/sys/kernel/apparmor_restrict_unprivileged_userns}"
if [ -r "$knob" ] && [ "$(cat "$knob")" != 0 ]; then
    $sudo sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
fi
if ! out=$(bwrap --unshare-all --die-with-parent --ro-bind / / true 2>&1); then
    echo "::error title=mergegate::bubblewrap cannot make a sandbox on this runner: ${out//$'\n'/ }; fix: a runner" \
        "where unprivileged user namespaces work (ubuntu-24.04 with the sysctl above, or a container run with" \
        "--privileged)"
    exit 2
fi
echo "bubblewrap works: production will run contained"
