#!/usr/bin/env python3
"""HotpotQA (distractor setting) as a judged ranking task: pools in BM25
order, their qrels, and the BM25 run, over each question's 10 context
paragraphs.

    scripts/hotpotqa_bm25.py ../shared/data/hotpotqa/dev-distractor-100.jsonl \\
        --pools runs/hotpot/bm25-pools.jsonl --qrels runs/hotpot/qrels.txt \\
        --run runs/hotpot/bm25.trec

The pools are ocrank's reading of the file (crates/data/src/hotpotqa.rs):
qid = `_id`, one candidate per context paragraph, text = its non-blank
sentences, each trimmed, joined by one space, grade 1 when its title is
among the supporting facts' titles, else 0. Two changes: candidates come
in BM25 order (the first-stage order an audit's canonical permutation
keeps), and a candidate's id is its title with each run of whitespace
replaced by `_`, so that TREC qrels and run lines (whitespace-separated)
can name it; two titles that collide that way are an error. The qrels
hold all 10 paragraphs of every question.

BM25 (k1 = 0.9, b = 0.4, Anserini's defaults) scores each paragraph's
text (what the LLM scorer reads, without the title) against the
question. Tokens are lowercased runs of letters and digits, no stemming,
no stopwords. Document frequencies and the mean length come from all
paragraphs of the file, counted once per (question, title): the file is
the collection. idf = ln(1 + (N - df + 0.5) / (df + 0.5)). Ties are
broken by the paragraph's position in the context.
"""
import argparse
import json
import math
import re
import sys
from collections import Counter

K1, B = 0.9, 0.4
TOKEN = re.compile(r"[^\W_]+")


def tokens(text):
    return TOKEN.findall(text.lower())


def doc_id(title):
    """A title as a TREC document id: each run of whitespace becomes `_`."""
    return "_".join(title.split())


def read_examples(path):
    """The file's examples: JSON lines (dev) or one JSON array (train)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
    return out


def pools(examples, path):
    """[(qid, question, [(title, text, grade)])] as ocrank reads them."""
    out = []
    for i, ex in enumerate(examples):
        where = f"{path}: example {i + 1}"
        try:
            qid, question = str(ex["_id"]), ex["question"]
            supporting = {fact[0] for fact in ex["supporting_facts"]}
            paragraphs = []
            for title, sentences in ex["context"]:
                text = " ".join(s.strip() for s in sentences if s.strip())
                paragraphs.append((title, text, int(title in supporting)))
        except (KeyError, TypeError, ValueError, IndexError) as e:
            sys.exit(f"{where}: {e!r}")
        titles = [p[0] for p in paragraphs]
        if len(set(titles)) != len(titles):
            sys.exit(f"{where} ({qid}): a repeated paragraph title")
        ids = [doc_id(t) for t in titles]
        if len(set(ids)) != len(ids):
            sys.exit(f"{where} ({qid}): two titles give the same id with whitespace as _")
        missing = supporting - set(titles)
        if missing:
            sys.exit(f"{where} ({qid}): supporting title(s) {sorted(missing)} not in the context")
        out.append((qid, question, paragraphs))
    return out


def bm25_runs(pools):
    """{qid: [(title, score)]} in ranked order."""
    docs = [tokens(text) for _, _, paragraphs in pools for _, text, _ in paragraphs]
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    runs = {}
    for qid, question, paragraphs in pools:
        q = tokens(question)
        scored = []
        for pos, (title, text, _) in enumerate(paragraphs):
            d = tokens(text)
            tf = Counter(d)
            s = 0.0
            for t in q:
                if tf[t]:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * len(d) / avgdl))
            scored.append((-s, pos, title, s))
        scored.sort()
        runs[qid] = [(title, s) for _, _, title, s in scored]
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hotpotqa")
    ap.add_argument("--pools", required=True, help="pools JSONL (BM25 order) to write")
    ap.add_argument("--qrels", required=True, help="TREC qrels to write")
    ap.add_argument("--run", required=True, help="TREC run (BM25) to write")
    a = ap.parse_args()
    ps = pools(read_examples(a.hotpotqa), a.hotpotqa)
    runs = bm25_runs(ps)
    with open(a.pools, "w", encoding="utf-8") as fp, \
            open(a.qrels, "w", encoding="utf-8") as fq, \
            open(a.run, "w", encoding="utf-8") as fr:
        for qid, question, paragraphs in ps:
            by_title = {title: (text, grade) for title, text, grade in paragraphs}
            candidates = []
            for rank, (title, s) in enumerate(runs[qid], 1):
                text, grade = by_title[title]
                cid = doc_id(title)
                candidates.append({"id": cid, "text": text, "grade": grade})
                fq.write(f"{qid} 0 {cid} {grade}\n")
                fr.write(f"{qid} Q0 {cid} {rank} {s:.6f} bm25\n")
            fp.write(json.dumps({"qid": qid, "query": question, "candidates": candidates},
                                ensure_ascii=False) + "\n")
    print(f"{len(ps)} questions, {sum(len(p) for _, _, p in ps)} paragraphs -> "
          f"{a.pools}, {a.qrels}, {a.run}", file=sys.stderr)


if __name__ == "__main__":
    main()
