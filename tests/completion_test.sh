#!/bin/bash
# The bash completion (scripts/podrun-completion.bash): commands, options per command, and job
# names from a PODRUN_HOME holding one job (made by a --local 1 launch).
# usage: completion_test.sh PODRUN_BINARY SOURCE_DIR
set -u
podrun=$1
source_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PODRUN_HOME=$tmp/home
failures=0

# shellcheck source=/dev/null
source "$source_dir/scripts/podrun-completion.bash"

# complete_line WORD...: sets COMPREPLY as bash would for the words (the last one being
# completed), with the command word being the podrun under test.
complete_line() {
  COMP_WORDS=("$podrun" "$@")
  COMP_CWORD=$#
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _podrun
}

expect() {  # expect DESCRIPTION WANTED: WANTED must be one of COMPREPLY
  local what=$1 want=$2 got
  for got in "${COMPREPLY[@]}"; do [[ "$got" == "$want" ]] && return 0; done
  echo "FAIL: $what: '$want' not in (${COMPREPLY[*]})"
  failures=$((failures + 1))
}

expect_not() {
  local what=$1 unwanted=$2 got
  for got in "${COMPREPLY[@]}"; do
    if [[ "$got" == "$unwanted" ]]; then
      echo "FAIL: $what: '$unwanted' offered (${COMPREPLY[*]})"
      failures=$((failures + 1))
    fi
  done
}

complete_line la
expect "podrun la<TAB>" launch
[[ ${#COMPREPLY[@]} -eq 1 ]] || { echo "FAIL: podrun la<TAB> offers ${COMPREPLY[*]}"; failures=$((failures + 1)); }

complete_line exec --
expect "podrun exec --<TAB>" --json
expect "podrun exec --<TAB>" --hosts
expect "podrun exec --<TAB>" --connect-timeout
expect_not "podrun exec --<TAB>" --follow

complete_line logs -
expect "podrun logs -<TAB>" --follow
expect "podrun logs -<TAB>" --no-prefix
expect_not "podrun logs -<TAB>" --json

# A job to complete: a trivial spec launched on one local worker.
cat > "$tmp/completion-job.yaml" <<'YAML'
name: completion-job
pod: {local: 1}
run: echo hello
YAML
if ! out=$("$podrun" launch "$tmp/completion-job.yaml" 2>&1); then
  echo "FAIL: launch of the trivial spec failed: $out"
  exit 1
fi
id=$("$podrun" ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')

complete_line logs ""
expect "podrun logs <TAB>" completion-job
expect "podrun logs <TAB>" "$id"
complete_line status comp
expect "podrun status comp<TAB>" completion-job
complete_line stop "${id:0:3}"
expect "podrun stop <id prefix><TAB>" "$id"
complete_line ls ""
expect_not "podrun ls <TAB>" completion-job

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "completion_test: all passed"
