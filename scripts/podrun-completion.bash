# Bash completion for podrun: commands, options per command, and job names and ids (from
# `podrun ls --json`) for logs, status, stop and rerun. Installed as
# <prefix>/share/bash-completion/completions/podrun; or `source` this file.

# Prints the names and ids of the jobs in $PODRUN_HOME, one a line (nothing if podrun or
# python3 is missing, or there are no jobs).
_podrun_jobs() {
  local podrun="${1:-podrun}"
  "$podrun" ls --json 2>/dev/null | python3 -c '
import json, sys
try:
    jobs = json.load(sys.stdin)
except Exception:
    sys.exit(0)
seen = set()
for job in jobs:
    for key in ("name", "id"):
        value = job.get(key)
        if value and value not in seen:
            seen.add(value)
            print(value)
' 2>/dev/null
}

_podrun() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n = || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi

  local commands="exec launch logs status stop ls help"
  local pod="--hosts --tpu --zone --project --internal-ip --local -w --workers -l --user -p --port
    -i --identity -F --ssh-config --known-hosts --strict-host-keys --fanout --connect-timeout"

  # The command is the first word after podrun that is not an option.
  local command="" i
  for ((i = 1; i < cword; i++)); do
    case "${words[i]}" in
      -*) ;;
      *) command="${words[i]}"; break ;;
    esac
  done

  if [[ -z "$command" ]]; then
    COMPREPLY=($(compgen -W "$commands --version --help" -- "$cur"))
    return
  fi

  # Arguments of options that take a file.
  case "$prev" in
    -i|--identity|-F|--ssh-config|--known-hosts)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --hosts|--tpu|--zone|--project|--local|-w|--workers|-l|--user|-p|--port|--fanout|\
    --connect-timeout|-n|--name|-e|--env|--grace|--limit)
      return ;;
  esac

  local options="--help" jobs=false files=false
  case "$command" in
    exec) options="--json --help $pod" ;;
    launch) options="-n --name -d --detach -e --env --force-setup --help $pod"; files=true ;;
    logs) options="-f --follow -w --workers --fold --no-prefix --help"; jobs=true ;;
    status) options="--json --help"; jobs=true ;;
    stop) options="--grace --help"; jobs=true ;;
    rerun) options="--failed -d --detach --help"; jobs=true ;;
    ls) options="--json -n --limit --help" ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
  esac

  # After `exec ... --` everything is the remote command: complete nothing of ours.
  for ((i = 1; i < cword; i++)); do
    [[ "${words[i]}" == "--" ]] && return
  done

  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
  elif $jobs; then
    COMPREPLY=($(compgen -W "$(_podrun_jobs "${words[0]}")" -- "$cur"))
  elif $files; then
    COMPREPLY=($(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur"))
  fi
}

complete -F _podrun podrun
