"""Shared input and output of the audit analysis scripts (imported, not run):
JSON Lines with errors that name the file and line, and a Markdown table
written with the command that made it plus a JSON twin."""
import json
import sys


def read_jsonl(path):
    """(line number, record) of every non-empty line; exits naming the file
    and line on malformed JSON or an unreadable file."""
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield n, json.loads(line)
                    except ValueError as e:
                        sys.exit(f"{path}:{n}: {e}")
    except OSError as e:
        sys.exit(f"{path}: {e}")


def write_report(out, script, text, payload):
    """Writes `text` to OUT (headed by the command line) and `payload` with
    the command to OUT's .json twin."""
    cmd = " ".join([script] + sys.argv[1:])
    with open(out, "w") as f:
        f.write(f"<!-- {cmd} -->\n{text}")
    with open(out.rsplit(".", 1)[0] + ".json", "w") as f:
        json.dump({"command": cmd, **payload}, f, indent=1)


def audit_windows(directory):
    """Every scored window of an audit (`ocrank audit --out DIR`), as its
    windows.jsonl record: qid, permutation, window and the slots' records.
    Exits naming the file and line on a line that is not a window record."""
    path = f"{directory}/windows.jsonl"
    for n, w in read_jsonl(path):
        if not isinstance(w, dict) or not isinstance(w.get("records"), list):
            sys.exit(f"{path}:{n}: not a window record (no list `records`)")
        yield w


def read_labels(path):
    """(qid, candidate) -> label of an `ocrank label` file (its provenance
    header skipped); exits naming the file and line on a bad record."""
    labels = {}
    for n, r in read_jsonl(path):
        if "ocrank_labels" in r:
            continue
        try:
            labels[(str(r["qid"]), str(r["candidate"]))] = float(r["label"])
        except (KeyError, TypeError, ValueError) as e:
            sys.exit(f"{path}:{n}: a label needs qid, candidate and a numeric label ({e})")
    return labels


def fmt_interval(m, lo, hi):
    """A difference and its interval as the report tables print them:
    `+0.0123 [-0.0040, +0.0290]`, starred when the interval excludes 0."""
    star = " *" if lo > 0 or hi < 0 else ""
    return f"{m:+.4f} [{lo:+.4f}, {hi:+.4f}]{star}"


def bootstrap_mean(diffs, rng, resamples=10000):
    """Mean of `diffs` (per-query paired differences) and the 95% percentile
    interval of that mean over `resamples` bootstrap resamples of the
    queries, drawn from `rng`."""
    n = len(diffs)
    means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(resamples))
    return sum(diffs) / n, means[int(0.025 * resamples) - 1], means[int(0.975 * resamples) - 1]
