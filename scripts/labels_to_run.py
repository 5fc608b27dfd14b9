#!/usr/bin/env python3
"""A labels file (`ocrank label`) as a TREC run: each query's candidates
ranked by their grade target, ties kept in the labels file's order (the
pool's order). It shows what a teacher's own ranking is worth, the ceiling
a student trained on its labels can reach:

    ocrank label --teacher embedding --pools POOLS --depth 20 ... --out labels.jsonl
    scripts/labels_to_run.py labels.jsonl > teacher.trec
    ocrank eval --run teacher.trec --qrels QRELS
"""
import json
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
path = sys.argv[1]
by_query = {}
with open(path) as f:
    header = json.loads(f.readline())
    if "ocrank_labels" not in header:
        sys.exit(f"{path}:1: not an ocrank labels file (no ocrank_labels header)")
    tag = header.get("teacher", "labels")
    for n, line in enumerate(f, start=2):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid, cand, label = row["qid"], row["candidate"], float(row["label"])
        except (ValueError, KeyError) as e:
            sys.exit(f"{path}:{n}: {e!r}")
        by_query.setdefault(qid, []).append((cand, label))
for qid, rows in by_query.items():
    # Python's sort is stable: equal labels keep the file's order.
    ranked = sorted(rows, key=lambda r: -r[1])
    for rank, (cand, label) in enumerate(ranked, start=1):
        print(f"{qid} Q0 {cand} {rank} {label:.6f} {tag}")
