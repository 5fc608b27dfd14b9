#!/usr/bin/env python3
"""Linear probe of the frozen decoder's readout states (from the example
`readout_features`): ridge regression from a candidate's hidden state at its
slot readout to its teacher label, fitted on the training pools, then used as
a ranker on evaluation pools and scored by `ocrank eval` (trec_eval
semantics).

It bounds what the readout state encodes before any training: if no linear
map of it ranks better than BM25 or a random order, LoRA training must first
build the relevance features, not only read them out.

    scripts/readout_probe.py --train runs/probe/features-train \
        --labels runs/train/labels-minilm.jsonl --eval runs/probe/features-dl19 \
        --qrels ../shared/data/msmarco/dl19/qrels.txt --out reports/training/invariant/probe

The ridge penalty is chosen per layer by 5-fold cross-validation grouped by
query on the training pools (mean squared error). Writes one TREC run per
probe and `probe.json` / `probe.md` with the cross-validated fit and the
evaluation nDCG@10.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

LAMBDAS = [1e-1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]


def load(dir_):
    meta = json.load(open(os.path.join(dir_, "meta.json")))
    index = [json.loads(l) for l in open(os.path.join(dir_, "index.jsonl"))]
    width = meta["hidden"] * len(meta["layers"])
    x = np.fromfile(os.path.join(dir_, "features.f32"), dtype="<f4")
    if x.size != len(index) * width or meta["rows"] != len(index):
        sys.exit(f"{dir_}: {x.size} floats for {len(index)} rows of {width} (meta says {meta['rows']})")
    return meta, index, x.reshape(len(index), width).astype(np.float64)


def labels_of(path):
    out = {}
    with open(path) as f:
        header = json.loads(f.readline())
        for n, line in enumerate(f, start=2):
            r = json.loads(line)
            out[(r["qid"], r["candidate"])] = r["label"]
    return header, out


def ridge(x, y, lam):
    """Weights and intercept on standardised features."""
    mu, sd = x.mean(0), x.std(0) + 1e-6
    z = (x - mu) / sd
    ym = y.mean()
    a = z.T @ z + lam * np.eye(z.shape[1])
    w = np.linalg.solve(a, z.T @ (y - ym))
    return lambda xn: ((xn - mu) / sd) @ w + ym


def cv_mse(x, y, groups, lam, folds=5):
    uniq = sorted(set(groups))
    rng = np.random.default_rng(0)
    order = rng.permutation(len(uniq))
    fold_of = {uniq[i]: k % folds for k, i in enumerate(order)}
    f = np.array([fold_of[g] for g in groups])
    err = np.zeros_like(y)
    for k in range(folds):
        tr, te = f != k, f == k
        err[te] = ridge(x[tr], y[tr], lam)(x[te]) - y[te]
    return float(np.mean(err**2))


def ndcg10(binary, run, qrels):
    out = subprocess.run([binary, "eval", "--run", run, "--qrels", qrels],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].strip() == "ndcg_cut_10" and parts[1] == "all":
            return float(parts[2])
    sys.exit(f"no ndcg_cut_10 line in `ocrank eval` output:\n{out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--qrels", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ocrank", default="target/release/ocrank")
    args = ap.parse_args()
    tmeta, tindex, tx = load(args.train)
    emeta, eindex, ex = load(args.eval)
    if tmeta["layers"] != emeta["layers"] or tmeta["hidden"] != emeta["hidden"]:
        sys.exit("training and evaluation features come from different layers or models")
    header, labels = labels_of(args.labels)
    missing = [(r["qid"], r["candidate"]) for r in tindex if (r["qid"], r["candidate"]) not in labels]
    if missing:
        sys.exit(f"{args.labels}: no label for {len(missing)} training rows, e.g. {missing[0]}")
    y = np.array([labels[(r["qid"], r["candidate"])] for r in tindex])
    groups = [r["qid"] for r in tindex]
    h = tmeta["hidden"]
    os.makedirs(args.out, exist_ok=True)
    probes = [(f"layer {l}", slice(i * h, (i + 1) * h)) for i, l in enumerate(tmeta["layers"])]
    if len(tmeta["layers"]) > 1:
        probes.append(("all layers", slice(0, h * len(tmeta["layers"]))))
    constant = float(np.mean((y - y.mean()) ** 2))
    rows = []
    for name, cols in probes:
        errs = {lam: cv_mse(tx[:, cols], y, groups, lam) for lam in LAMBDAS}
        lam = min(errs, key=errs.get)
        model = ridge(tx[:, cols], y, lam)
        s = model(ex[:, cols])
        tag = name.replace(" ", "-")
        run = os.path.join(args.out, f"probe-{tag}.trec")
        by_q = {}
        for r, v in zip(eindex, s):
            by_q.setdefault(r["qid"], []).append((v, r["candidate"]))
        with open(run, "w") as f:
            for qid, items in by_q.items():
                items.sort(key=lambda t: -t[0])
                for rank, (v, doc) in enumerate(items, start=1):
                    f.write(f"{qid} Q0 {doc} {rank} {v:.6f} probe-{tag}\n")
        rows.append({"probe": name, "lambda": lam, "cv_mse": errs[lam],
                     "cv_mse_over_constant": errs[lam] / constant,
                     "eval_ndcg_at_10": ndcg10(args.ocrank, run, args.qrels), "run": run})
        print(f"{name}: lambda {lam:g}, CV MSE {errs[lam]:.4f} (constant {constant:.4f}), "
              f"nDCG@10 {rows[-1]['eval_ndcg_at_10']:.4f}", file=sys.stderr)
    # The first-stage order of the same evaluation pools, as a run.
    first = os.path.join(args.out, "first-stage.trec")
    with open(first, "w") as f:
        by_q = {}
        for r in eindex:
            by_q.setdefault(r["qid"], []).append(r["candidate"])
        for qid, docs in by_q.items():
            for rank, doc in enumerate(docs, start=1):
                f.write(f"{qid} Q0 {doc} {rank} {len(docs) - rank + 1} first-stage\n")
    doc = {"command": " ".join(sys.argv), "train_rows": len(tindex), "eval_rows": len(eindex),
           "labels_teacher": header.get("teacher"), "constant_mse": constant,
           "first_stage_ndcg_at_10": ndcg10(args.ocrank, first, args.qrels),
           "train_meta": tmeta, "eval_meta": emeta, "probes": rows}
    json.dump(doc, open(os.path.join(args.out, "probe.json"), "w"), indent=2)
    md = [f"Command: `{doc['command']}`", "",
          f"{len(tindex)} training candidates ({header.get('teacher')} labels, constant-score MSE "
          f"{constant:.4f}); {len(eindex)} evaluation candidates; first-stage order nDCG@10 "
          f"{doc['first_stage_ndcg_at_10']:.4f}.", "",
          "| probe | ridge lambda | CV MSE / constant | evaluation nDCG@10 |", "|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['probe']} | {r['lambda']:g} | {r['cv_mse_over_constant']:.3f} | "
                  f"{r['eval_ndcg_at_10']:.4f} |")
    open(os.path.join(args.out, "probe.md"), "w").write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
