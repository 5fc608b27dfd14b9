#!/usr/bin/env python3
"""Treatment minus control over several training seeds, from the audits'
per-query measures:

    scripts/seed_pooled.py --pair TREAT_SEED1 CONTROL_SEED1 \
        --pair TREAT_SEED2 CONTROL_SEED2 [--measures tau_psi,...] --out FILE.md

Each --pair is two audit directories (`ocrank audit --out DIR`) of one
training seed: the treatment (e.g. OC-SFT) and its control (e.g.
single-order), trained from the same start on the same windows. For every
measure the table gives each seed's paired difference (the mean over
queries of treatment minus control, with a bootstrap interval over
queries, as `ocrank compare` does) and the pooled difference: each query's
difference averaged over the seeds, bootstrapped over queries. The pooled
interval treats these seeds as fixed; it says how sure the mean over these
training runs is, not how a new seed would fall. The spread between the
seeds' differences is what a single seed's interval leaves out, so the
table shows it beside them.

Every audit must hold the same queries; a pair whose audits differ in
scorer settings, depth, pools or permutations is refused.
"""
import argparse
import json
import random
import sys

from report_io import bootstrap_mean, fmt_interval as fmt, write_report

MEASURES = "ndcg_at_10,ndcg_at_10_mean,ndcg_at_10_worst,tau_psi,retained_set_overlap"
RESAMPLES = 10000


def load(directory):
    path = f"{directory}/results.json"
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: {e}")
    for key in ("per_query", "spec", "settings"):
        if key not in r:
            sys.exit(f"{path}: no `{key}`: not the results of `ocrank audit`")
    return r


def protocol(r):
    """What a treatment and its control must share: the scorer (width,
    template, mode, ...), the depth, the pools and the permutations."""
    s = r["settings"]
    return (json.dumps(s.get("scorer"), sort_keys=True), s.get("depth"),
            s.get("pools_sha256"), r["spec"].get("permutations"), r["spec"].get("seed"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", nargs=2, action="append", required=True,
                    metavar=("TREATMENT", "CONTROL"), help="two audit directories of one seed")
    ap.add_argument("--measures", default=MEASURES, help="per-query keys of results.json")
    ap.add_argument("--out", required=True, help="Markdown file (a .json twin is written beside it)")
    args = ap.parse_args()
    measures = args.measures.split(",")

    pairs = [(t, c, load(t), load(c)) for t, c in args.pair]
    queries = sorted(pairs[0][2]["per_query"])
    for t, c, rt, rc in pairs:
        for d, r in ((t, rt), (c, rc)):
            if sorted(r["per_query"]) != queries:
                sys.exit(f"{d}/results.json: its queries differ from {pairs[0][0]}'s")
            for m in measures:
                missing = [q for q in queries if m not in r["per_query"][q]]
                if missing:
                    sys.exit(f"{d}/results.json: per_query[{missing[0]}] has no `{m}`")
        if protocol(rt) != protocol(rc):
            sys.exit(f"{t} and {c} differ in scorer, depth, pools or permutations")

    rng = random.Random(0)
    rows, payload = [], {"pairs": [list(p) for p in args.pair], "queries": len(queries),
                         "resamples": RESAMPLES, "measures": {}}
    for m in measures:
        per_seed = [[rt["per_query"][q][m] - rc["per_query"][q][m] for q in queries]
                    for _, _, rt, rc in pairs]
        seeds = [bootstrap_mean(d, rng, RESAMPLES) for d in per_seed]
        mean_over_seeds = [sum(d[i] for d in per_seed) / len(per_seed)
                           for i in range(len(queries))]
        pooled = bootstrap_mean(mean_over_seeds, rng, RESAMPLES)
        spread = max(s[0] for s in seeds) - min(s[0] for s in seeds)
        rows.append(f"| {m} | " + " | ".join(fmt(*s) for s in seeds)
                    + f" | {fmt(*pooled)} | {spread:.4f} |")
        payload["measures"][m] = {"per_seed": [list(s) for s in seeds],
                                  "pooled": list(pooled), "seed_spread": spread}

    head = " | ".join(f"seed pair {i + 1}" for i in range(len(pairs)))
    text = "\n".join([
        f"Treatment minus control, {len(queries)} queries, paired bootstrap over queries "
        f"({RESAMPLES} resamples, 95%; * the interval excludes 0).",
        "",
        *[f"- pair {i + 1}: `{t}` minus `{c}`" for i, (t, c) in enumerate(args.pair)],
        "",
        f"| measure | {head} | pooled over the pairs | spread of the pairs' means |",
        "|---|" + "---|" * (len(pairs) + 2),
        *rows, ""])
    write_report(args.out, "scripts/seed_pooled.py", text, payload)
    print(text)


if __name__ == "__main__":
    main()
