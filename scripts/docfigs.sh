#!/usr/bin/env bash
# Check or regenerate the dtsim output quoted in README.md, docs/*.md and examples/**/*.md: every
# fenced block under a `<!-- dtsim-output: COMMAND -->` marker (docs/contributing.md, "Quoted outputs").
#   bash scripts/docfigs.sh --check [--all] [FILES...]    diff of each block that differs, exit 1
#   bash scripts/docfigs.sh --update [--all] [FILES...]   rewrite those blocks in place
# --all includes the blocks marked slow; --dtsim PATH (default $DTSIM, else build/dtsim).
exec python3 "$(dirname "$0")/docfigs.py" "$@"
