#!/usr/bin/env python3
"""Why a retained-set overlap moves (or does not) when tau-PSI does: the
overlap at the audit's frozen threshold beside threshold-free decisions of the
same scores, and how many candidates sit within their own order noise of the
threshold.

    scripts/retention.py --pair TREATMENT CONTROL [--pair T C ...] --out FILE.md

Each --pair is two audit directories (`ocrank audit --out DIR`, M >= 2) of
one training seed, as for scripts/seed_pooled.py. For every audit, per query
(candidates as the audit scored them; permutation 0 is the canonical order):

- `overlap_frozen`: the retained-set overlap at the frozen threshold `t` of
  results.json (SPEC.md section 3; recomputed here and checked against
  results.json to 1e-9, so the script reads the audit as ocrank does);
- `overlap_median`: the same at a threshold that keeps half of the
  collection's canonical scores (the label-free audit's threshold), so every
  scorer is compared at the same retention rate;
- `overlap_top5`, `overlap_top10`, `overlap_top15`: mean pairwise Jaccard of
  the top-5, top-10 and top-15 sets (the reader's passages, the evaluated
  depth, three quarters of a depth-20 pool): a decision set of fixed size,
  free of any threshold;
- `share_kept`: share of scored slots at or above `t`;
- `keeps_whole_pool`: 1 when `t` keeps every scored slot of the query under
  every permutation (its overlap is then 1 whatever the scores do), else 0;
- `share_flipping`: share of the query's candidates kept under some
  permutations and dropped under others at `t` (the candidates that cost
  overlap);
- `share_near_t`: share of candidates whose mean score over permutations lies
  within one of its own standard deviations over permutations of `t` (how
  many candidates the threshold cuts through, in units of order noise; free
  of the score scale).

The table gives each audit's collection means, the number of queries whose
pool `t` cuts (keeps_whole_pool 0) and the overlap at `t` over those queries
alone (not paired: each scorer's own queries), and the share of the variance
of the candidates' mean scores (over permutations) that lies between queries
rather than within a pool (near 1, a global threshold keeps or drops whole
pools), then for every measure each
pair's treatment minus control and the difference pooled over the pairs
(per query averaged over the pairs), with paired-bootstrap intervals over
queries as scripts/seed_pooled.py computes them.
"""
import argparse
import json
import random
import statistics
import sys
from itertools import combinations

from report_io import audit_windows, bootstrap_mean, fmt_interval as fmt, write_report

RESAMPLES = 10000
MEASURES = ["overlap_frozen", "overlap_median", "overlap_top5", "overlap_top10", "overlap_top15",
            "share_kept", "keeps_whole_pool", "share_flipping", "share_near_t"]


def jaccard(a, b):
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def mean_pairwise(sets_by_perm, scored_by_perm):
    """Mean Jaccard over permutation pairs, each pair restricted to the
    candidates both permutations scored (as ocrank's overlap is)."""
    vals = []
    for i, j in combinations(sorted(sets_by_perm), 2):
        both = scored_by_perm[i] & scored_by_perm[j]
        vals.append(jaccard(sets_by_perm[i] & both, sets_by_perm[j] & both))
    return statistics.mean(vals) if vals else None


def top(scores, k):
    """The k best-scored candidates; ties broken by candidate id."""
    return set(sorted(scores, key=lambda c: (-scores[c], c))[:k])


