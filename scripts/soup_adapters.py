#!/usr/bin/env python3
"""A uniform "soup" of LoRA adapters: one adapter whose weight update is the
mean of the members' updates, so that one forward scores with the averaged
weights (unlike scripts/ensemble_scores.py, which averages N forwards'
scores):

    scripts/soup_adapters.py ADAPTER_DIR ADAPTER_DIR [...] --out DIR
    target/release/ocrank audit ... --adapter DIR

Each member is a PEFT-layout adapter directory (adapter_config.json,
adapter_model.safetensors, F32) of the same base model, target modules and
scale (lora_alpha / r), e.g. one training recipe at several seeds. For N
members of rank r the soup has rank N*r and lora_alpha N*alpha (the same
scale): its lora_A stacks the members' A (rows), its lora_B places the
members' B side by side (columns), each divided by N, so

    B_soup A_soup = (1/N) sum_i B_i A_i        (exactly, per module)

The members' A matrices start from different random initialisations, so
factor-wise averaging (mean of A, mean of B) would not be the mean update;
the concatenation is. The output is an ordinary PEFT adapter; `--check`
recomputes the updates of a few modules and compares them.

Pure Python (no numpy on the CPU machine): a ~20 MB adapter takes seconds.
"""
import argparse
import json
import os
import struct
import sys
from array import array

CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"


def fail(msg):
    sys.exit(f"soup_adapters: {msg}")


def read_config(directory):
    path = os.path.join(directory, CONFIG)
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    for field in ("r", "lora_alpha", "target_modules"):
        if field not in cfg:
            fail(f"{path}: field {field} is missing")
    if not isinstance(cfg["r"], int) or cfg["r"] < 1:
        fail(f"{path}: field r: {cfg['r']!r} is not a positive integer")
    if not isinstance(cfg["lora_alpha"], (int, float)):
        fail(f"{path}: field lora_alpha: {cfg['lora_alpha']!r} is not a number")
    for field in ("use_dora", "use_rslora"):
        if cfg.get(field):
            fail(f"{path}: field {field} is true; only plain LoRA adapters can be souped")
    return cfg


def read_safetensors(path):
    """name -> (shape, array('f')) for an all-F32 safetensors file."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"{path}: {e}")
    if len(raw) < 8:
        fail(f"{path}: {len(raw)} bytes, too short for a safetensors header")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        fail(f"{path}: header length {n} runs past the end of the file")
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        fail(f"{path}: header is not JSON ({e})")
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info.get("dtype") != "F32":
            fail(f"{path}: tensor {name} has dtype {info.get('dtype')}, expected F32")
        shape = info["shape"]
        begin, end = info["data_offsets"]
        count = 1
        for d in shape:
            count *= d
        if end - begin != 4 * count or end > len(data):
            fail(f"{path}: tensor {name}: data_offsets {begin}..{end} do not hold "
                 f"shape {shape} in F32")
        values = array("f")
        values.frombytes(data[begin:end])
        if sys.byteorder != "little":
            values.byteswap()
        out[name] = (shape, values)
    return out


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        shape, values = tensors[name]
        blob = values.tobytes() if sys.byteorder == "little" else _swapped(values)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)


def _swapped(values):
    v = array("f", values)
    v.byteswap()
    return v.tobytes()


def soup(members):
    """members: list of name -> (shape, values); returns the soup's tensors."""
    n = len(members)
    names = sorted(members[0][1])
    for directory, tensors in members[1:]:
        if sorted(tensors) != names:
            extra = sorted(set(tensors) ^ set(names))[:3]
            fail(f"{directory}: holds other tensors than {members[0][0]} (e.g. {extra})")
    out = {}
    for name in names:
        shapes = [t[name][0] for _, t in members]
        if len(shapes[0]) != 2 or any(s != shapes[0] for s in shapes):
            fail(f"tensor {name}: shapes {shapes} differ or are not matrices")
        rows, cols = shapes[0]
        if ".lora_A." in name:
            # [r, in] -> [N r, in]: the members' rows one after another.
            values = array("f")
            for _, t in members:
                values.extend(t[name][1])
            out[name] = ([n * rows, cols], values)
        elif ".lora_B." in name:
            # [out, r] -> [out, N r]: each output row is the members' rows side by side, / N.
            values = array("f")
            for row in range(rows):
                for _, t in members:
                    values.extend(x / n for x in t[name][1][row * cols:(row + 1) * cols])
            out[name] = ([rows, n * cols], values)
        else:
            fail(f"tensor {name} is neither lora_A nor lora_B; cannot soup it")
    return out


