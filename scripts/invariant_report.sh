#!/usr/bin/env bash
# Invariant training (reports/training/invariant/): SmolLM2-135M-Instruct
# trained with LoRA on invariant windows (each candidate sees only the query
# prefix and itself: the pointwise scorer, 10 candidates per forward), then
# selected on held-out DL21 queries and audited on all 43 DL19 queries next to
# the off-the-shelf model in the same mode; the student is also audited as a
# batched scorer (does what it learned transfer to a batched window?).
# Every step is resumable: rerun after an interruption.
#
#   scripts/invariant_report.sh                  # 240 steps, lr 1e-3, cross-entropy
#   STEPS=480 EVERY=60 BENCH=0 OUT=reports/training/invariant-s480 \
#     scripts/invariant_report.sh                # reports/training/invariant-s480/ (its
#                                                # own run directory; another OUT too: an
#                                                # audit refuses a directory of another adapter)
#   GOLD21=1 CHARS=400 EVAL_CHARS=1200 STEPS=200 EVERY=50 SELECT=1 BENCH=0 \
#     OUT=reports/training/invariant-gold scripts/invariant_report.sh
#                                                # reports/training/invariant-gold/
# GOLD21=1 trains on gold grades for DL21 (qrels) and MiniLM labels for DL22
# (`ocrank merge-labels`, query by query). CHARS cuts candidates for training
# and the audits (default 300); EVAL_CHARS adds DL19 audits of the base model
# and the student at another cut. BENCH=0 skips the step-time bench.
# DEPTH=40 trains on the first 40 candidates of each pool (labels to that
# depth: runs/train/labels-minilm-d40.jsonl; RUN gets -d40): twice the
# distinct training windows of the default 20, for runs longer than one epoch.
#   DEPTH=40 STEPS=480 EVERY=60 BENCH=0 OUT=reports/training/invariant-d40 \
#     scripts/invariant_report.sh                # reports/training/invariant-d40/
# RAG=1 adds the 301 TREC RAG 2024 topics (datasets/, 20 passages each,
# no judgments) to the training pools, labelled by the same MiniLM teacher
# (runs/train/labels-minilm-rag.jsonl; RUN gets -rag): 602 more windows of
# new queries. Selection stays on held-out DL21 queries. Measured: worse
# than without them (the teacher's grades on those pools are flat; see
# reports/training/invariant-rag/README.md).
#   RAG=1 STEPS=480 EVERY=60 BENCH=0 OUT=reports/training/invariant-rag \
#     scripts/invariant_report.sh                # reports/training/invariant-rag/
# SEED=1 trains the same run at another training seed (RUN gets -seed1;
# measured for DEPTH=40: reports/training/invariant-d40-seed1/ and, with
# SEED=2, reports/training/invariant-d40-seed2/).
# CYCLE2=1 continues the finished run for a second cycle of STEPS steps
# (measured for DEPTH=40 SEED=2: reports/training/invariant-d40-seed2-cycle2/):
#   CYCLE2=1 SEED=1 DEPTH=40 STEPS=480 EVERY=60 BENCH=0 SELECT=1 \
#     BASE_AUDIT=reports/training/invariant-d40/off-the-shelf-invariant \
#     OUT=reports/training/invariant-d40-seed1-cycle2 scripts/invariant_report.sh
# (reports/training/invariant-d40-seed1-cycle2/: the replicate, seed 1).
# BASE_AUDIT=DIR: the off-the-shelf DL19 audit lives in DIR instead of
# $OUT/off-the-shelf-invariant, so a report need not commit a copy of it. It is
# audited (resumed) there like any other: an existing base audit with the same
# settings returns at once, one with other settings is refused by `ocrank
# audit`. E.g. BASE_AUDIT=reports/training/invariant-d40/off-the-shelf-invariant
# for every DEPTH=40 report after invariant-d40 (the base model does not depend
# on the training depth, seed or cycle).
# SELECT=1 also picks a checkpoint on the held-out DL21 queries (`ocrank
# select`) and audits it; BATCHED=1 also audits the student as a batched scorer.
# PROBE=1 also runs the linear probe of the frozen readout states
# (examples/readout_features + scripts/readout_probe.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/report-lib.sh
source scripts/report-lib.sh
OUT=${OUT:-reports/training/invariant}
RUNS=${RUNS:-runs/probe}
STEPS=${STEPS:-240}
LR=${LR:-1e-3}
LOSS=${LOSS:-cross-entropy}
CHARS=${CHARS:-300}
DEPTH=${DEPTH:-20}
if [ "${GOLD21:-0}" = 1 ] && { [ "$DEPTH" != 20 ] || [ "${RAG:-0}" = 1 ]; }; then
    echo "GOLD21=1 merges DL21+DL22 labels to depth 20 only; not with DEPTH=$DEPTH or RAG=1" >&2; exit 2
