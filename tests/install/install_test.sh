#!/usr/bin/env bash
# Installs the build into a scratch prefix and checks what a user gets: the
# program, a man page that renders without warnings and names every option
# --help names, bash completion that completes options and their values, and
# the docs.
set -euo pipefail
build=$1
prefix=$2
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

fail() { echo "install test: $*" >&2; exit 1; }
bin=$prefix/bin/flowsketch
man=$prefix/share/man/man1/flowsketch.1
completion=$prefix/share/bash-completion/completions/flowsketch
[ -x "$bin" ] || fail "no $bin"
[ -s "$man" ] || fail "no $man"
[ -s "$completion" ] || fail "no $completion"
[ -s "$prefix/share/doc/flowsketch/README.md" ] || fail "no README.md in the docs"
[ -s "$prefix/share/doc/flowsketch/reading-reports.md" ] || fail "no reading-reports.md in the docs"

# The man page renders with no warning (groff -ww: all of them).
warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
[ -z "$warnings" ] || fail "groff warns: $warnings"
page=$(groff -man -Tutf8 "$man" 2>/dev/null | sed 's/.\x08//g')

# Every long option of every command's --help is in the page.
for command in "" gen lab merge query clickhouse-schema; do
    for option in $("$bin" $command --help | grep -oE '^\s+(-[a-zA-Z],)?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+'); do
        grep -qF -- "$option" <<<"$page" || fail "the man page lacks $option of 'flowsketch $command'"
    done
done

# Completion: option names, a subcommand's options, an option's choices.
complete_words() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _flowsketch; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$completion" "$@"
}
complete_words flowsketch --eps | grep -qx -- --epsilon || fail "no --epsilon for 'flowsketch --eps'"
complete_words flowsketch gen --syn | grep -qx -- --syn-flood || fail "no --syn-flood for 'flowsketch gen --syn'"
complete_words flowsketch --format j | grep -qx json || fail "no json for '--format j'"
complete_words flowsketch g | grep -qx gen || fail "no gen for 'flowsketch g'"
echo "install test: ok"
