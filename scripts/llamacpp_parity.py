#!/usr/bin/env python3
"""Golden fixture for the parity of our engine with llama.cpp.

Regenerates crates/score/tests/fixtures/llamacpp_dl19_b20.json, which
crates/score/tests/parity.rs checks in CI without llama.cpp.

What it does:
  1. exports the first DL19 query's first window (depth 20, width 20, batched:
     one B = 20 window, ~2,370 tokens) with `ocrank prompts --tokens`, or reads
     a JSONL given with --jsonl (its first line);
  2. tokenizes the rendered `text` with llama.cpp and asserts the ids equal
     prefix_tokens + tokens (our tokenizer is built from the GGUF metadata;
     llama.cpp's is independent of it);
  3. writes an F32 GGUF from the Q4_1 file with llama_model_quantize
     (ftype ALL_F32, allow_requantize) into a temporary directory;
  4. for the F32 GGUF and the original Q4_1 file: evaluates the ids in one
     context (f32 KV cache, flash attention off), takes the logits at every
     slot's readout position, softmax over the whole vocabulary in float64, and
     records the four renormalised grade probabilities and their mass (sum of
     the four grade probabilities before renormalising);
  5. writes the fixture (small: no logits).

On the F32 GGUF with an f32 KV cache and flash attention off, llama.cpp
computes in f32 throughout, so our engine (DType::F32, which dequantizes the
Q4_1 weights exactly) must match it to ~1e-5. On the Q4_1 file llama.cpp's
quantized matmuls round activations to 8 bits (q8_1), which moves the grade
probabilities by up to a few 1e-2: a loose, secondary check.

Environment (llama-cpp-python builds llama.cpp from source; CPU only):
    python3 -m venv /work/venv-llama
    /work/venv-llama/bin/pip install cmake ninja numpy
    /work/venv-llama/bin/pip install llama-cpp-python==0.3.36

Run from the repository root (takes a few minutes on 2 cores):
    cargo build -p ocrank
    /work/venv-llama/bin/python scripts/llamacpp_parity.py
"""

import argparse
import ctypes
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_POOLS = "../shared/data/msmarco/dl19/bm25-top100.json"
DEFAULT_OUT = "crates/score/tests/fixtures/llamacpp_dl19_b20.json"
DEPTH, WIDTH = 20, 20

GGML_TYPE_F32 = 0
LLAMA_FTYPE_ALL_F32 = 0


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export_window(args, tmp):
    """The first window of `ocrank prompts --tokens` and the command run."""
    if args.jsonl:
        path, cmd = args.jsonl, None
    else:
        path = os.path.join(tmp, "prompts.jsonl")
        cmd = [
            args.ocrank, "prompts", "--model", args.model, "--pools", args.pools,
            "--depth", str(DEPTH), "--queries", "1", "--width", str(WIDTH),
            "--tokens", "--out", path,
        ]
        log("running " + shlex.join(cmd))
        subprocess.run(cmd, cwd=ROOT, check=True)
    with open(path) as f:
        line = json.loads(f.readline())
    return line, cmd


def quantize_f32(src, dst, threads):
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads
    params.ftype = LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize({src} -> {dst}) failed with {rc}")


def load(path, n_ctx, threads):
    return Llama(
        model_path=path,
        n_ctx=n_ctx,
        n_batch=n_ctx,
        n_ubatch=512,
        logits_all=True,
        type_k=GGML_TYPE_F32,
        type_v=GGML_TYPE_F32,
        flash_attn=False,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=0,
        verbose=False,
    )


def check_tokens(args, w, ids, n_prefix, grade_ids):
    """Independent tokenizer check: llama.cpp's tokenization of the whole
    `text` must equal our ids (we tokenize the prompt's segments separately,
    the prefix on its own for its KV cache; this proves the cuts are clean)."""
    vocab = Llama(model_path=args.model, vocab_only=True, verbose=False)
    tokenize = lambda s: vocab.tokenize(s.encode("utf-8"), add_bos=False, special=True)
    for g, gid in enumerate(grade_ids):
        piece = vocab.detokenize([gid]).decode("utf-8")
        assert piece.strip() == str(g), (g, gid, piece)
    text_ids = tokenize(w["text"])
    if text_ids != ids:
        first = next((i for i, (a, b) in enumerate(zip(text_ids, ids)) if a != b), min(len(text_ids), len(ids)))
        raise SystemExit(
            f"llama.cpp tokenizes `text` differently at index {first} (prefix has {n_prefix} ids): "
            f"llama.cpp {text_ids[first:first + 6]} vs ocrank {ids[first:first + 6]} "
            f"(lengths {len(text_ids)} vs {len(ids)})")
    log(f"tokenization matches llama.cpp ({len(ids)} ids)")
    return {"text_ids": text_ids, "report": {"text_tokenization_matches": True}}


