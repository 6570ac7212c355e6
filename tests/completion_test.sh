#!/usr/bin/env bash
# Tests scripts/podrun-completion.bash against the built podrun: commands, options, job names.
# Usage: completion_test.sh PODRUN_BINARY SOURCE_DIR
set -euo pipefail
podrun_bin=$1
src=$2
home=$(mktemp -d)
trap 'rm -rf "$home"; pkill -f "$home/local" 2>/dev/null || true' EXIT
export PODRUN_HOME=$home
bindir=$(mktemp -d)
ln -s "$podrun_bin" "$bindir/podrun"
export PATH=$bindir:$PATH
shopt -s extglob
# shellcheck source=/dev/null
source "$src/scripts/podrun-completion.bash"
fails=0
checks=0
complete_words() {  # complete_words WORD... : COMPREPLY for the last word
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _podrun
  printf '%s\n' "${COMPREPLY[@]}"
}
expect() {  # expect NAME NEEDLE OUTPUT
  checks=$((checks + 1))
  if grep -qx -- "$2" <<<"$3"; then
    echo "ok: $1"
  else
    echo "FAILED: $1: '$2' not in: $(tr '\n' ' ' <<<"$3")"
    fails=$((fails + 1))
  fi
}
expect "command" launch "$(complete_words podrun la)"
expect "help's command" status "$(complete_words podrun help st)"
expect "exec option" --connect-timeout "$(complete_words podrun exec --conn)"
expect "logs option" --follow "$(complete_words podrun logs -)"
expect "exec options after --" --json "$(complete_words podrun exec --)"
expect "exec pod options after --" --hosts "$(complete_words podrun exec --)"
printf 'name: completion-job\nrun: "true"\n' >"$home/job.yaml"
podrun launch "$home/job.yaml" --local 1 >/dev/null 2>&1
expect "job name" completion-job "$(complete_words podrun logs comp)"
expect "job name, nothing typed" completion-job "$(complete_words podrun logs "")"
id=$(podrun ls --json | grep -oE '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
expect "top's job name" completion-job "$(complete_words podrun top comp)"
expect "job id" "$id" "$(complete_words podrun status "${id:0:8}")"
expect "spec file" "$home/job.yaml" "$(complete_words podrun launch "$home/j")"
passed=$((checks - fails))
echo "$passed passed, $fails failed"
((fails == 0))
