#!/usr/bin/env python3
"""How much ranking signal a labels file holds for each source of training
queries, and how the training loss went on each source.

Queries are split into two sources by whether the query id starts with
--prefix (e.g. `2024-` for the TREC RAG 2024 topics). For each source: the
number of queries and labels, the mean label, and the mean over windows of
the labels' standard deviation within a window (population sd; a window is
a run of --width consecutive labels of one query in the labels file, which
`ocrank label` writes in pool order, the order `ocrank train` cuts its
windows in). A small within-window spread means the teacher asks for nearly
the same grade for every candidate of a window: a constant score fits it.

With --log (an `ocrank train` run's log.jsonl), the ratio of the
supervised loss to the constant score's loss (sum over sum) per --bin steps
and source, by each step's logged qid: `split_ratios` of
scripts/train_curve.py, which prints the same table with --split-prefix.

    scripts/label_source_spread.py LABELS.jsonl --prefix 2024- [--width 10] \\
        [--log RUN/log.jsonl --bin 120] --out FILE.md    (and FILE.json)
"""
import argparse
import statistics
from collections import defaultdict

from report_io import read_jsonl, read_labels, write_report
from train_curve import split_ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("labels")
    ap.add_argument("--prefix", required=True, help="query ids of the first source start with this")
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument("--log", help="an `ocrank train` log.jsonl")
    ap.add_argument("--bin", type=int, default=120)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.width < 1 or a.bin < 1:
        ap.error("--width and --bin must be positive")

    def source(qid):
        return f"{a.prefix}*" if qid.startswith(a.prefix) else "other"

    by_query = defaultdict(list)
    for (qid, _), label in read_labels(a.labels).items():
        by_query[qid].append(label)
    rows = {}
    for name in (f"{a.prefix}*", "other"):
        qs = [q for q in by_query if source(q) == name]
        if not qs:
            continue
        labels = [x for q in qs for x in by_query[q]]
        spreads = [statistics.pstdev(by_query[q][i:i + a.width])
                   for q in qs for i in range(0, len(by_query[q]), a.width)]
        rows[name] = {"queries": len(qs), "labels": len(labels),
                      "mean_label": statistics.mean(labels),
                      "windows": len(spreads),
                      "mean_window_sd": statistics.mean(spreads)}
    text = [f"Labels `{a.labels}`, windows of {a.width} consecutive labels per query.\n",
            "| source | queries | labels | mean label | windows | mean sd within a window |",
            "|---|---|---|---|---|---|"]
    for name, r in rows.items():
        text.append(f"| {name} | {r['queries']} | {r['labels']} | {r['mean_label']:.3f} | "
                    f"{r['windows']} | {r['mean_window_sd']:.3f} |")
    payload = {"labels": a.labels, "width": a.width, "sources": rows}

    if a.log:
        log = [r for _, r in read_jsonl(a.log) if "supervised" in r]
        if any("constant" not in r for r in log):
            raise SystemExit(f"{a.log}: a step without the logged `constant` (an older log: "
                             "use scripts/train_curve.py RUN --split-prefix, which rebuilds it)")
        text += ["", f"Training log `{a.log}`: supervised loss over the constant score's, by source.\n",
                 "| steps | source | steps of it | ratio |", "|---|---|---|---|"]
        payload["log"] = a.log
        payload["bins"] = []
        for first, last, name, count, ratio in split_ratios(
                log, [r["constant"] for r in log], a.bin, source):
            text.append(f"| {first}-{last} | {name} | {count} | {ratio:.3f} |")
            payload["bins"].append({"first_step": first, "source": name,
                                    "steps": count, "ratio": ratio})
    write_report(a.out, "scripts/label_source_spread.py", "\n".join(text) + "\n", payload)
    print("\n".join(text))


if __name__ == "__main__":
    main()