def grade_dists(llm, ids, positions, grade_ids):
    """Per readout position: (renormalised grade probabilities, mass)."""
    llm.reset()
    llm.eval(ids)
    out = []
    for pos in positions:
        logits = np.asarray(llm.scores[pos], dtype=np.float64)
        logits -= logits.max()
        p = np.exp(logits)
        p /= p.sum()
        raw = p[grade_ids]
        mass = float(raw.sum())
        out.append(([float(x) for x in raw / mass], mass))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Relative paths are relative to the repository root.
    ap.add_argument("--model", default=DEFAULT_MODEL, help="the Q4_1 GGUF (default: %(default)s)")
    ap.add_argument("--pools", default=DEFAULT_POOLS, help="DL19 pools (default: %(default)s)")
    ap.add_argument("--ocrank", default=os.path.join("target", "debug", "ocrank"),
                    help="ocrank binary, relative to the repository root (cargo build -p ocrank)")
    ap.add_argument("--jsonl", help="use this `ocrank prompts --tokens` output instead of running ocrank")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.jsonl:
        args.jsonl = os.path.abspath(args.jsonl)
    os.chdir(ROOT)

    model_sha = sha256(args.model)
    with tempfile.TemporaryDirectory(prefix="llamacpp_parity_") as tmp:
        w, export_cmd = export_window(args, tmp)
        assert w["mode"] == "batched", w["mode"]
        assert w["permutation"] == 0 and w["window"] == 0, (w["permutation"], w["window"])
        ids = list(w["prefix_tokens"]) + list(w["tokens"])
        n_prefix = len(w["prefix_tokens"])
        readout = [n_prefix + r for r in w["readout"]]
        grade_ids = list(w["grade_ids"])
        assert len(readout) == len(w["candidates"]) == WIDTH
        # The layout must be a plain causal sequence for a llama.cpp comparison.
        assert w["positions"] == list(range(n_prefix, len(ids))), "positions are not contiguous"
        assert not any(w["hidden"]) and not any(w["block"]), "hidden tokens or blocks in the layout"
        n_ctx = 4096
        assert len(ids) <= n_ctx, len(ids)
        log(f"qid {w['qid']}: {len(ids)} tokens ({n_prefix} prefix), {len(readout)} slots")

        tok = check_tokens(args, w, ids, n_prefix, grade_ids)

        results = {}
        for name, path in (("q4_1", args.model), ("f32", os.path.join(tmp, "model-f32.gguf"))):
            if name == "f32":
                log("quantizing to F32 ...")
                quantize_f32(args.model, path, args.threads)
            llm = load(path, n_ctx, args.threads)
            t0 = time.time()
            results[name] = grade_dists(llm, ids, readout, grade_ids)
            log(f"{name}: evaluated in {time.time() - t0:.1f} s")
            if name == "f32" and tok["text_ids"] != ids:
                # How much the prefix/body split moves the grades (informational).
                shift = len(tok["text_ids"]) - len(ids)
                assert all(tok["text_ids"][r + shift] == ids[r] for r in readout)
                alt = grade_dists(llm, tok["text_ids"], [r + shift for r in readout], grade_ids)
                tok["report"]["max_abs_prob_change_f32"] = max(
                    abs(a - b) for (pa, _), (pb, _) in zip(alt, results[name]) for a, b in zip(pa, pb))
                log(f"llama.cpp's own tokenization changes the F32 grade probabilities by up to "
                    f"{tok['report']['max_abs_prob_change_f32']:.3e}")
            del llm

    slots = []
    for s, cand in enumerate(w["candidates"]):
        (pf, mf), (pq, mq) = results["f32"][s], results["q4_1"][s]
        slots.append({
            "slot": s + 1, "candidate": cand, "readout": readout[s],
            "probs_f32": pf, "mass_f32": mf, "probs_q4_1": pq, "mass_q4_1": mq,
        })
    dq = max(abs(a - b) for sl in slots for a, b in zip(sl["probs_f32"], sl["probs_q4_1"]))
    log(f"max |probs_f32 - probs_q4_1| = {dq:.3e}")

    cmd = "/work/venv-llama/bin/python " + shlex.join(["scripts/llamacpp_parity.py"] + sys.argv[1:])
    fixture = {
        "description": "llama.cpp grade distributions of one batched window (SmolLM2-135M-Instruct, "
                       "DL19 first query, depth 20, width 20); regenerate with `command`",
        "command": cmd,
        "export_command": shlex.join(export_cmd[:-1] + ["TMP/prompts.jsonl"]) if export_cmd
        else f"(read from {args.jsonl})",
        "llama_cpp_python": llama_cpp.__version__,
        "llama_settings": {"n_ctx": n_ctx, "n_batch": n_ctx, "n_ubatch": 512, "type_k": "f32",
                           "type_v": "f32", "flash_attn": False, "n_threads": args.threads,
                           "f32_gguf": "llama_model_quantize(ftype=ALL_F32, allow_requantize=True)"},
        "model": os.path.basename(args.model),
        "model_sha256": model_sha,
        "qid": w["qid"],
        "depth": DEPTH,
        "width": WIDTH,
        "candidates": w["candidates"],
        "n_prefix_tokens": n_prefix,
        "tokenization": tok["report"],
        "grade_ids": grade_ids,
        "readout": readout,
        "tokens": ids,
        "slots": slots,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    # One key per line, lists on one line, one slot per line: small and diffable.
    lines = []
    for k, v in fixture.items():
        if k == "slots":
            body = ",\n".join("  " + json.dumps(sl) for sl in v)
            lines.append(f' "{k}": [\n{body}\n ]')
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}")
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    assert json.loads(text) == fixture
    with open(args.out, "w") as f:
        f.write(text)
    log(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
