#!/usr/bin/env python3
"""Learning curve of an `ocrank train` run: the supervised loss next to the
loss of the best constant score (the mean training label) on the same
windows, in bins of steps (and, for cross-entropy runs, the cross-entropy
next to the best constant grade distribution's). A ratio below 1 means the scorer has learnt
something beyond the label mean; at 1 it predicts the mean (the collapse of
the CPU pilot). The header gives the logged step time (sum and median).

    scripts/train_curve.py RUN_DIR [--bin 25] [--pools FILE... --labels FILE]
        [--split-prefix PREFIX]

--split-prefix adds the ratio per bin and query source: the steps whose
logged query id starts with PREFIX (e.g. `2024-`, the TREC RAG 2024 topics)
and the others.

Logs written since the `constant` field exists carry it. For older logs the
constant is rebuilt from the run's train.json (pools, labels, depth, width,
held-out split), mirroring crates/train/src/data.rs; every logged query id is
checked against the rebuilt window, so a wrong reconstruction fails loudly.
Prints Markdown.
"""
import argparse
import hashlib
import json
import math
import statistics
import struct
import sys
from pathlib import Path


def is_heldout(qid, fraction, seed):
    h = hashlib.sha256(b"ocrank-heldout\0" + struct.pack("<Q", seed) + qid.encode()).digest()
    return struct.unpack("<Q", h[:8])[0] / float(2**64 - 1) < fraction


