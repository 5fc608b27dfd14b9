#!/usr/bin/env bash
# The swap gap of each audited scorer of a width report (scripts/swap_gap.py
# says what it measures): scores the DL19 pools with every canonical window
# reversed, with the scorer's kept adapter and the audit's settings, and
# pairs those scores with the audit's canonical ones.
#
#   scripts/swap_report.sh                         # WIDTH=2, the M = 10 audits
#   WIDTH=4 MSFX= AUDITS="off-the-shelf single-order-s80-w5-from-w2 ..." scripts/swap_report.sh
#
# Environment: WIDTH (2), OUT (reports/training/widthWIDTH), AUDITS (the
# audit names without the -mM suffix; an adapter of that name is taken from
# OUT/adapters, none for off-the-shelf), MSFX (-m10: the suffix of the audits
# whose permutations give the reshuffle spread), LANES (2: one-thread scoring
# runs side by side), REPORT (swap-gap: the report's name). The reversed
# scores go to runs/swap/ (each run logs to its scores file plus .log);
# rerunning skips the scorers already done. Writes
# OUT/REPORT.md and .json.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
WIDTH=${WIDTH:-2}
OUT=${OUT:-reports/training/width$WIDTH}
MSFX=${MSFX--m10}
LANES=${LANES:-2}
AUDITS=${AUDITS:-off-the-shelf single-order-s240-w5 perm-aug-s240-w5 oc-sft-s240-w5}
REPORT=${REPORT:-swap-gap}
R=runs/swap
mkdir -p "$R"
pools="$R/dl19-reversed-w$WIDTH.json"
python3 scripts/swap_gap.py reverse "$D/dl19/bm25-top100.json" --width "$WIDTH" --depth 20 > "$pools"
[ "$LANES" -le 1 ] || export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}

# score_reversed ADAPTER_ARGS... SCORES: the reversed windows scored into
# SCORES, marked done only when the run finished.
score_reversed() { local scores=${*: -1}
    "$BIN" score --pools "$pools" --depth 20 --width "$WIDTH" --max-chars 300 --template compact \
        --mode batched "${@:1:$#-1}" --out "$scores" && echo ok > "$scores.done"; }
pairs=()
for a in $AUDITS; do
    audit="$OUT/$a$MSFX"
    [ -f "$audit/results.json" ] || { echo "no finished audit $audit" >&2; exit 1; }
    adapter=()
    [ "$a" = off-the-shelf ] || adapter=(--adapter "$OUT/adapters/$a")
    scores="$R/w$WIDTH-$a.jsonl"
    pairs+=("$audit" "$scores")
    [ -s "$scores.done" ] && continue
    echo "== score $a, reversed windows: log in $scores.log"
    run_in_lane "$scores.log" score_reversed "${adapter[@]}" "$scores"
done
lanes_wait "a scoring run failed: see $R/w$WIDTH-*.jsonl.log"
python3 scripts/swap_gap.py report "${pairs[@]}" --out "$OUT/$REPORT.md"