def update(tensors, module, scale):
    """Dense B A * scale of one module (list of rows)."""
    (ra, ca), a = tensors[f"{module}.lora_A.weight"]
    (rb, cb), b = tensors[f"{module}.lora_B.weight"]
    assert cb == ra
    return [[scale * sum(b[i * cb + k] * a[k * ca + j] for k in range(cb)) for j in range(ca)]
            for i in range(rb)]


def check(members, scale, souped, modules):
    worst = 0.0
    for module in modules:
        mean = None
        for _, t in members:
            u = update(t, module, scale)
            mean = u if mean is None else [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(mean, u)]
        mean = [[x / len(members) for x in row] for row in mean]
        got = update(souped, module, scale)
        err = max(abs(x - y) for r1, r2 in zip(mean, got) for x, y in zip(r1, r2))
        size = max(abs(x) for row in mean for x in row)
        worst = max(worst, err / max(size, 1e-30))
        print(f"check {module}: max |soup - mean update| {err:.2e} (max |mean update| {size:.2e})")
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("adapters", nargs="+", help="PEFT adapter directories (at least two)")
    p.add_argument("--out", required=True, help="directory for the soup adapter")
    p.add_argument("--check", type=int, default=0, metavar="K",
                   help="recompute the update of the K smallest modules and compare")
    args = p.parse_args()
    if len(args.adapters) < 2:
        fail("a soup needs at least two adapters")
    configs = [read_config(d) for d in args.adapters]
    first = configs[0]
    for d, cfg in zip(args.adapters[1:], configs[1:]):
        for field in ("base_model_name_or_path", "target_modules", "bias"):
            if cfg.get(field) != first.get(field):
                fail(f"{d}: {field} {cfg.get(field)!r} differs from "
                     f"{args.adapters[0]}'s {first.get(field)!r}")
        if cfg["lora_alpha"] / cfg["r"] != first["lora_alpha"] / first["r"]:
            fail(f"{d}: scale lora_alpha/r {cfg['lora_alpha']}/{cfg['r']} differs from "
                 f"{args.adapters[0]}'s {first['lora_alpha']}/{first['r']}")
        if cfg["r"] != first["r"]:
            fail(f"{d}: rank r {cfg['r']} differs from {args.adapters[0]}'s {first['r']}")
    members = [(d, read_safetensors(os.path.join(d, WEIGHTS))) for d in args.adapters]
    souped = soup(members)
    n = len(members)
    os.makedirs(args.out, exist_ok=True)
    cfg = dict(first)
    cfg["r"] = n * first["r"]
    cfg["lora_alpha"] = n * first["lora_alpha"]
    with open(os.path.join(args.out, CONFIG), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    metadata = {"format": "pt", "ocrank_soup_of": json.dumps(args.adapters),
                "ocrank_soup_command": " ".join(sys.argv)}
    write_safetensors(os.path.join(args.out, WEIGHTS), souped, metadata)
    print(f"soup of {n} adapters (rank {first['r']} -> {cfg['r']}, lora_alpha "
          f"{first['lora_alpha']} -> {cfg['lora_alpha']}, {len(souped)} tensors) -> {args.out}")
    if args.check:
        modules = sorted({k.rsplit(".lora_", 1)[0] for k in souped},
                         key=lambda m: (souped[f"{m}.lora_A.weight"][0][1]
                                        * souped[f"{m}.lora_B.weight"][0][0], m))[:args.check]
        worst = check(members, first["lora_alpha"] / first["r"], souped, modules)
        if worst > 1e-5:
            fail(f"check failed: the soup's update differs from the mean by {worst:.2e} "
                 "of its largest entry")


if __name__ == "__main__":
    main()
