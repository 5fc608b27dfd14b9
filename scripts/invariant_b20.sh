#!/usr/bin/env bash
# The shipped invariant (pointwise) student, adapters/invariant-d40-2cycles-seed0
# (reports/training/invariant-d40-seed0-cycle2: MiniLM labels, 960 updates,
# DL19 nDCG@10 0.557 at width 10), at issue 5's evaluation setting beside
# the four batched scorers of reports/training/width10/b20.md: all 20 BM25
# candidates of a DL19 pool in one window, 300 characters, compact template,
# M = PERMS orders, in each of MODES: invariant (default; as it was
# trained: every candidate attends to the instructions and itself only)
# and optionally batched (each candidate also sees its 19 neighbours, which
# it never did in training). Two lanes of one thread each; resumable (an
# audit scores only the windows its directory lacks). Then the table with
# off the shelf as baseline beside the seed-1 OC-SFT scorer
# (compare-table-invariant-mPERMS.md), the decision sets against that
# OC-SFT scorer (retention-NAME-MODE-mPERMS-vs-oc-sft.md), and each mode
# against BM25's run (paired_vs_run.py, printed; runs/bm25-dl19.txt is
# made when missing).
#
#   scripts/invariant_b20.sh                          # PERMS=10, MODES=invariant
#   MODES="invariant batched" scripts/invariant_b20.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
PERMS=${PERMS:-10}
MODES=${MODES:-invariant}
OUT=reports/training/width10/b20
ADAPTER=adapters/invariant-d40-2cycles-seed0
NAME=invariant-d40-2cycles-seed0
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
mkdir -p "$OUT" runs/width10
student_audit() { local mode=$1
    echo "== audit $NAME-$mode-m$PERMS"
    "$BIN" audit --pools "$D/dl19/bm25-top100.json" --qrels "$D/dl19/qrels.txt" --depth 20 \
        --width 20 --max-chars 300 --template compact --mode "$mode" --permutations "$PERMS" \
        --adapter "$ADAPTER" --out "$OUT/$NAME-$mode-m$PERMS"; }
for mode in $MODES; do
    run_in_lane "runs/width10/b20-$NAME-$mode-m$PERMS.log" student_audit "$mode"
done
lanes_wait "an audit failed: see runs/width10/b20-$NAME-*.log"

oc=$OUT/oc-sft-aug-spread-s144-from-w4seed1-s144-seed2-lambda0.05-floor1e-5-m$PERMS
student=()
for mode in $MODES; do student+=("$OUT/$NAME-$mode-m$PERMS"); done
compare_audits "$OUT/compare-table-invariant-m$PERMS.md" "$OUT/off-the-shelf-m$PERMS" "$oc" "${student[@]}"
[ -f runs/bm25-dl19.txt ] || "$BIN" eval --run "$D/dl19/bm25-top100.trec" --qrels "$D/dl19/qrels.txt" -q > runs/bm25-dl19.txt
for mode in $MODES; do
    python3 scripts/retention.py --pair "$OUT/$NAME-$mode-m$PERMS" "$oc" \
        --out "$OUT/retention-$NAME-$mode-m$PERMS-vs-oc-sft.md"
    for measure in ndcg_at_10 ndcg_at_10_mean ndcg_at_10_worst; do
        echo "$NAME-$mode-m$PERMS $measure against BM25:"
        python3 scripts/paired_vs_run.py "$OUT/$NAME-$mode-m$PERMS" runs/bm25-dl19.txt "$measure"
    done
done
