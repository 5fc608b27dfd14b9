#!/usr/bin/env python3
"""What a trained scorer's stability is worth in inference cost: a treatment
scored once (K = 1) against its control averaged over K permutations
(batched self-consistency, BSC@K, SPEC.md section 4) for every K of the
control's BSC curve.

    scripts/bsc_match.py --pair TREATMENT CONTROL [--pair T C ...] [--same-k] --out FILE.md

Each --pair is two audit directories (`ocrank audit --bsc K --out DIR`) of
one training seed, e.g. OC-SFT and single-order. The control's audit must
hold a BSC curve (`results.json` key `bsc`: rerunning the audit's own command
with `--bsc 5` on an M = 10 audit scores nothing new); the treatment is read
at K = 1 (its plain audit). For every K and measure the table gives each
pair's treatment minus control-at-K and the difference pooled over the pairs
(per query averaged over the pairs), with paired-bootstrap intervals over
queries as scripts/seed_pooled.py computes them. BSC@K's own measures come
from G disjoint groups of K permutations (G = 2 for K = 4, 5 at M = 10):
the expected tau-PSI does not depend on G, its noise does. With --same-k
the treatment is read at the same K as the control (both need a curve):
the two scorers at equal inference cost.
"""
import argparse
import json
import random
import statistics
import sys

from report_io import bootstrap_mean, fmt_interval as fmt, write_report

MEASURES = ["tau_psi", "ndcg_at_10_mean", "retained_set_overlap"]
RESAMPLES = 10000


def curve(directory):
    """K -> (groups, per-query measures) of an audit's BSC curve; K = 1 is
    the plain audit when the curve is absent."""
    path = f"{directory}/results.json"
    try:
        with open(path) as f:
            r = json.load(f)
        out = {1: (r["spec"]["permutations"], r["per_query"])}
        for b in r.get("bsc") or []:
            out[int(b["k"])] = (int(b["groups"]), b["per_query"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{path}: not the results of `ocrank audit` ({e})")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", nargs=2, action="append", required=True,
                    metavar=("TREATMENT", "CONTROL"), help="two audit directories of one seed")
    ap.add_argument("--same-k", action="store_true",
                    help="read the treatment at the control's K too (equal inference cost)")
    ap.add_argument("--out", required=True, help="Markdown file (a .json twin is written beside it)")
    args = ap.parse_args()
    # tk(k): the treatment's K paired with the control's K.
    tk = (lambda k: k) if args.same_k else (lambda k: 1)

    pairs = [(t, c, curve(t), curve(c)) for t, c in args.pair]
    ks = sorted(set.intersection(*(set(cc) & (set(tc) if args.same_k else set(cc))
                                   for _, _, tc, cc in pairs)))
    if ks == [1]:
        sys.exit(f"{args.pair[0][1]}/results.json: no BSC curve (rerun its audit with --bsc K)")
    queries = sorted(pairs[0][2][1][1])
    for t, c, tc, cc in pairs:
        for d, pq in [(t, tc[tk(k)][1]) for k in ks] + [(c, cc[k][1]) for k in ks]:
            if sorted(pq) != queries:
                sys.exit(f"{d}/results.json: its queries differ from {args.pair[0][0]}'s")
            for m in MEASURES:
                missing = [q for q in queries if m not in pq[q]]
                if missing:
                    sys.exit(f"{d}/results.json: per_query[{missing[0]}] has no `{m}`")

    rng = random.Random(0)
    head = " | ".join(f"pair {i + 1}" for i in range(len(pairs)))
    what = "Treatment and control both at BSC@K" if args.same_k else "Treatment (K = 1) minus control at BSC@K"
    lines = [f"{what}, {len(queries)} queries, paired bootstrap "
             f"over queries ({RESAMPLES} resamples, 95%; * the interval excludes 0).", "",
             *[f"- pair {i + 1}: `{t}` minus `{c}`" for i, (t, c) in enumerate(args.pair)], "",
             "Collection means (each scorer at each K it is read at, from G groups of K permutations):", "",
             "| scorer | K | G | " + " | ".join(MEASURES) + " |", "|---|---|---|" + "---|" * len(MEASURES)]
    for t, c, tc, cc in pairs:
        for d, cur in ((t, tc), (c, cc)):
            for k in sorted({tk(k) for k in ks} if d == t else ks):
                g, pq = cur[k]
                lines.append(f"| `{d}` | {k} | {g} | "
                             + " | ".join(f"{statistics.mean(pq[q][m] for q in queries):.4f}" for m in MEASURES)
                             + " |")
    payload = {"pairs": [list(p) for p in args.pair], "same_k": args.same_k, "queries": len(queries),
               "resamples": RESAMPLES, "differences": {}}
    for m in MEASURES:
        lines += ["", f"{m}, treatment{' at BSC@K' if args.same_k else ''} minus control at BSC@K:", "",
                  f"| K | {head} | pooled over the pairs |", "|---|" + "---|" * (len(pairs) + 1)]
        payload["differences"][m] = {}
        for k in ks:
            per_pair = [[tc[tk(k)][1][q][m] - cc[k][1][q][m] for q in queries] for _, _, tc, cc in pairs]
            each = [bootstrap_mean(d, rng, RESAMPLES) for d in per_pair]
            pooled = bootstrap_mean([statistics.mean(d[i] for d in per_pair)
                                     for i in range(len(queries))], rng, RESAMPLES)
            lines.append(f"| {k} | " + " | ".join(fmt(*e) for e in each) + f" | {fmt(*pooled)} |")
            payload["differences"][m][str(k)] = {"per_pair": [list(e) for e in each],
                                                 "pooled": list(pooled)}
    text = "\n".join(lines) + "\n"
    write_report(args.out, "scripts/bsc_match.py", text, payload)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
