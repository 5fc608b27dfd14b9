#!/usr/bin/env bash
# Engine benchmark (issue: scoring engine): ocrank's modes side by side, then
# llama.cpp on the same token ids of the same windows, in one run; writes
# bench/engine.json, bench/llamacpp.json and prints ratios.
#
#   scripts/bench_engine.sh [QUERIES]      (default 1 DL19 query, 100 candidates)
#
# Needs: the release binary (scripts/setup.sh), ../shared/data, and for the
# llama.cpp part a Python with llama-cpp-python==0.3.36 in $LLAMA_PY
# (default /work/venv-llama/bin/python; see scripts/llamacpp_parity.py).
set -euo pipefail
cd "$(dirname "$0")/.."
Q=${1:-1}
POOLS=../shared/data/msmarco/dl19/bm25-top100.json
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
BIN=target/release/ocrank
LLAMA_PY=${LLAMA_PY:-/work/venv-llama/bin/python}
mkdir -p bench
$BIN bench --pools $POOLS --queries "$Q" --depth 100 --width 20 --out bench/engine.json >/dev/null
if [ -x "$LLAMA_PY" ]; then
  tmp=$(mktemp -d)
  $BIN prompts --pools $POOLS --queries "$Q" --depth 100 --width 20 --tokens --out "$tmp/prompts.jsonl"
  "$LLAMA_PY" scripts/bench_llamacpp.py "$tmp/prompts.jsonl" $MODEL bench/llamacpp.json
  rm -rf "$tmp"
else
  echo "no llama-cpp-python at $LLAMA_PY: skipping the llama.cpp comparison" >&2
fi
python3 scripts/bench_report.py bench/engine.json bench/llamacpp.json > bench/README.md
cat bench/README.md