def analyse(audit):
    try:
        with open(f"{audit}/results.json") as f:
            res = json.load(f)
        t = res["threshold"]["t"]
        reported = res["per_query"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{audit}/results.json: needs `threshold.t` and `per_query` ({e})")
    scores = {}  # qid -> permutation -> candidate -> score
    for w in audit_windows(audit):
        perm = scores.setdefault(str(w["qid"]), {}).setdefault(w["permutation"], {})
        for r in w["records"]:
            perm[str(r["candidate"])] = r["score"]
    canonical = sorted(s for q in scores.values() for s in q.get(0, {}).values())
    if not canonical:
        sys.exit(f"{audit}/windows.jsonl: no canonical-order (permutation 0) scores")
    t_median = canonical[len(canonical) // 2]
    per_query = {}
    for qid, perms in scores.items():
        if len(perms) < 2:
            sys.exit(f"{audit}/windows.jsonl: query {qid} has {len(perms)} permutation(s); needs 2 or more")
        scored = {p: set(s) for p, s in perms.items()}
        row = {
            "overlap_frozen": mean_pairwise({p: {c for c, x in s.items() if x >= t}
                                             for p, s in perms.items()}, scored),
            "overlap_median": mean_pairwise({p: {c for c, x in s.items() if x >= t_median}
                                             for p, s in perms.items()}, scored),
            "overlap_top5": mean_pairwise({p: top(s, 5) for p, s in perms.items()}, scored),
            "overlap_top10": mean_pairwise({p: top(s, 10) for p, s in perms.items()}, scored),
            "overlap_top15": mean_pairwise({p: top(s, 15) for p, s in perms.items()}, scored),
        }
        slots = [x for s in perms.values() for x in s.values()]
        row["share_kept"] = sum(x >= t for x in slots) / len(slots)
        row["keeps_whole_pool"] = float(all(x >= t for x in slots))
        by_cand = {}
        for s in perms.values():
            for c, x in s.items():
                by_cand.setdefault(c, []).append(x)
        flipping = near = 0
        for xs in by_cand.values():
            kept = {x >= t for x in xs}
            flipping += len(kept) == 2
            if len(xs) > 1:
                near += abs(statistics.mean(xs) - t) < statistics.stdev(xs)
        row["share_flipping"] = flipping / len(by_cand)
        row["share_near_t"] = near / len(by_cand)
        want = reported.get(qid, {}).get("retained_set_overlap")
        if want is not None and abs(want - row["overlap_frozen"]) > 1e-9:
            sys.exit(f"{audit}: query {qid}: overlap at t recomputed as {row['overlap_frozen']:.12f}, "
                     f"results.json says {want:.12f}")
        per_query[qid] = row
    cut = [r["overlap_frozen"] for r in per_query.values() if not r["keeps_whole_pool"]]
    # Candidates' mean scores over permutations: the share of their variance
    # that lies between queries (a global threshold sorts whole pools when
    # it is near 1) against the share within a query's pool.
    means = {q: [statistics.mean(x[c] for x in perms.values() if c in x)
                 for c in set().union(*map(set, perms.values()))] for q, perms in scores.items()}
    between = statistics.pvariance([statistics.mean(m) for m in means.values()])
    within = statistics.mean(statistics.pvariance(m) for m in means.values())
    return {"audit": audit, "t": t, "t_median": t_median, "per_query": per_query,
            "cut_queries": len(cut), "overlap_frozen_where_cut": statistics.mean(cut) if cut else None,
            "between_query_share": between / (between + within) if between + within > 0 else None,
            "collection": {m: statistics.mean(r[m] for r in per_query.values()) for m in MEASURES}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", nargs=2, action="append", required=True,
                    metavar=("TREATMENT", "CONTROL"), help="two audit directories of one seed")
    ap.add_argument("--out", required=True, help="Markdown file (a .json twin is written beside it)")
    args = ap.parse_args()

    audits = {}
    for pair in args.pair:
        for d in pair:
            if d not in audits:
                audits[d] = analyse(d)
    queries = sorted(audits[args.pair[0][0]]["per_query"])
    for d, a in audits.items():
        if sorted(a["per_query"]) != queries:
            sys.exit(f"{d}: its queries differ from {args.pair[0][0]}'s")

    lines = [f"{len(queries)} queries. Collection means per audit (frozen t from results.json; "
             "the median threshold keeps half of the canonical scores).", "",
             "| audit | frozen t | median t | " + " | ".join(MEASURES)
             + " | queries t cuts | overlap_frozen where t cuts | between-query share of score variance |",
             "|---|---|---|" + "---|" * (len(MEASURES) + 3)]
    for d, a in audits.items():
        where, between = a["overlap_frozen_where_cut"], a["between_query_share"]
        lines.append(f"| `{d}` | {a['t']:.4f} | {a['t_median']:.4f} | "
                     + " | ".join(f"{a['collection'][m]:.4f}" for m in MEASURES)
                     + f" | {a['cut_queries']} | {'none' if where is None else f'{where:.4f}'}"
                     + f" | {'none' if between is None else f'{between:.3f}'} |")

    rng = random.Random(0)
    payload = {"pairs": [list(p) for p in args.pair], "queries": len(queries), "resamples": RESAMPLES,
               "audits": {d: {k: a[k] for k in ("t", "t_median", "cut_queries", "overlap_frozen_where_cut",
                                                "between_query_share", "collection")} for d, a in audits.items()},
               "differences": {}}
    head = " | ".join(f"pair {i + 1}" for i in range(len(args.pair)))
    lines += ["", "Treatment minus control, paired bootstrap over queries "
              f"({RESAMPLES} resamples, 95%; * the interval excludes 0):", "",
              *[f"- pair {i + 1}: `{t}` minus `{c}`" for i, (t, c) in enumerate(args.pair)], "",
              f"| measure | {head} | pooled over the pairs |", "|---|" + "---|" * (len(args.pair) + 1)]
    for m in MEASURES:
        per_pair = [[audits[t]["per_query"][q][m] - audits[c]["per_query"][q][m] for q in queries]
                    for t, c in args.pair]
        each = [bootstrap_mean(d, rng, RESAMPLES) for d in per_pair]
        pooled = bootstrap_mean([statistics.mean(d[i] for d in per_pair) for i in range(len(queries))],
                                rng, RESAMPLES)
        lines.append(f"| {m} | " + " | ".join(fmt(*e) for e in each) + f" | {fmt(*pooled)} |")
        payload["differences"][m] = {"per_pair": [list(e) for e in each], "pooled": list(pooled)}
    text = "\n".join(lines) + "\n"
    write_report(args.out, "scripts/retention.py", text, payload)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
