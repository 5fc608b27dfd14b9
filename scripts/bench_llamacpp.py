"""Time llama.cpp on the exact token ids ocrank scores (one process, same
machine, run right after `ocrank bench` by scripts/bench_engine.sh).

Usage: python scripts/bench_llamacpp.py PROMPTS.jsonl MODEL.gguf OUT.json
PROMPTS.jsonl comes from `ocrank prompts --tokens` (batched windows).
Needs llama-cpp-python==0.3.36 (see scripts/llamacpp_parity.py for the venv).
"""
import json
import sys
import time

import llama_cpp
from llama_cpp import Llama


def main():
    prompts, model, out = sys.argv[1:4]
    windows = [json.loads(line) for line in open(prompts)]
    rows = []
    settings = {
        "defaults": dict(),
        "flash_attn_nbatch512": dict(flash_attn=True, n_batch=512, n_ubatch=512),
    }
    for name, kw in settings.items():
        llm = Llama(model_path=model, n_ctx=4096, n_threads=2, n_threads_batch=2,
                    logits_all=False, verbose=False, **kw)
        secs, tokens = [], 0
        for w in windows:
            ids = w["prefix_tokens"] + w["tokens"]
            llm.reset()
            t = time.perf_counter()
            llm.eval(ids)
            secs.append(time.perf_counter() - t)
            tokens += len(ids)
        rows.append({"setting": name, "windows": len(windows), "tokens": tokens,
                     "seconds": sum(secs), "seconds_per_window": sum(secs) / len(windows),
                     "tokens_per_second": tokens / sum(secs)})
        print(json.dumps(rows[-1]), file=sys.stderr)
        del llm
    json.dump({"llama_cpp_python": llama_cpp.__version__, "model": model, "runs": rows},
              open(out, "w"), indent=2)


if __name__ == "__main__":
    main()
