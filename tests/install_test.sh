#!/bin/bash
# `cmake --install` into a temporary prefix; the installed podrun, copied elsewhere (so no build
# tree is beside it) and with no PODRUN_AGENT* set, launches a job on two local workers with its
# installed agent; without that agent it fails naming where it looked; the man page renders.
# usage: install_test.sh BUILD_DIR
set -u
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PODRUN_AGENT PODRUN_AGENT_BINARY
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/staged" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$tmp/install.log")"
# A moved prefix: nothing in it may point back at the build tree.
mv "$tmp/staged" "$tmp/prefix"
prefix=$tmp/prefix
for f in bin/podrun lib/podrun/podrun-agent share/man/man1/podrun.1 \
         share/bash-completion/completions/podrun share/doc/podrun/reference.md; do
  [[ -e "$prefix/$f" ]] || fail "$f not installed"
done

export PODRUN_HOME=$tmp/home
cat > "$tmp/trivial.yaml" <<'YAML'
name: install-test
run: echo "worker $PODRUN_WORKER_ID of $PODRUN_NUM_WORKERS"
YAML
out=$("$prefix/bin/podrun" launch "$tmp/trivial.yaml" --local 2 2>&1) ||
  fail "installed podrun launch --local 2 failed: $out"
grep -q '^\[w0\] worker 0 of 2$' <<<"$out" || fail "no line from w0: $out"
grep -q '^\[w1\] worker 1 of 2$' <<<"$out" || fail "no line from w1: $out"

# Without the installed agent, it finds none (it does not fall back on the build tree's).
mv "$prefix/lib/podrun/podrun-agent" "$tmp/agent-aside"
out=$("$prefix/bin/podrun" launch "$tmp/trivial.yaml" --local 1 2>&1) &&
  fail "launch succeeded without an installed agent: $out"
grep -q "cannot find podrun-agent" <<<"$out" || fail "no 'cannot find podrun-agent': $out"
mv "$tmp/agent-aside" "$prefix/lib/podrun/podrun-agent"

MANWIDTH=80 man -l "$prefix/share/man/man1/podrun.1" 2>"$tmp/man.err" | grep -q PODRUN ||
  fail "man -l did not render the page: $(cat "$tmp/man.err")"
echo "install_test: all passed"
