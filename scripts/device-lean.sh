#!/usr/bin/env bash
# The device tool carries the whole working tree (tracked files included) and
# refuses one over 64 MiB; the committed reports and adapters hold ~680 MB
# (audit window logs, LoRA adapters). Before device calls:
#
#   scripts/device-lean.sh hide      # moves reports/ and adapters/ to ../ocrank-lean-hold/
#                                    # and out of the index (tree ~1 MB)
#   ... device calls (scripts/device-train.sh) ...
#   scripts/device-lean.sh restore   # moves them back and restores their index entries
#
# Nothing is committed while hidden: `restore` first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hold=../ocrank-lean-hold
case "${1:-}" in
    hide)
        [ ! -e "$hold" ] || { echo "device-lean: $hold exists: restore first" >&2; exit 1; }
        git diff --quiet HEAD -- reports adapters ||
            { echo "device-lean: reports/ or adapters/ have uncommitted changes: commit them first" >&2; exit 1; }
        mkdir -p "$hold"
        mv reports adapters "$hold/"
        git rm -r -q --cached reports adapters
        echo "device-lean: tree now $(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1) bytes"
        ;;
    restore)
        [ -d "$hold/reports" ] || { echo "device-lean: nothing held in $hold" >&2; exit 1; }
        for d in reports adapters; do
            # Files written under reports/ while hidden are merged in.
            if [ -e "$d" ]; then cp -a "$d/." "$hold/$d/" && rm -rf "$d"; fi
            mv "$hold/$d" "$d"
        done
        rmdir "$hold"
        git reset -q -- reports adapters
        git status --short | head
        ;;
    *) echo "usage: scripts/device-lean.sh hide|restore" >&2; exit 2 ;;
esac
