#!/usr/bin/env python3
"""Learning curve of an `ocrank train` run: the supervised loss next to the
loss of the best constant score (the mean training label) on the same
windows, in bins of steps. A ratio below 1 means the scorer has learnt
something beyond the label mean; at 1 it predicts the mean (the collapse of
the CPU pilot).

    scripts/train_curve.py RUN_DIR [--bin 25]

Logs written since the `constant` field exists carry it. For older logs the
constant is rebuilt from the run's train.json (pools, labels, depth, width,
held-out split), mirroring crates/train/src/data.rs; every logged query id is
checked against the rebuilt window, so a wrong reconstruction fails loudly.
Prints Markdown.
"""
import argparse
import hashlib
import json
import struct
import sys
from pathlib import Path


def is_heldout(qid, fraction, seed):
    h = hashlib.sha256(b"ocrank-heldout\0" + struct.pack("<Q", seed) + qid.encode()).digest()
    return struct.unpack("<Q", h[:8])[0] / float(2**64 - 1) < fraction


def rebuild_constants(run, log):
    """Per-step constant-score loss for logs without the field."""
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

    pools_files = flag_values("--pools")
    labels_file = flag_values("--labels")[0]
    heldout_files = flag_values("--heldout-pools") or pools_files
    depth, width = st["depth"], st["scorer"]["width"]
    frac, seed = st["heldout_fraction"], st["split_seed"]
    if depth % width != 0:
        sys.exit("rebuilding needs depth to be a multiple of width")
    labels = {}
    for line in Path(labels_file).read_text().splitlines()[1:]:
        d = json.loads(line)
        labels[(str(d["qid"]), str(d["candidate"]))] = d["label"]
    windows = []
    for f in pools_files:
        for p in json.loads(Path(f).read_text()):
            qid = str(p["hits"][0]["qid"])
            if f in heldout_files and is_heldout(qid, frac, seed):
                continue
            ids = [str(h["docid"]) for h in p["hits"][:depth]]
            for s in range(0, depth, width):
                windows.append((qid, [labels[(qid, c)] for c in ids[s:s + width]]))
    every = [y for _, ys in windows for y in ys]
    mean = sum(every) / len(every)
    out = []
    for line in log:
        qid, ys = windows[line["example"]]
        if qid != str(line["qid"]):
            sys.exit(f"step {line['step']}: logged query {line['qid']} but window {line['example']} is {qid}")
        out.append(sum((y - mean) ** 2 for y in ys) / len(ys))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--bin", type=int, default=25)
    a = ap.parse_args()
    log = [json.loads(l) for l in (a.run / "log.jsonl").read_text().splitlines() if l.strip()]
    if not log:
        sys.exit(f"{a.run}/log.jsonl is empty")
    if all("constant" in l for l in log):
        const, source = [l["constant"] for l in log], "logged"
    else:
        const, source = rebuild_constants(a.run, log), "rebuilt from train.json"
    print(f"`{a.run}`: {len(log)} steps; constant-score loss {source}\n")
    print("| steps | supervised | constant score | ratio | grad norm |")
    print("|---|---|---|---|---|")
    for i in range(0, len(log), a.bin):
        chunk = list(range(i, min(i + a.bin, len(log))))
        sup = sum(log[j]["supervised"] for j in chunk)
        con = sum(const[j] for j in chunk)
        gn = sum(log[j]["grad_norm"] for j in chunk) / len(chunk)
        print(f"| {log[chunk[0]]['step']}-{log[chunk[-1]]['step']} | {sup / len(chunk):.4f} | "
              f"{con / len(chunk):.4f} | {sup / con:.3f} | {gn:.3f} |")


if __name__ == "__main__":
    main()
