#!/usr/bin/env python3
"""Where does a batched scorer's score variance come from: the query, the slot
or the candidate?

    scripts/score_variance.py AUDIT_DIR [AUDIT_DIR ...] [--out FILE.md]
    scripts/score_variance.py --synthetic     # self-check on scores with a known candidate effect

Reads each audit's windows.jsonl (every scored slot of every permutation) and
reports the share of the score variance that each grouping explains (R^2 of
the group means): slot, query, query + slot, query + candidate. Within a
query, the candidate's share is the test-retest signal of content: the same
candidate scored in M orders. With few orders per candidate, group means fit
noise too, so the candidate share is set beside its null: the same statistic
after the scores are shuffled within each (query, slot) cell (500 shuffles,
seed 0): what a scorer with the same query and slot effects but no content
signal would reach.
"""
import argparse
import collections
import random
import statistics
import sys

from report_io import audit_windows, write_report


def r2(rows, key, scores):
    groups = collections.defaultdict(list)
    for r, s in zip(rows, scores):
        groups[key(r)].append(s)
    mean = statistics.fmean(scores)
    total = sum((s - mean) ** 2 for s in scores)
    within = sum(sum((s - statistics.fmean(v)) ** 2 for s in v) for v in groups.values())
    return 1.0 - within / total if total > 0 else float("nan")


def within_query_share(rows, key, scores):
    """Share of the within-query variance explained by `key` (nested in the query)."""
    q = r2(rows, lambda r: r["qid"], scores)
    qk = r2(rows, lambda r: (r["qid"], key(r)), scores)
    return (qk - q) / (1.0 - q) if q < 1.0 else float("nan")


def synthetic():
    """20 queries x 20 candidates x 3 orders, B = 10: score = 0.5 x a candidate
    effect (sd 1) + a slot gradient + noise (sd 1). The candidate share must
    clear its null."""
    rng = random.Random(1)
    rows = []
    for q in range(20):
        effect = [rng.gauss(0, 1) for _ in range(20)]
        for _ in range(3):
            order = list(range(20))
            rng.shuffle(order)
            for i, c in enumerate(order):
                slot = i % 10 + 1
                score = 0.5 * effect[c] + (11 - slot) * 0.3 + rng.gauss(0, 1)
                rows.append({"qid": str(q), "candidate": str(c), "slot": slot, "score": score})
    return rows


def read_rows(directory):
    return [r for w in audit_windows(directory) for r in w["records"]]


def analyse(directory, shuffles=500):
    rows = synthetic() if directory == "--synthetic" else read_rows(directory)
    scores = [r["score"] for r in rows]
    if len({(r["qid"], r["candidate"]) for r in rows}) == len(rows):
        print(f"warning: {directory} scores every candidate once (one order): the candidate "
              "share is 1 by construction, and the slot stands for the order's rank", file=sys.stderr)
    cand = lambda r: r["candidate"]
    slot = lambda r: r["slot"]
    observed = within_query_share(rows, cand, scores)
    rng = random.Random(0)
    cells = collections.defaultdict(list)
    for i, r in enumerate(rows):
        cells[(r["qid"], r["slot"])].append(i)
    null = []
    for _ in range(shuffles):
        shuffled = scores[:]
        for idx in cells.values():
            vals = [scores[i] for i in idx]
            rng.shuffle(vals)
            for i, v in zip(idx, vals):
                shuffled[i] = v
        null.append(within_query_share(rows, cand, shuffled))
    null.sort()
    return {
        "audit": directory,
        "scored_slots": len(rows),
        "score_sd": statistics.pstdev(scores),
        "r2_slot": r2(rows, slot, scores),
        "r2_query": r2(rows, lambda r: r["qid"], scores),
        "r2_query_slot": r2(rows, lambda r: (r["qid"], slot(r)), scores),
        "within_query_slot_share": within_query_share(rows, slot, scores),
        "within_query_candidate_share": observed,
        "candidate_share_null_mean": statistics.fmean(null),
        "candidate_share_null_p95": null[int(0.95 * len(null))],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("audits", nargs="*")
    ap.add_argument("--synthetic", action="store_true", help="add the synthetic self-check row")
    ap.add_argument("--out")
    args = ap.parse_args()
    cols = [
        ("scored slots", "scored_slots", "{}"),
        ("score sd", "score_sd", "{:.4f}"),
        ("R2 slot", "r2_slot", "{:.3f}"),
        ("R2 query", "r2_query", "{:.3f}"),
        ("R2 query+slot", "r2_query_slot", "{:.3f}"),
        ("within query: slot", "within_query_slot_share", "{:.3f}"),
        ("within query: candidate", "within_query_candidate_share", "{:.3f}"),
        ("candidate, null mean", "candidate_share_null_mean", "{:.3f}"),
        ("candidate, null 95%", "candidate_share_null_p95", "{:.3f}"),
    ]
    lines = ["| audit | " + " | ".join(c[0] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    if not args.audits and not args.synthetic:
        ap.error("give audit directories or --synthetic")
    rows = []
    for d in args.audits + (["--synthetic"] if args.synthetic else []):
        a = analyse(d)
        rows.append(a)
        lines.append(f"| {d} | " + " | ".join(fmt.format(a[k]) for _, k, fmt in cols) + " |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        write_report(args.out, "scripts/score_variance.py", text, {"audits": rows})


if __name__ == "__main__":
    main()
