#!/usr/bin/env python3
"""How decisive a checkpoint selection is, from `ocrank select`'s JSON:

    scripts/selection_margin.py SELECTION.json --out FILE.md

`ocrank select` picks the candidate with the highest held-out nDCG@10 (mean
over the held-out queries of the mean over M orders). With a dozen held-out
queries two checkpoints often differ by less than the queries' noise. For
every candidate the table gives its held-out nDCG@10 and its difference to
the selected one (candidate minus selected) with a paired bootstrap interval
over the held-out queries, as `ocrank compare` does for audits: a candidate
whose interval reaches 0 is not told apart from the selected one by this
held-out set.
"""
import argparse
import json
import random
import sys

from report_io import bootstrap_mean, fmt_interval, write_report

RESAMPLES = 10000


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: {e}")
    for key in ("candidates", "selected", "heldout_queries", "permutations"):
        if key not in doc:
            sys.exit(f"{path}: no `{key}`: not the output of `ocrank select`")
    queries = sorted(doc["heldout_queries"])
    for i, c in enumerate(doc["candidates"]):
        pq = c.get("per_query")
        if not isinstance(pq, dict) or sorted(pq) != queries:
            sys.exit(f"{path}: candidates[{i}] ({c.get('candidate')}): per_query does not "
                     "hold exactly the held-out queries")
    return doc, queries


def margins(doc, queries, rng, resamples=RESAMPLES):
    """(candidate, held-out nDCG@10, (mean, lo, hi) of candidate minus selected)
    for every candidate, in the selection's order."""
    sel = doc["selected"]["per_query"]
    out = []
    for c in doc["candidates"]:
        diffs = [c["per_query"][q] - sel[q] for q in queries]
        out.append((c["candidate"], c["ndcg_at_10_mean"], bootstrap_mean(diffs, rng, resamples)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("selection", help="the JSON of `ocrank select --out`")
    ap.add_argument("--out", required=True, help="Markdown file (a .json twin is written beside it)")
    args = ap.parse_args()
    doc, queries = load(args.selection)
    rows = margins(doc, queries, random.Random(0))
    selected = doc["selected"]["candidate"]
    lines = [
        f"Selection `{args.selection}`: {len(queries)} held-out queries, M = "
        f"{doc['permutations']}; selected **{selected}**. Difference: candidate minus "
        f"selected, paired bootstrap over the held-out queries ({RESAMPLES} resamples, 95%; "
        "* the interval excludes 0).",
        "",
        "| candidate | held-out nDCG@10 | minus selected [95% CI] |",
        "|---|---|---|",
    ]
    tied = []
    for name, value, (m, lo, hi) in rows:
        if name == selected:
            lines.append(f"| {name} (selected) | {value:.4f} | |")
            continue
        lines.append(f"| {name} | {value:.4f} | {fmt_interval(m, lo, hi)} |")
        if lo <= 0 <= hi:
            tied.append(name)
    lines += ["", f"Not told apart from the selected candidate: {len(tied)} of "
              f"{len(rows) - 1} others.", ""]
    text = "\n".join(lines)
    write_report(args.out, "scripts/selection_margin.py", text, {
        "selection": args.selection, "queries": len(queries), "resamples": RESAMPLES,
        "selected": selected,
        "candidates": [{"candidate": n, "heldout_ndcg_at_10": v, "minus_selected": list(d)}
                       for n, v, d in rows],
        "not_told_apart": tied})
    print(text)


if __name__ == "__main__":
    main()
