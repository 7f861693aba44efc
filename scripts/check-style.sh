#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The checks that keep the tree in shape (CONTRIBUTING.md, "How a change is
# checked"); each failure is one line naming the file (and line, where it has
# one). Seconds to run.
#   check-style.sh                 every tracked file
#   check-style.sh --changed REF   clang-format only on files changed since the
#                                  branch left REF (the other checks read the
#                                  whole tree)
# Checks: (a) clang-format --dry-run --Werror (.clang-format at the root);
# (b) no function in io/, core/, app/, render/, gui/, python/ over 120 lines;
# (c) renames only in io/src/files.cpp (the one place that writes, syncs and
# renames); (d) no "var="/"time=" text in the product's code outside
# io/src/hints.cpp (a selection travels as io::Selection, never as hints);
# (e) no file cites notes that are not in the repository; (f) no file cites
# an issue tracker's "issue N" (the repository has none); (g) no source file
# in app/, core/, io/, render/, gui/, web/, python/ over 700 lines; (h) each
# library includes only its own layer's headers and those below it (io <-
# core <- render <- app/session), never a program's.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
changed=""
case ${1:-} in
  --changed) changed=${2:?--changed REF} ;;
  "") ;;
  *) echo "check-style.sh: unknown argument $1 (usage: check-style.sh [--changed REF])" >&2; exit 2 ;;
esac
failed=0
fail() { echo "$1"; failed=1; }
sources=(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.c' '*.inl' '*.cpp.in')

# (a) Every tracked C/C++ file is ours (nothing vendored), except
# app/cli/command_list.cpp.in: a configure_file template whose @...@ lines
# CMake replaces by code, which clang-format would run together.
formatted=('*.cpp' '*.hpp' '*.h' '*.c' '*.inl' '*.cpp.in' ':!app/cli/command_list.cpp.in')
if [ -n "$changed" ]; then
  # Since the branch left REF: what REF gained meanwhile is not this change's.
  base=$(git merge-base "$changed" HEAD) || { echo "check-style.sh: --changed $changed: no such commit" >&2; exit 2; }
  mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- "${formatted[@]}")
else
  mapfile -t files < <(git ls-files -- "${formatted[@]}")
fi
if ! command -v clang-format > /dev/null; then
  fail "check-style: clang-format is not installed (scripts/install-deps.sh installs it)"
elif [ ${#files[@]} -gt 0 ]; then
  # One line per file: its first unformatted line and how many there are.
  out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1 | grep -E '^[^ ].*:[0-9]+:[0-9]+: error' |
    awk -F: '!($1 in n) { first[$1] = $2; order[++k] = $1 } { n[$1]++ }
      END { for (i = 1; i <= k; i++) printf "%s:%s: not clang-formatted (%d place(s); run clang-format -i %s)\n", order[i], first[order[i]], n[order[i]], order[i] }')
  [ -n "$out" ] && fail "$out"
fi

# (b) Function length.
mapfile -t long_dirs < <(for d in io core app render gui python; do git ls-files -- "$d" | grep -E '\.(cpp|hpp|h|cc|inl|in)$'; done)
out=$(python3 scripts/function_lengths.py --max 120 "${long_dirs[@]}") || fail "$out"

# Code lines only: a match whose text before it on the line holds no comment.
code_grep() {  # PATTERN EXCLUDED_FILE...
  local pattern=$1; shift
  "${sources[@]}" | grep -v -x -F "${@/#/-e}" | xargs -r grep -nE "$pattern" /dev/null | grep -vE '^[^:]+:[0-9]+:\s*(//|\*|/\*)' | grep -vE "//.*($pattern)"
}
# (c) rename( and std::filesystem::rename outside io/src/files.cpp. The fault
# shim (tests/faults/) defines rename() to inject failures: not a call.
out=$(code_grep '(^|[^_[:alnum:]])(std::filesystem::|fs::|::)?rename\(' io/src/files.cpp tests/faults/volseg_fault_shim.c)
[ -n "$out" ] && fail "$(sed 's/$/  <- rename outside io\/src\/files.cpp/' <<< "$out")"
# (d) A selection written as hints: any "var=" / "time=" literal in the
# product's code (tests may spell what a file on disk holds).
out=$(code_grep '"(var|time)=' io/src/hints.cpp | grep -E '^(app|io|render|gui|web|python)/')
[ -n "$out" ] && fail "$(sed 's/$/  <- a selection as hint text: use io::Selection/' <<< "$out")"

# (e) Citations of notes a clone does not have.
out=$(git grep -nE 'STYLE\.md|DEPENDENCIES\.md|DESIGN\.md' -- . ':!scripts/check-style.sh')
[ -n "$out" ] && fail "$(sed 's/$/  <- cites a file not in the repository/' <<< "$out")"

# (f) Citations of an issue tracker the repository does not have: say what
# is meant (the study, the bar, the date) instead.
out=$(git grep -nIiE '\bissues? #?[0-9]+' -- . ':!scripts/check-style.sh')
[ -n "$out" ] && fail "$(sed 's/$/  <- cites an issue tracker the repository does not have/' <<< "$out")"

# (g) File length: a source file over 700 lines holds more than one thing.
while IFS= read -r file; do
  [ -f "$file" ] || continue
  n=$(wc -l < "$file")
  [ "$n" -gt 700 ] && fail "$file: $n lines (over 700: split it)"
done < <(git ls-files -- app core io render gui web python | grep -E '\.(cpp|hpp|h|c|py|js|inl)$')

# (h) Layers. Headers are included as "volseg/PART/name.hpp"; a library
# may name its own parts and those of the layers below it.
layer() {  # FOLDER PART...
  local folder=$1; shift
  local parts; parts=$(IFS='|'; echo "$*")
  git ls-files -- "$folder" | grep -E '\.(cpp|hpp|h)$' | xargs -r grep -nE '#include "volseg/[a-z_]+/' /dev/null |
    grep -vE "#include \"volseg/($parts)/"
}
out=$(layer io io; layer core io segment pyramid mesh; layer datasets io segment datasets;
      layer render io segment pyramid mesh render; layer app/session io segment pyramid mesh render session)
[ -n "$out" ] && fail "$(sed 's/$/  <- an include from a layer above (io <- core <- render <- app\/session)/' <<< "$out")"

[ "$failed" = 0 ] && echo "check-style: all checks pass"
exit "$failed"
