#!/usr/bin/env python3
"""The score-averaging ensemble of several scorers, as a scores file that
`ocrank eval --scores` evaluates like any other:

    scripts/ensemble_scores.py AUDIT_A AUDIT_B [...] --out ensemble.jsonl
    target/release/ocrank eval --scores ensemble.jsonl --qrels QRELS -q

Each AUDIT is an `ocrank audit --out DIR` directory (e.g. the same
training run at two seeds, audited with the same settings). For every
(query, permutation, candidate) the ensemble's grade distribution and
expected grade are the means over the audits; window and slot are kept
(they must agree: the audits scored the same windows). An ensemble of N
scorers costs N forwards per window: report it as its own scorer, next to
its members, not as one of them.

Every audit must hold the same (query, permutation, candidate) records and
have been made with the same settings except the adapter (settings.json);
otherwise the script exits naming what differs.
"""
import argparse
import json
import sys

from report_io import audit_windows

# settings.json keys allowed to differ between the members.
MEMBER_KEYS = {"adapter_sha256", "model_sha256", "ocrank_version"}


def settings(directory):
    path = f"{directory}/settings.json"
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: {e}")


def records(directory):
    """(qid, permutation, candidate) -> score record of an audit."""
    out = {}
    for w in audit_windows(directory):
        for r in w["records"]:
            try:
                key = (str(r["qid"]), int(r["permutation"]), str(r["candidate"]))
                rec = {"window": int(r["window"]), "slot": int(r["slot"]),
                       "probs": [float(p) for p in r["probs"]], "mass": float(r["mass"]),
                       "score": float(r["score"])}
            except (KeyError, TypeError, ValueError) as e:
                sys.exit(f"{directory}/windows.jsonl: a record of query {w.get('qid')} "
                         f"lacks a field ({e})")
            if len(rec["probs"]) != 4:
                sys.exit(f"{directory}/windows.jsonl: query {key[0]}, candidate {key[2]}: "
                         f"{len(rec['probs'])} grade probabilities, expected 4")
            if key in out:
                sys.exit(f"{directory}/windows.jsonl: query {key[0]}, permutation {key[1]}, "
                         f"candidate {key[2]} is scored twice")
            out[key] = rec
    if not out:
        sys.exit(f"{directory}/windows.jsonl: no scored windows")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("audits", nargs="+")
    ap.add_argument("--out", required=True, help="the ensemble's scores JSONL")
    a = ap.parse_args()
    if len(a.audits) < 2:
        ap.error("an ensemble needs at least two audits")
    first = settings(a.audits[0])
    for d in a.audits[1:]:
        other = settings(d)
        for k in sorted((set(first) | set(other)) - MEMBER_KEYS):
            if first.get(k) != other.get(k):
                sys.exit(f"{d}/settings.json: {k} = {other.get(k)!r}, but "
                         f"{a.audits[0]} has {first.get(k)!r}: not the same audit setting")
    members = [records(d) for d in a.audits]
    keys = set(members[0])
    for d, m in zip(a.audits[1:], members[1:]):
        if set(m) != keys:
            only = sorted(keys ^ set(m))[:3]
            sys.exit(f"{d}: scores other (query, permutation, candidate) records than "
                     f"{a.audits[0]} (e.g. {only})")
    n = len(members)
    with open(a.out, "w") as f:
        for key in sorted(keys):
            recs = [m[key] for m in members]
            if any((r["window"], r["slot"]) != (recs[0]["window"], recs[0]["slot"]) for r in recs):
                sys.exit(f"query {key[0]}, candidate {key[2]}: the audits put it in other "
                         "windows or slots; an ensemble averages the same readouts")
            f.write(json.dumps({
                "qid": key[0], "permutation": key[1], "candidate": key[2],
                "window": recs[0]["window"], "slot": recs[0]["slot"],
                "probs": [sum(r["probs"][g] for r in recs) / n for g in range(4)],
                "mass": sum(r["mass"] for r in recs) / n,
                "score": sum(r["score"] for r in recs) / n,
            }) + "\n")
    print(f"{a.out}: {len(keys)} records, mean of {n} audits", file=sys.stderr)


if __name__ == "__main__":
    main()
