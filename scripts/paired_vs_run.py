#!/usr/bin/env python3
"""Paired bootstrap of an audit's per-query nDCG@10 against a TREC run's
(e.g. the first stage), over the queries both have:

    target/release/ocrank eval --run RUN --qrels QRELS -q > run-per-query.txt
    scripts/paired_vs_run.py AUDIT_DIR run-per-query.txt [MEASURE]
    scripts/paired_vs_run.py SEED0_AUDIT,SEED1_AUDIT run-per-query.txt   # seed-pooled

The second argument may also be another audit's directory: its canonical
nDCG@10 is the reference (e.g. an invariant audit, whose score does not
depend on the order). The first may also be a per-query file of
`ocrank eval -q` (a run against a run, e.g. a teacher's ranking against
BM25; MEASURE is then ignored).

The first may also be several audit directories separated by commas (e.g.
the same training run at several seeds): each query's measure is then the
mean over them (the seed-pooled scorer; the interval treats these seeds as
fixed, as scripts/seed_pooled.py says), and every one must hold the same
queries.

MEASURE is a per-query key of the audit's results.json: ndcg_at_10 (the
canonical order, default), ndcg_at_10_mean or ndcg_at_10_worst (over the
audit's permutations).
"""
import json
import os
import random
import sys

from report_io import bootstrap_mean

audit, per_query = sys.argv[1], sys.argv[2]
measure = sys.argv[3] if len(sys.argv) > 3 else "ndcg_at_10"


def per_query_run(path):
    """nDCG@10 by query from `ocrank eval -q` output."""
    out = {}
    for line in open(path):
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].strip() == "ndcg_cut_10" and parts[1] != "all":
            out[parts[1]] = float(parts[2])
    return out


def per_query_audit(directory, key):
    """`key` by query from an audit's results.json."""
    try:
        per_query = json.load(open(f"{directory}/results.json"))["per_query"]
        return {q: float(m[key]) for q, m in per_query.items()}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{directory}/results.json: no per-query {key} ({e!r})")


if "," in audit:
    pooled = [per_query_audit(d, measure) for d in audit.split(",")]
    for d, p in zip(audit.split(","), pooled):
        if set(p) != set(pooled[0]):
            sys.exit(f"{d}: holds other queries than {audit.split(',')[0]}; pooling needs the same queries")
    a = {q: sum(p[q] for p in pooled) / len(pooled) for q in pooled[0]}
elif os.path.isdir(audit):
    a = per_query_audit(audit, measure)
else:
    a, measure = per_query_run(audit), "ndcg_at_10"
if os.path.isdir(per_query):
    b = per_query_audit(per_query, "ndcg_at_10")
else:
    b = per_query_run(per_query)
qs = sorted(set(a) & set(b))
if not qs:
    sys.exit("no query in common")
d = [a[q] - b[q] for q in qs]
mean, lo, hi = bootstrap_mean(d, random.Random(0))
print(f"{len(qs)} queries: audit {measure} {sum(a[q] for q in qs) / len(qs):.4f}, run {sum(b[q] for q in qs) / len(qs):.4f}, "
      f"difference {mean:+.4f} [{lo:+.4f}, {hi:+.4f}] (95% paired bootstrap, 10,000 resamples); "
      f"higher on {sum(x > 0 for x in d)} queries, lower on {sum(x < 0 for x in d)}, equal on {sum(x == 0 for x in d)}")
