#!/usr/bin/env bash
# Stage this case's project in the eval's empty working directory: the draft
# under review and its spec, in a git repository of its own, so the santa
# helper (which puts .santa/ at the git top level) and the plugin's hooks
# (which use the directory Claude Code started in) agree on the project root.
set -euo pipefail
here=$(dirname "$0")
cp "$here/draft.md" "$here/spec.md" .
git init -q .
