#!/usr/bin/env python3
"""Independent reference for ocrank's sentence encoder (all-MiniLM-L6-v2).

Computes sentence embeddings with numpy alone, in float64, one text at a time
(so no padding is involved), and writes the golden fixture that
crates/engine/tests/encoder.rs checks the Rust encoder against
(crates/engine/tests/fixtures/minilm_golden.json). The Rust test then needs
neither Python nor numpy.

What it implements is sentence-transformers' all-MiniLM-L6-v2 written out:
BERT embeddings (word + position + token type, LayerNorm), six post-LN encoder
layers (self-attention, GELU with erf), mean pooling over the tokens and L2
normalisation. The weights are read with the `safetensors` package's numpy
API, the text is tokenized with the `tokenizers` package from the model's
tokenizer.json. Truncation is sentence_bert_config.json's max_seq_length (256
tokens including [CLS] and [SEP]); the truncation to 128 and the fixed padding
to 128 stored in tokenizer.json are switched off, as sentence-transformers
does.

Usage (from the repository root, after scripts/setup.sh --no-build):

    python3 -m venv /work/venv-minilm
    /work/venv-minilm/bin/pip install numpy safetensors tokenizers
    /work/venv-minilm/bin/python scripts/minilm_reference.py

Options: --model DIR (default models/all-MiniLM-L6-v2), --out FILE (default
crates/engine/tests/fixtures/minilm_golden.json).
"""

import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np
import safetensors
import tokenizers
from safetensors.numpy import load_file
from tokenizers import Tokenizer

QUERY = "how long is life cycle of flea"
# MS MARCO passage 6641238, judged 3 (perfectly relevant) for this DL19 query.
RELEVANT = (
    "The life cycle of a flea can last anywhere from 20 days to an entire year. It depends "
    "on how long the flea remains in the dormant stage (eggs, larvae, pupa). Outside "
    "influences, such as weather, affect the flea cycle. A female flea can lay around 20 to "
    "25 eggs in one day. The flea egg stage is the beginning of the flea cycle. This part of "
    "the flea cycle represents a little more than one third of the flea population at any "
    "given time. Depending on the temperature and humidity of the environment the egg can "
    "take from two to six days to hatch."
)
UNRELATED = (
    "The Treaty of Westphalia, signed in 1648, ended the Thirty Years' War and established "
    "the principle of state sovereignty that still shapes international law in Europe."
)
# Well over 256 word pieces: exercises the truncation to max_seq_length.
LONG = " ".join(
    [
        "Fleas are small flightless insects that live as external parasites of mammals and birds.",
        "Their bodies are flattened from side to side, which lets them move quickly through fur and feathers,",
        "and their hind legs are adapted for jumping distances of up to two hundred times their own length.",
        "An adult flea feeds on blood several times a day, and a female begins to lay eggs within two days of her first meal.",
        "The eggs are not sticky, so they fall from the host onto bedding, carpets and soil,",
        "where the larvae hatch and feed on organic debris and on the dried blood excreted by adult fleas.",
        "After two or three moults the larva spins a silken cocoon and pupates;",
        "the pupa can remain dormant for months until vibration, warmth or carbon dioxide signals that a host is near.",
        "This is why an empty house can suddenly seem infested when people move back in.",
        "Control therefore has to address every stage of the cycle at once:",
        "treating the animals with an adulticide, washing bedding in hot water, vacuuming carpets daily",
        "and, where needed, applying an insect growth regulator that stops larvae from developing.",
        "Because only about five percent of a flea population consists of adults on the host,",
        "killing the visible fleas alone rarely solves the problem, and treatment usually has to continue for three months.",
        "Historically, the oriental rat flea was the main vector of plague, carrying the bacterium Yersinia pestis",
        "from rats to humans during the epidemics that swept through Asia and Europe.",
        "Today fleas are more often a nuisance than a danger, although they still transmit murine typhus and tapeworms,",
        "and some people and pets develop an allergic dermatitis from their bites.",
        "Veterinarians recommend year-round prevention in warm climates, where the cycle never stops,",
        "and seasonal prevention in colder regions, where outdoor populations collapse in winter.",
        "Regular grooming with a fine-toothed comb helps to detect an infestation early,",
        "before the population has had time to grow through several generations.",
    ]
)
NON_ASCII = "Über Flöhe: le cycle de vie d'une puce dure 2–3 semaines à 25 °C — 跳蚤的生命周期 🐜 naïve café"
EMPTY = ""
TEXTS = [QUERY, RELEVANT, UNRELATED, LONG, NON_ASCII, EMPTY]
NAMES = ["query", "relevant", "unrelated", "long", "non_ascii", "empty"]


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def linear(x, w, b):
    return x @ w.T + b


