#!/usr/bin/env python3
"""Merge `ocrank label` files query by query: each query takes its labels from
the first file that has it, whole (a query's candidates never mix teachers).

Usage:
    scripts/merge_labels.py --out MERGED FIRST SECOND [...]

Example (gold grades where DL21 has qrels, MiniLM labels for DL22):
    scripts/merge_labels.py --out runs/train/labels-gold21-minilm22.jsonl \
        runs/train/labels-gold-dl21.jsonl runs/train/labels-minilm.jsonl

The header says teacher "merged:<teacher>+<teacher>..." and keeps every
source's header, sha256 and the query ids it gave, so a trained adapter still
says what taught it. A file whose header is not an `ocrank label` header, a
label outside [0, 3], or a (query, candidate) repeated inside one file is an
error naming the file and line; no label is dropped without being counted.
"""
import argparse
import hashlib
import json
import sys


def read(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines:
        sys.exit(f"{path}: empty labels file (no header line)")
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError as e:
        sys.exit(f"{path}:1: header is not JSON: {e}")
    if head.get("ocrank_labels") != 1:
        sys.exit(f"{path}:1: field ocrank_labels: not an `ocrank label` header (version 1)")
    by_query = {}
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"{path}:{n}: not JSON: {e}")
        for field in ("qid", "candidate", "label"):
            if field not in r:
                sys.exit(f"{path}:{n}: field {field}: missing")
        label = r["label"]
        if not isinstance(label, (int, float)) or not 0.0 <= label <= 3.0:
            sys.exit(f"{path}:{n}: field label: {label!r} is not a grade in [0, 3]")
        cands = by_query.setdefault(str(r["qid"]), {})
        if r["candidate"] in cands:
            sys.exit(f"{path}:{n}: field candidate: query {r['qid']!r}, candidate {r['candidate']!r} is labelled twice")
        cands[r["candidate"]] = float(label)
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return head, by_query, sha


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+", help="labels files, first wins per query")
    a = ap.parse_args()
    if len(a.files) < 2:
        sys.exit("give at least two labels files to merge")
    merged = {}
    sources = []
    for path in a.files:
        head, by_query, sha = read(path)
        taken = sorted(q for q in by_query if q not in merged)
        shadowed = sorted(q for q in by_query if q in merged)
        for q in taken:
            merged[q] = by_query[q]
        sources.append({
            "file": path,
            "sha256": sha,
            "header": head,
            "queries_taken": taken,
            "queries_shadowed": len(shadowed),
            "labels_taken": sum(len(by_query[q]) for q in taken),
        })
        print(f"{path}: {len(taken)} queries taken ({sources[-1]['labels_taken']} labels), "
              f"{len(shadowed)} shadowed by an earlier file", file=sys.stderr)
    header = {
        "ocrank_labels": 1,
        "teacher": "merged:" + "+".join(s["header"].get("teacher", "?") for s in sources),
        "orders": min(int(s["header"].get("orders", 1)) for s in sources),
        "provenance": {
            "command": "scripts/merge_labels.py --out " + a.out + " " + " ".join(a.files),
            "rule": "each query takes its labels, whole, from the first file that has it",
            "sources": sources,
        },
    }
    n = 0
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, sort_keys=True) + "\n")
        for q in sorted(merged):
            for c in sorted(merged[q]):
                f.write(json.dumps({"candidate": c, "label": merged[q][c], "qid": q}) + "\n")
                n += 1
    print(f"{n} labels for {len(merged)} queries -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
