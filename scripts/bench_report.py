"""Render bench/engine.json (+ bench/llamacpp.json) as Markdown with ratios."""
import json
import os
import sys

eng = json.load(open(sys.argv[1]))
llama = json.load(open(sys.argv[2])) if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
by = {(c["mode"], c["template"]): c for c in eng["configs"]}
print("# Engine benchmark\n")
print("Command: `scripts/bench_engine.sh` (one run; ratios are what to read, the machine is noisy).\n")
print(f"Model `{eng['model']}` (dequantized to f32), {eng['depth']} candidates per query, "
      f"{eng['configs'][0]['queries']} DL19 query/queries, {eng['threads']} threads; "
      f"measured f32 gemm peak {eng['gemm_peak_gflops']:.0f} GFLOP/s.\n")
try:
    cpu = open("/proc/cpuinfo").read()
    model = next(l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("model name"))
    simd = sorted({f for f in cpu.split() if f.startswith(("avx2", "avx512f", "avx512_vnni"))})
    print(f"CPU: {model}, {os.cpu_count()} cores, SIMD {' '.join(simd) or 'none above SSE'}.\n")
except (OSError, StopIteration):
    pass
print("FLOPs count the projections (2 per multiply-add), attention over the keys each query row may see "
      "(so causal and block masks count only what they allow) and the output head at the slots only. "
      "Efficiency = FLOP-bound time at the measured gemm peak / wall time.\n")
print("| mode | template | B | windows | forwards | tokens/forward | s/window | s/query | tokens/s | GFLOP | FLOP-bound s | efficiency |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for c in eng["configs"]:
    print(f"| {c['mode']} | {c['template']} | {c['width']} | {c['windows']} | {c['forwards']} | {c['tokens_per_forward']:.0f} | "
          f"{c['seconds'] / c['windows']:.2f} | {c['seconds_per_query']:.1f} | {c['tokens_per_second']:.0f} | "
          f"{c['gflop']:.0f} | {c['flop_bound_seconds']:.1f} | {c['efficiency']:.0%} |")
print()
def ratio(a, b, what):
    if a in by and b in by:
        r = by[b]["seconds_per_query"] / by[a]["seconds_per_query"]
        print(f"- {what}: {r:.2f}x")
print("Ratios (per query, higher = first is faster):\n")
ratio(("batched", "standard"), ("pointwise", "standard"), "B = 20 batched vs B = 1 pointwise (prefix computed once)")
ratio(("invariant", "compact"), ("batched", "compact"), "invariant vs batched, compact template (>= 1 means invariant is not slower)")
if llama:
    b = by.get(("batched", "standard"))
    print()
    print("llama.cpp (llama-cpp-python " + llama["llama_cpp_python"] + ", same GGUF, same token ids, 2 threads):\n")
    print("| setting | s/window | tokens/s | ocrank batched speed-up |")
    print("|---|---|---|---|")
    for r in llama["runs"]:
        ours = b["seconds"] / b["windows"] if b else float("nan")
        print(f"| {r['setting']} | {r['seconds_per_window']:.2f} | {r['tokens_per_second']:.0f} | {r['seconds_per_window'] / ours:.2f}x |")