fi
TRAIN_POOLS=("$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json")
MINILM=runs/train/labels-minilm
if [ "${RAG:-0}" = 1 ]; then
    TRAIN_POOLS+=(datasets/trec-rag-2024-study1.jsonl.gz)
    MINILM=$MINILM-rag
fi
[ "$DEPTH" = 20 ] || MINILM=$MINILM-d$DEPTH
MINILM=$MINILM.jsonl
WARMUP=$(( STEPS / 20 ))
EVERY=${EVERY:-$(( STEPS / 8 ))}
SCORER=(--width 10 --template compact)   # with --max-chars: $CHARS, or $AT in audit_at
if [ "${GOLD21:-0}" = 1 ]; then
    LABELS=runs/train/labels-gold21-minilm22.jsonl
    RUN="$RUNS/invariant-gold21-c$CHARS-s$STEPS"
else
    LABELS=${LABELS:-$MINILM}
    RUN="$RUNS/invariant-s$STEPS-lr$LR"
    [ "$LOSS" = squared ] || RUN="$RUN-ce"
    [ "$CHARS" = 300 ] || RUN="$RUN-c$CHARS"
fi
[ "${RAG:-0}" != 1 ] || RUN="$RUN-rag"
[ "$DEPTH" = 20 ] || RUN="$RUN-d$DEPTH"
# SEED (default 0): the training seed (data order, dropout, adapter init);
# another seed trains its own run directory.
SEED=${SEED:-0}
[ "$SEED" = 0 ] || RUN="$RUN-seed$SEED"
read -r -a MODEL <<< "${MODEL_ARGS:-}"

mkdir -p "$RUNS" "$OUT"
if [ "${GOLD21:-0}" = 1 ]; then
    minilm_labels "$MINILM"
    "$BIN" label --teacher gold --pools "$D/dl21/bm25-top100.json" \
        --qrels "$D/dl21/qrels.txt" --depth 20 --out runs/train/labels-gold-dl21.jsonl
    # Merged once: a run resumes only with the labels file it started with
    # (train.json keeps its sha256, and the header names the merge command).
    [ -f "$LABELS" ] || "$BIN" merge-labels runs/train/labels-gold-dl21.jsonl "$MINILM" --out "$LABELS"
else
    minilm_labels "$LABELS" "$DEPTH" "${TRAIN_POOLS[@]:2}"
fi

# train SEED ARGS...: one cosine cycle of $STEPS steps (resumes; a finished
# run returns at once).
train() { seed=$1; shift
    "$BIN" train --pools "${TRAIN_POOLS[@]}" \
    --heldout-pools "$D/dl21/bm25-top100.json" --labels "$LABELS" --depth "$DEPTH" \
    "${SCORER[@]}" --max-chars "$CHARS" "${MODEL[@]}" --mode invariant --objective single-order \
    --steps "$STEPS" --lr "$LR" --lr-warmup "$WARMUP" --supervised-loss "$LOSS" \
    --checkpoint-every "$EVERY" --seed "$seed" "$@"; }
echo "== train"
train "$SEED" --out "$RUN"
# CYCLE2=1: a second cosine cycle of $STEPS steps from the first cycle's
# final adapter (a warm restart: fresh AdamW moments, the same schedule, a
# fresh data order from seed SEED + 20), into $RUN-cycle2; everything below
# (audits, selection, curve) is then of the second cycle.
if [ "${CYCLE2:-0}" = 1 ]; then
    echo "== train (second cycle)"
    train $(( SEED + 20 )) --init-adapter "$RUN/adapter" --out "$RUN-cycle2"
    RUN="$RUN-cycle2"
fi

