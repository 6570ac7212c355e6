# bash completion for podrun: commands, each command's options (read from its --help, so they
# never drift from the binary), job ids and names (from `podrun ls --json`) where a JOB goes,
# spec files for launch, up and down, and files after @ or -i/-F/--known-hosts/--html.
# Installed as share/bash-completion/completions/podrun; or: source scripts/podrun-completion.bash

_podrun_commands() {
  "${1:-podrun}" help 2>/dev/null | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'
}

_podrun_options() {  # _podrun_options PODRUN COMMAND
  "$1" "$2" --help 2>/dev/null | grep -oE '^ +(-[a-zA-Z],)?--[a-z][a-z-]*' |
    tr ',' '\n' | tr -d ' '
}

_podrun_jobs() {  # job ids and names, newest first
  "${1:-podrun}" ls --json 2>/dev/null | grep -oE '"(id|name)":"[^"]*"' | cut -d'"' -f4 | awk '!seen[$0]++'
}

_podrun() {
  local cur prev podrun=${COMP_WORDS[0]}
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    mapfile -t COMPREPLY < <(compgen -W "$(_podrun_commands "$podrun") --help --version" -- "$cur")
    return
  fi
  local command=${COMP_WORDS[1]}
  case $prev in
    -i | --identity | -F | --ssh-config | --known-hosts | --html)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
  esac
  if [[ $cur == @* ]]; then
    mapfile -t COMPREPLY < <(compgen -f -- "${cur#@}" | sed 's/^/@/')
    return
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_podrun_options "$podrun" "$command")" -- "$cur")
    return
  fi
  case $command in
    logs | status | stop | rerun | top | watch | report | why)
      mapfile -t COMPREPLY < <(compgen -W "$(_podrun_jobs "$podrun")" -- "$cur")
      ;;
    launch | up | down)
      mapfile -t COMPREPLY < <(compgen -f -X '!*.@(yaml|yml)' -- "$cur"; compgen -d -- "$cur")
      ;;
    help)
      mapfile -t COMPREPLY < <(compgen -W "$(_podrun_commands "$podrun")" -- "$cur")
      ;;
  esac
}

complete -F _podrun podrun
