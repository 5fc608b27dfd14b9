#!/usr/bin/env python3
"""Compare training-label files (`ocrank label` JSONL) over the candidates
they share: each file's mean and standard deviation, the correlation of
every pair of files, and, with --pools and --width, each file's mean label
by slot of the canonical (BM25-ordered) contiguous windows of the top
--depth candidates (the slot prior that training in canonical order can
learn) and the correlation of the labels of two candidates that share a
canonical window, each label centred on its query's mean (a teacher that
grades the window, not the candidate, gives its mates the same label: near
1; an order-free teacher: near the pools' own correlation; centring on the
query's mean biases it by about -1/(depth - 1), -0.05 at depth 20).

    scripts/label_stats.py A.jsonl B.jsonl [...] [--pools P.json ... --width 4 --depth 20]
    scripts/label_stats.py --synthetic     # self-check of the mates' correlation
"""
import argparse
import itertools
import json
import random
import statistics
import sys

from report_io import read_labels



def canonical_slots(pools, width, depth):
    """(qid, candidate) -> (0-based window, 1-based slot) in the canonical
    contiguous windows (rank_llm `bm25-top100.json` pools: a list of
    {query, hits})."""
    slot = {}
    for path in pools:
        try:
            with open(path) as f:
                data = json.load(f)
            for p in data:
                for i, h in enumerate(p["hits"][:depth]):
                    slot[(str(h["qid"]), str(h["docid"]))] = (i // width, i % width + 1)
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"{path}: not a rank_llm pools file ({e})")
    return slot


def synthetic():
    """Labels with a known structure: a window grade shared by the mates
    (correlation near 1) and labels drawn per candidate (near 0)."""
    rng = random.Random(0)
    slot, window_grade, own = {}, {}, {}
    for q in range(50):
        for i in range(20):
            k = (f"q{q}", f"c{i}")
            slot[k] = (i // 4, i % 4 + 1)
            window_grade.setdefault((k[0], i // 4), rng.gauss(0, 1))
            own[k] = rng.gauss(0, 1)
    shared = sorted(slot)
    window = {k: window_grade[k[0], slot[k][0]] + 0.1 * own[k] for k in shared}
    for name, labels, lo, hi in [("window", window, 0.95, 1.0), ("candidate", own, -0.1, 0.1)]:
        xs, ys = mate_pairs(labels, shared, slot)
        r = statistics.correlation(xs, ys)
        assert len(xs) == 50 * 5 * 12, len(xs)
        assert lo <= r <= hi, (name, r)
        print(f"synthetic {name} labels: mates' corr {r:.3f} (expected in [{lo}, {hi}])")
    print("ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("labels", nargs="*")
    ap.add_argument("--synthetic", action="store_true", help="self-check of the mates' correlation")
    ap.add_argument("--pools", nargs="*", default=[])
    ap.add_argument("--width", type=int)
    ap.add_argument("--depth", type=int, default=20)
    args = ap.parse_args()
    if args.synthetic:
        return synthetic()
    if not args.labels:
        ap.error("give one or more label files (or --synthetic)")
    files = {p: read_labels(p) for p in args.labels}
    shared = sorted(set.intersection(*(set(v) for v in files.values())))
    if not shared:
        sys.exit("the label files share no candidate")
    print(f"{len(shared)} shared candidates")
    for p, v in files.items():
        xs = [v[k] for k in shared]
        print(f"{p}: mean {statistics.fmean(xs):.3f}, sd {statistics.pstdev(xs):.3f}")
    for (p, a), (q, b) in itertools.combinations(files.items(), 2):
        r = statistics.correlation([a[k] for k in shared], [b[k] for k in shared])
        print(f"corr {p} ~ {q}: {r:.3f}")
    if args.pools:
        if not args.width:
            ap.error("--pools needs --width")
        slot = canonical_slots(args.pools, args.width, args.depth)
        for p, v in files.items():
            by = {}
            for k in shared:
                if k in slot:
                    by.setdefault(slot[k][1], []).append(v[k])
            means = ", ".join(f"slot {s}: {statistics.fmean(by[s]):.3f} (n {len(by[s])})" for s in sorted(by))
            print(f"{p}: mean label by canonical slot at width {args.width}: {means}")
            xs, ys = mate_pairs(v, shared, slot)
            print(f"{p}: canonical window-mates' label corr at width {args.width}: "
                  f"{statistics.correlation(xs, ys):.3f} ({len(xs)} ordered pairs)")


def mate_pairs(labels, shared, slot):
    """Every ordered pair of distinct candidates in the same canonical window,
    as two lists of query-centred labels."""
    by_query = {}
    for k in shared:
        by_query.setdefault(k[0], []).append(k)
    centred = {}
    for keys in by_query.values():
        m = statistics.fmean(labels[k] for k in keys)
        centred.update((k, labels[k] - m) for k in keys)
    windows = {}
    for k in shared:
        if k in slot:
            windows.setdefault((k[0], slot[k][0]), []).append(k)
    xs, ys = [], []
    for members in windows.values():
        for a, b in itertools.permutations(members, 2):
            xs.append(centred[a])
            ys.append(centred[b])
    return xs, ys


if __name__ == "__main__":
    main()