def two_point(y):
    """crates/train/src/loss.rs `two_point`: the grade distribution on
    floor(y) and floor(y) + 1 whose mean is y."""
    lo = min(int(y // 1), 2)
    q = [0.0] * 4
    q[lo], q[lo + 1] = 1.0 - (y - lo), y - lo
    return q


def training_windows(run, pools=None, labels=None):
    """The run's training windows in crates/train/src/data.rs order, rebuilt
    from its train.json (pools, labels, depth, width, held-out split): a list
    of (query id, first slot's rank in the pool, labels of the window)."""
    doc = json.loads((run / "train.json").read_text())
    cmd = doc.get("command", "").split()
    st = doc["settings"]

    def flag_values(name):
        if name not in cmd:
            return []
        out = []
        for tok in cmd[cmd.index(name) + 1:]:
            if tok.startswith("--"):
                break
            out.append(tok)
        return out

    pools_files = pools or flag_values("--pools")
    labels_file = labels or (flag_values("--labels") or [None])[0]
    if not pools_files or not labels_file:
        sys.exit(f"{run}/train.json has no command (a run stopped before its end writes only its "
                 "settings): pass --pools and --labels as the run was given them")
    heldout_files = st.get("heldout_pools") or flag_values("--heldout-pools") or pools_files
    depth, width = st["depth"], st["scorer"]["width"]
    frac, seed = st["heldout_fraction"], st["split_seed"]
    if depth % width != 0:
        sys.exit("rebuilding needs depth to be a multiple of width")
    grades = {}
    for line in Path(labels_file).read_text().splitlines()[1:]:
        d = json.loads(line)
        grades[(str(d["qid"]), str(d["candidate"]))] = d["label"]
    windows = []
    for f in pools_files:
        for p in json.loads(Path(f).read_text()):
            qid = str(p["hits"][0]["qid"])
            if f in heldout_files and is_heldout(qid, frac, seed):
                continue
            ids = [str(h["docid"]) for h in p["hits"][:depth]]
            for s in range(0, depth, width):
                windows.append((qid, s, [grades[(qid, c)] for c in ids[s:s + width]]))
    return windows


def logged_windows(run, log, windows):
    """The windows of each logged step (a list per step), each checked
    against the step's logged query id."""
    out = []
    for line in log:
        ws = [windows[e] for e in line.get("examples") or [line["example"]]]
        if ws[0][0] != str(line["qid"]):
            sys.exit(f"{run}: step {line['step']} logged query {line['qid']} but window "
                     f"{line['example']} is {ws[0][0]}")
        out.append(ws)
    return out


def rebuild_constants(run, log, pools=None, labels=None):
    """Per-step constant-score loss and constant-distribution cross-entropy
    for logs without those fields."""
    windows = [(q, ys) for q, _, ys in training_windows(run, pools, labels)]
    every = [y for _, ys in windows for y in ys]
    mean = sum(every) / len(every)
    marginal = [sum(two_point(y)[g] for y in every) / len(every) for g in range(4)]
    sq, ce = [], []
    for qid_ys in logged_windows(run, log, windows):
        sq.append(sum(sum((y - mean) ** 2 for y in ys) / len(ys) for _, ys in qid_ys) / len(qid_ys))
        ce.append(sum(-sum(q * math.log(m) for q, m in zip(two_point(y), marginal) if q > 0)
                      for _, ys in qid_ys for y in ys) / sum(len(ys) for _, ys in qid_ys))
    return sq, ce


def split_ratios(log, const, bin_steps, source):
    """Supervised loss over the constant score's, summed per (bin, source):
    bins of `bin_steps` logged step numbers, source(qid) of each step. Returns
    (first step, last step, source, steps, ratio) rows in bin then source
    order. Shared with scripts/label_source_spread.py."""
    bins = {}
    for l, c in zip(log, const):
        try:
            key = ((int(l["step"]) - 1) // bin_steps, source(str(l["qid"])))
            b = bins.setdefault(key, [0, 0.0, 0.0])
            b[0] += 1
            b[1] += float(l["supervised"])
            b[2] += float(c)
        except (KeyError, TypeError, ValueError) as e:
            sys.exit(f"step {l.get('step')}: a step needs step, qid and supervised ({e})")
    return [(k * bin_steps + 1, (k + 1) * bin_steps, name, n,
             sup / con if con > 0 else float("nan"))
            for (k, name), (n, sup, con) in sorted(bins.items())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--bin", type=int, default=25)
    ap.add_argument("--pools", nargs="+", help="the run's --pools, for a run stopped before its end")
    ap.add_argument("--labels", help="the run's --labels, for a run stopped before its end")
    ap.add_argument("--split-prefix", metavar="PREFIX",
                    help="also the ratio per bin for query ids starting with PREFIX and the others")
    a = ap.parse_args()
    if a.bin < 1:
        ap.error("--bin must be positive")
    log = [json.loads(l) for l in (a.run / "log.jsonl").read_text().splitlines() if l.strip()]
    if not log:
        sys.exit(f"{a.run}/log.jsonl is empty")
    # Runs with --supervised-loss cross-entropy also log the cross-entropy
    # and (since the field exists) that of the best constant distribution.
    ce = all("cross_entropy" in l for l in log)
    if all("constant" in l for l in log) and (not ce or all("constant_cross_entropy" in l for l in log)):
        const, source = [l["constant"] for l in log], "logged"
    else:
        const, const_ce = rebuild_constants(a.run, log, a.pools, a.labels)
        source = "rebuilt from train.json"
        for l, c, k in zip(log, const, const_ce):
            if "constant" in l and abs(l["constant"] - c) > 1e-9:
                sys.exit(f"step {l['step']}: rebuilt constant {c} differs from the logged {l['constant']}")
            l.setdefault("constant_cross_entropy", k)
    secs = [l["seconds"] for l in log]
    print(f"`{a.run}`: {len(log)} steps; constant-score loss {source}; logged step time "
          f"{sum(secs):.0f} s, median {statistics.median(secs):.1f} s per step\n")
    extra = " cross-entropy | constant distribution | ratio |" if ce else ""
    # OC-SFT runs log their consistency term (the mean over the window's
    # candidates of the squared difference of a candidate's expected grade
    # between the two views) and its weight after the warm-up.
    cons = any(l.get("consistency", 0.0) > 0.0 for l in log)
    extra += " consistency | lambda |" if cons else ""
    print("| steps | supervised | constant score | ratio | grad norm |" + extra)
    print("|---|---|---|---|---|" + ("---|---|---|" if ce else "") + ("---|---|" if cons else ""))
    for i in range(0, len(log), a.bin):
        chunk = list(range(i, min(i + a.bin, len(log))))
        sup = sum(log[j]["supervised"] for j in chunk)
        con = sum(const[j] for j in chunk)
        gn = sum(log[j]["grad_norm"] for j in chunk) / len(chunk)
        row = (f"| {log[chunk[0]]['step']}-{log[chunk[-1]]['step']} | {sup / len(chunk):.4f} | "
               f"{con / len(chunk):.4f} | {sup / con:.3f} | {gn:.3f} |")
        if ce:
            c = sum(log[j]["cross_entropy"] for j in chunk)
            k = sum(log[j]["constant_cross_entropy"] for j in chunk)
            row += f" {c / len(chunk):.4f} | {k / len(chunk):.4f} | {c / k:.3f} |"
        if cons:
            row += (f" {sum(log[j]['consistency'] for j in chunk) / len(chunk):.4f} |"
                    f" {sum(log[j]['lambda'] for j in chunk) / len(chunk):.2f} |")
        print(row)
    if a.split_prefix is not None:
        p = a.split_prefix
        print(f"\nBy query source (`{p}*` or other): supervised loss over the constant score's.\n")
        print("| steps | source | steps of it | ratio |\n|---|---|---|---|")
        for first, last, name, n, ratio in split_ratios(
                log, const, a.bin, lambda q: f"{p}*" if q.startswith(p) else "other"):
            print(f"| {first}-{last} | {name} | {n} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