# audit NAME ARGS: a DL19 audit into $OUT/NAME (or $AUDIT_OUT) with candidates
# cut at $AT characters (default the training cut). Always run: it resumes, and
# refuses a directory made with other settings (see batched_audit in
# report-lib.sh).
audit() { name=$1; shift
    echo "== audit $name"; "$BIN" audit \
    --pools "$D/dl19/bm25-top100.json" --qrels "$D/dl19/qrels.txt" \
    --depth 20 "${SCORER[@]}" --max-chars "${AT:-$CHARS}" "${MODEL[@]}" "$@" \
    --out "${AUDIT_OUT:-$OUT/$name}"; }
audit_at() { AT=$1 audit "${@:2}"; }
# One order each: an invariant score does not depend on the order (tested in
# crates/score/tests/modes.rs), so more orders would score the same again.
base=${BASE_AUDIT:-$OUT/off-the-shelf-invariant}
AUDIT_OUT=$base audit off-the-shelf-invariant --mode invariant --permutations 1
audit student-invariant --mode invariant --permutations 1 --adapter "$RUN/adapter"
dirs=("$base" "$OUT/student-invariant")
for c in ${EVAL_CHARS:-}; do
    audit_at "$c" "off-the-shelf-invariant-c$c" --mode invariant --permutations 1
    audit_at "$c" "student-invariant-c$c" --mode invariant --permutations 1 --adapter "$RUN/adapter"
    "$BIN" compare "$OUT/off-the-shelf-invariant-c$c" "$OUT/student-invariant-c$c" \
        --measures ndcg_at_10 --out "$OUT/compare-invariant-c$c.md"
done
if [ "${SELECT:-0}" = 1 ]; then
    echo "== select (held-out DL21 queries, nDCG@10; the order does not matter here)"
    heldout_select "$RUN/selection.json" 1 --runs "$RUN" --include-base --every $(( STEPS / 4 ))
    adapter="$(selected adapter "$RUN/selection.json")"
    # The final adapter is audited above; audit the selected checkpoint when it
    # is another one (and not the base model).
    if [ -n "$adapter" ] && [ "$(basename "$adapter")" != "step-$(printf %06d "$STEPS")" ]; then
        audit selected-invariant --mode invariant --permutations 1 --adapter "$adapter"
        dirs+=("$OUT/selected-invariant")
    fi
    cp "$RUN/selection.json" "$RUN/selection.md" "$OUT/"
fi
"$BIN" compare "${dirs[@]}" --measures ndcg_at_10 --out "$OUT/compare-invariant.md"

# BATCHED=1: the same student reading a batched window, on the 6 queries and
# 3 orders of the pilot's off-the-shelf audit (reports/training/off-the-shelf,
# same settings).
if [ "${BATCHED:-0}" = 1 ]; then
    audit student-batched --mode batched --queries 6 --permutations 3 --adapter "$RUN/adapter"
    compare_audits "$OUT/compare-batched.md" reports/training/off-the-shelf "$OUT/student-batched"
fi

if [ "${BENCH:-1}" = 1 ]; then
echo "== step time: pointwise windows vs invariant windows of 10, side by side"
"$BIN" train-bench --pools "$D/dl21/bm25-top100.json" --labels "$LABELS" --depth 20 \
    --max-chars 300 --template compact "${MODEL[@]}" --objectives single-order \
    --shapes batched:1,invariant:10 --steps 5 --out "$OUT/bench.json"
fi

cp "$RUN/train.json" "$RUN/log.jsonl" "$OUT/"
scripts/train_curve.py "$RUN" --bin $(( STEPS / 4 )) > "$OUT/curve.md"

if [ "${PROBE:-0}" = 1 ]; then
    echo "== linear probe of the frozen readout states"
    cargo build --release -p ocrank --example readout_features
    FEAT=target/release/examples/readout_features
    [ -f "$RUNS/features-train/meta.json" ] || "$FEAT" --pools "$D/dl21/bm25-top100.json" \
        "$D/dl22/bm25-top100.json" --depth 20 --layers 10,20,30 --out "$RUNS/features-train"
    [ -f "$RUNS/features-dl19/meta.json" ] || "$FEAT" --pools "$D/dl19/bm25-top100.json" \
        --depth 20 --layers 10,20,30 --out "$RUNS/features-dl19"
    scripts/readout_probe.py --train "$RUNS/features-train" --labels "$LABELS" \
        --eval "$RUNS/features-dl19" --qrels "$D/dl19/qrels.txt" --out "$OUT/probe"
fi
