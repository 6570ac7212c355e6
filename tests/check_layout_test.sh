#!/usr/bin/env bash
# Tests scripts/check-layout on small trees made here: a clean one passes; a folder loop, an
# include against the order, a sibling include, launcher/ using worker/, a comment citing a
# missing document, a 451-line source and a class defined in two .cc files each fail with the file and line named.
set -euo pipefail
check="$1/scripts/check-layout"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

make_tree() {
  rm -rf "$tmp/t"; mkdir -p "$tmp/t"/{launcher/{commands,attempt,ssh,output,base},worker/{rpc,base},proto,docs}
  cd "$tmp/t"
  echo '# design' > docs/design.md
  printf '// Cites docs/design.md decision 1.\n#include "launcher/attempt/a.h"\n' > launcher/commands/c.cc
  printf '#include "launcher/base/b.h"\n' > launcher/attempt/a.h
  printf '// a string "x/*.md" is no comment\n' > launcher/base/b.h
  printf '#include "proto/p.h"\n' > worker/rpc/r.cc
  : > proto/p.h
  cd - >/dev/null
}

make_tree
"$check" --root "$tmp/t" >/dev/null || fail "a clean tree is refused: $("$check" --root "$tmp/t")"

expect() {  # expect WHAT PATTERN: the check fails and prints PATTERN
  local out
  if out=$("$check" --root "$tmp/t" 2>&1); then fail "$1: not refused"; fi
  grep -q -- "$2" <<<"$out" || fail "$1: expected '$2' in: $out"
}

make_tree; printf '#include "launcher/commands/c.h"\n' >> "$tmp/t/launcher/attempt/a.h"
: > "$tmp/t/launcher/commands/c.h"
expect "an include upwards (a loop)" "launcher/attempt/a.h:2: launcher/attempt includes launcher/commands/c.h, a folder above it"

make_tree; : > "$tmp/t/launcher/output/o.h"; printf '#include "launcher/output/o.h"\n' > "$tmp/t/launcher/ssh/s.cc"
expect "a sibling include" "launcher/ssh/s.cc:1: .*a sibling at its own level"

make_tree; printf '#include "worker/base/w.h"\n' > "$tmp/t/launcher/base/x.cc"; : > "$tmp/t/worker/base/w.h"
expect "launcher using worker" "launcher/base/x.cc:1: launcher/ includes worker/base/w.h"

make_tree; printf '// See DESIGN.md decision 3.\n' > "$tmp/t/launcher/base/d.h"
expect "a missing document" "launcher/base/d.h:1: cites DESIGN.md, which is not in the repository"

make_tree; printf '/* Block comment\n   citing CONTRACT.md */\n' > "$tmp/t/launcher/base/e.h"
expect "a missing document in a block comment" "launcher/base/e.h:2: cites CONTRACT.md"

make_tree; seq 451 | sed 's/^/int v/; s/$/;/' > "$tmp/t/launcher/base/long.cc"
expect "a long file" "launcher/base/long.cc:1: 451 lines"
seq 451 | sed 's/^/int v/; s/$/;/' > "$tmp/t/launcher/base/long_test.cc"; rm "$tmp/t/launcher/base/long.cc"
"$check" --root "$tmp/t" >/dev/null || fail "a long test file is refused"

make_tree; printf 'void Sess::Connect() {}\nint Sess::Ready() const { return 1; }\n' > "$tmp/t/launcher/base/s.cc"
"$check" --root "$tmp/t" >/dev/null || fail "a class defined in one .cc is refused"
printf 'asio::awaitable<void> Sess::Authenticate(const Options& o) {\n}\n' > "$tmp/t/launcher/base/s_auth.cc"
expect "a class defined in two .cc files" "launcher/base/s_auth.cc:1: members of Sess are defined in launcher/base/s.cc, launcher/base/s_auth.cc"
printf 'void Sess::Authenticate() {}\n' > "$tmp/t/launcher/base/s_auth_test.cc"; rm "$tmp/t/launcher/base/s_auth.cc"
"$check" --root "$tmp/t" >/dev/null || fail "a test defining a member of its class is refused"

make_tree; mkdir -p "$tmp/t/launcher/newfolder"; printf '#include "launcher/base/b.h"\n' > "$tmp/t/launcher/newfolder/n.cc"
expect "an undeclared folder" "folder launcher/newfolder/ is not in"

echo "check_layout_test: 12 passed, 0 failed"
