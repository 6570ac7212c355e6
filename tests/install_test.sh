#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the installed podrun finds the installed agent
# (and only it), the man page renders, the completion and the reference are in place.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
home=$(mktemp -d)
trap 'pkill -f "$home/local" 2>/dev/null || true; rm -rf "$prefix" "$home"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fails=0
check() {  # check NAME COMMAND...
  if "${@:2}" >/dev/null 2>&1; then echo "ok: $1"; else echo "FAILED: $1"; fails=$((fails + 1)); fi
}
check "podrun in bin/" test -x "$prefix/bin/podrun"
check "agent in lib/podrun/" test -x "$prefix/lib/podrun/podrun-agent"
check "bash completion" test -f "$prefix/share/bash-completion/completions/podrun"
check "reference" test -f "$prefix/share/doc/podrun/reference.md"
check "man page renders" sh -c "MANWIDTH=80 man -l '$prefix/share/man/man1/podrun.1' | grep -q 'run one job on every worker'"
printf 'name: installed\nrun: echo from-the-installed-agent\n' >"$home/job.yaml"
unset PODRUN_AGENT
out=$(PODRUN_HOME=$home "$prefix/bin/podrun" launch "$home/job.yaml" --local 2 2>&1) || true
check "installed podrun runs a job" grep -q '^\[w1\] from-the-installed-agent' <<<"$out"
# Without the installed agent, podrun says where it looked: the prefix, not the build tree.
mv "$prefix/lib/podrun/podrun-agent" "$prefix/agent.moved"
out=$(PODRUN_HOME=$home "$prefix/bin/podrun" launch "$home/job.yaml" --local 1 2>&1) || true
check "looks in the prefix" grep -q "cannot find podrun-agent.*$prefix/lib/podrun/podrun-agent" <<<"$out"
echo "$((7 - fails)) passed, $fails failed"
((fails == 0))
