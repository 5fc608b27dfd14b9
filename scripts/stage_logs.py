#!/usr/bin/env python3
"""Summary of OC-SFT training logs side by side (reports/training/width10/crossed.md):
per run, the mean consistency value over the first steps and over the rest
(after lambda's warm-up), the supervised loss over the constant score's on the
same windows for the rest, the median step time, how many of the drawn windows
are first windows of their pool (BM25 ranks 1 to WIDTH) and the mean
within-window variance of the drawn windows' labels (windows rebuilt from the
run's train.json as scripts/train_curve.py does; every logged query id is
checked against its window).

    scripts/stage_logs.py RUN_DIR [RUN_DIR ...] [--warmup 12]

Prints Markdown.
"""
import argparse
import json
import statistics
from pathlib import Path

from train_curve import is_heldout


def windows(run):
    doc = json.loads((run / "train.json").read_text())
    cmd, st = doc["command"].split(), doc["settings"]

    def flag(name):
        out = []
        for tok in cmd[cmd.index(name) + 1:] if name in cmd else []:
            if tok.startswith("--"):
                break
            out.append(tok)
        return out

    pools = flag("--pools")
    heldout = st.get("heldout_pools") or flag("--heldout-pools") or pools
    depth, width = st["depth"], st["scorer"]["width"]
    labels = {}
    for line in Path(flag("--labels")[0]).read_text().splitlines()[1:]:
        d = json.loads(line)
        labels[(str(d["qid"]), str(d["candidate"]))] = d["label"]
    out = []
    for f in pools:
        for p in json.loads(Path(f).read_text()):
            qid = str(p["hits"][0]["qid"])
            if f in heldout and is_heldout(qid, st["heldout_fraction"], st["split_seed"]):
                continue
            ids = [str(h["docid"]) for h in p["hits"][:depth]]
            for s in range(0, depth, width):
                out.append((qid, s == 0, [labels[(qid, c)] for c in ids[s:s + width]]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--warmup", type=int, default=12)
    a = ap.parse_args()
    k = a.warmup
    print(f"| run | consistency, steps 1-{k} | consistency, steps {k + 1}- | supervised / constant, "
          f"steps {k + 1}- | median step (s) | first windows drawn | within-window label variance |")
    print("|---|---|---|---|---|---|---|")
    for r in a.runs:
        run = Path(r)
        log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
        w = windows(run)
        drawn = []
        for d in log:
            qid, first, ys = w[d["example"]]
            if qid != str(d["qid"]):
                raise SystemExit(f"{run}: step {d['step']} logged query {d['qid']}, window {d['example']} is {qid}")
            drawn.append((first, statistics.pvariance(ys)))
        c = [d["consistency"] for d in log]
        ratio = sum(d["supervised"] for d in log[k:]) / sum(d["constant"] for d in log[k:])
        print(f"| `{run.name}` | {statistics.fmean(c[:k]):.2f} | {statistics.fmean(c[k:]):.2f} | {ratio:.2f} | "
              f"{statistics.median(d['seconds'] for d in log):.1f} | {sum(f for f, _ in drawn)}/{len(drawn)} | "
              f"{statistics.fmean(v for _, v in drawn):.3f} |")


if __name__ == "__main__":
    main()