def embed_one(ids, type_ids, weights, cfg):
    """One text, no padding: every token is attended and pooled."""
    g = lambda name: weights[name]
    n = len(ids)
    eps = cfg["layer_norm_eps"]
    h = (
        g("embeddings.word_embeddings.weight")[ids]
        + g("embeddings.position_embeddings.weight")[:n]
        + g("embeddings.token_type_embeddings.weight")[type_ids]
    )
    h = layer_norm(h, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    heads = cfg["num_attention_heads"]
    d = cfg["hidden_size"] // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = linear(h, g(p + "attention.self.query.weight"), g(p + "attention.self.query.bias"))
        k = linear(h, g(p + "attention.self.key.weight"), g(p + "attention.self.key.bias"))
        v = linear(h, g(p + "attention.self.value.weight"), g(p + "attention.self.value.bias"))
        split = lambda t: t.reshape(n, heads, d).transpose(1, 0, 2)
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, heads * d)
        attn = linear(ctx, g(p + "attention.output.dense.weight"), g(p + "attention.output.dense.bias"))
        h = layer_norm(
            attn + h, g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"), eps
        )
        inter = gelu(linear(h, g(p + "intermediate.dense.weight"), g(p + "intermediate.dense.bias")))
        out = linear(inter, g(p + "output.dense.weight"), g(p + "output.dense.bias"))
        h = layer_norm(out + h, g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    pooled = h.mean(axis=0)
    return pooled / max(np.linalg.norm(pooled), 1e-12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="models/all-MiniLM-L6-v2")
    ap.add_argument("--out", default="crates/engine/tests/fixtures/minilm_golden.json")
    args = ap.parse_args()

    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    max_len = 256
    sbert = os.path.join(args.model, "sentence_bert_config.json")
    if os.path.exists(sbert):
        with open(sbert) as f:
            max_len = json.load(f).get("max_seq_length", max_len)

    st_path = os.path.join(args.model, "model.safetensors")
    with open(st_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    raw = load_file(st_path)
    # Accept both naming schemes, as the Rust loader does.
    weights = {
        (k[len("bert.") :] if k.startswith("bert.") else k): v.astype(np.float64) for k, v in raw.items()
    }

    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)

    ids, embs = [], []
    for text in TEXTS:
        enc = tok.encode(text)
        ids.append(list(enc.ids))
        embs.append(embed_one(np.array(enc.ids), np.array(enc.type_ids), weights, cfg))
    e = np.stack(embs)
    cos = e @ e.T
    tok.no_truncation()
    untruncated_long = len(tok.encode(LONG).ids)

    q, rel, unr = NAMES.index("query"), NAMES.index("relevant"), NAMES.index("unrelated")
    assert cos[q, rel] > cos[q, unr], "sanity: query should be closer to the relevant passage"
    assert len(ids[NAMES.index("long")]) == max_len < untruncated_long

    fixture = {
        "about": "Golden embeddings of all-MiniLM-L6-v2 (sentence-transformers: mean pooling, L2 "
        "normalised) from an independent numpy float64 implementation, one text at a time without "
        "padding. crates/engine/tests/encoder.rs checks token ids exactly and embeddings and "
        "cosines to 1e-4. Sanity: the query is closer to the relevant passage (MS MARCO 6641238, "
        "DL19 grade 3) than to the unrelated one.",
        "command": "/work/venv-minilm/bin/python scripts/minilm_reference.py",
        "versions": {
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "safetensors": safetensors.__version__,
            "tokenizers": tokenizers.__version__,
        },
        "model": args.model,
        "model_safetensors_sha256": sha,
        "max_seq_length": max_len,
        "long_text_tokens_untruncated": untruncated_long,
        "names": NAMES,
        "texts": TEXTS,
        "token_ids": ids,
        "first8": [[round(float(x), 8) for x in v[:8]] for v in e],
        "cosine": [[round(float(x), 8) for x in row] for row in cos],
        "sanity": {
            "cos_query_relevant": round(float(cos[q, rel]), 6),
            "cos_query_unrelated": round(float(cos[q, unr]), 6),
        },
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {args.out}")
    print(f"cos(query, relevant) = {cos[q, rel]:.6f}, cos(query, unrelated) = {cos[q, unr]:.6f}")
    print(f"token counts: {[len(i) for i in ids]} (long text: {untruncated_long} before truncation)")


if __name__ == "__main__":
    main()
