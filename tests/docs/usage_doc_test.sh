#!/usr/bin/env bash
# Fails when docs/usage.md's help blocks differ from the built binary's --help,
# and prints the command that regenerates them.
# usage: tests/docs/usage_doc_test.sh BINARY
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
exec "$root/scripts/usage_doc.sh" --check "$1" "$root/docs/usage.md"
