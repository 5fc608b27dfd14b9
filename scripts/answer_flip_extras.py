#!/usr/bin/env python3
"""The numbers of reports/answer-flip/README.md's "Reading" that are not in
the `ocrank answer` reports, from their committed results.json files:
questions where the batched scorer's canonical top 5 equals BM25's (and
whether the two runs' independently decoded answers agree there), distinct
answers per question, and the answer flip on yes/no questions.

    scripts/answer_flip_extras.py [reports/answer-flip]
"""
import json
import statistics
import sys
from pathlib import Path


def per_question(path):
    return {q["qid"]: q for q in json.loads(path.read_text())["per_question"]}


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "reports/answer-flip")
    batched = per_question(root / "answers-off-the-shelf-batched/results.json")
    bm25 = per_question(root / "answers-bm25/results.json")
    student = per_question(root / "answers-student-invariant/results.json")
    same = [q for q in batched if batched[q]["permutations"][0]["passages"] == bm25[q]["permutations"][0]["passages"]]
    agree = sum(batched[q]["permutations"][0]["answer"] == bm25[q]["permutations"][0]["answer"] for q in same)
    print(f"batched canonical top 5 == BM25 top 5 (same order): {len(same)} questions; same answer in {agree}")
    distinct = [q["distinct_answers"] for q in batched.values()]
    print(f"batched: distinct answers per question {statistics.mean(distinct):.2f} of "
          f"{max(len(q['permutations']) for q in batched.values())} orders; "
          f"all orders differ on {sum(d == 5 for d in distinct)}, all agree on {sum(d == 1 for d in distinct)}")
    yes_no = [q for q in batched.values() if q["gold"].lower() in ("yes", "no")]
    other = [q for q in batched.values() if q["gold"].lower() not in ("yes", "no")]
    print(f"batched answer flip: yes/no questions ({len(yes_no)}) {statistics.mean(q['answer_flip'] for q in yes_no):.2f}, "
          f"others ({len(other)}) {statistics.mean(q['answer_flip'] for q in other):.2f}")
    for name, run in [("batched", batched), ("student", student), ("bm25", bm25)]:
        em = [q for q in run.values() if q["em_canonical"] == 1]
        yn = sum(q["gold"].lower() in ("yes", "no") for q in em)
        print(f"{name}: exact matches (canonical) {len(em)}, of them yes/no {yn}")


if __name__ == "__main__":
    main()
