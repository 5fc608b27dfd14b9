#!/usr/bin/env bash
# Answer flip on HotpotQA (SPEC.md section 3): audits of a batched and an
# invariant scorer over M permutations of each question's 10 paragraphs
# (BM25 order as the canonical one), then `ocrank answer`: the frozen reader
# (the base model, greedy) answers from each permutation's top 5.
# Resumable: audits and answers keep what they finished.
set -euo pipefail
H=${H:-runs/hotpot}
R=${R:-reports/answer-flip}
M=${M:-5}
DEV=../shared/data/hotpotqa/dev-distractor-100.jsonl
mkdir -p "$H" "$R"
if [ ! -f "$H/bm25-pools.jsonl" ]; then
    scripts/hotpotqa_bm25.py "$DEV" --pools "$H/bm25-pools.jsonl" --qrels "$H/qrels.txt" --run "$H/bm25.trec"
fi
A="--pools $H/bm25-pools.jsonl --qrels $H/qrels.txt --depth 10 --width 10 --template compact --max-chars 300 --permutations $M"
target/release/ocrank audit $A --mode batched --out "$R/off-the-shelf-batched"
target/release/ocrank audit $A --mode invariant --adapter adapters/invariant-d40-2cycles-seed0 \
    --out "$R/student-invariant"
B="--pools $H/bm25-pools.jsonl --answers $DEV"
target/release/ocrank answer $B --scores "$R/off-the-shelf-batched" --out "$R/answers-off-the-shelf-batched"
target/release/ocrank answer $B --scores "$R/student-invariant" \
    --versus "$R/answers-off-the-shelf-batched" --out "$R/answers-student-invariant"
# The reader on the first stage's top 5 (one ranking: no flip)
target/release/ocrank answer $B --run "$H/bm25.trec" --versus "$R/answers-student-invariant" \
    --out "$R/answers-bm25"
