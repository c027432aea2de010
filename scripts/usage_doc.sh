#!/usr/bin/env bash
# Regenerates the help blocks of docs/usage.md from the built binary's --help,
# so the document cannot disagree with the program.
#
# usage: scripts/usage_doc.sh [--check] [BINARY] [DOC]
#   BINARY  default build/src/flowsketch
#   DOC     default docs/usage.md
#   --check write nothing; exit 1 (and show the difference) if DOC's help blocks
#           differ from BINARY's --help
#
# A help block in DOC is the text between two marker lines:
#   <!-- help: flowsketch gen -->
#   ...replaced by a ```text fence holding `flowsketch gen --help`...
#   <!-- end help -->
# The words after "flowsketch" in the opening marker are the subcommand path
# (none for the measurement command itself).
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
binary="${1:-build/src/flowsketch}"
doc="${2:-docs/usage.md}"

if [[ ! -x "$binary" ]]; then
  echo "usage_doc.sh: $binary is not an executable (build it first: cmake --build build --target flowsketch)" >&2
  exit 2
fi
if [[ ! -f "$doc" ]]; then
  echo "usage_doc.sh: $doc does not exist" >&2
  exit 2
fi

generated="$(mktemp)"
trap 'rm -f "$generated"' EXIT

inside=0
found=0
while IFS= read -r line || [[ -n "$line" ]]; do
  if [[ "$line" =~ ^\<!--\ help:\ flowsketch(.*)\ --\>$ ]]; then
    read -r -a words <<<"${BASH_REMATCH[1]}"
    printf '%s\n' "$line" >>"$generated"
    {
      echo '```text'
      "$binary" "${words[@]}" --help
      echo '```'
    } >>"$generated"
    inside=1
    found=$((found + 1))
    continue
  fi
  if [[ "$line" == "<!-- end help -->" ]]; then
    inside=0
  fi
  if [[ $inside -eq 0 ]]; then
    printf '%s\n' "$line" >>"$generated"
  fi
done <"$doc"

if [[ $inside -ne 0 ]]; then
  echo "usage_doc.sh: $doc: a help block has no closing <!-- end help --> line" >&2
  exit 2
fi
if [[ $found -eq 0 ]]; then
  echo "usage_doc.sh: $doc has no <!-- help: flowsketch ... --> block" >&2
  exit 2
fi

if [[ $check -eq 1 ]]; then
  if ! diff -u "$doc" "$generated"; then
    echo >&2
    echo "$doc differs from the --help of $binary (the diff above: - the document, + the binary)." >&2
    echo "Regenerate it with: scripts/usage_doc.sh $binary $doc" >&2
    exit 1
  fi
  echo "$doc: $found help blocks match $binary --help"
  exit 0
fi
cp "$generated" "$doc"
echo "$doc: $found help blocks regenerated from $binary --help"
