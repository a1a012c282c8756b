"""flashmlir.attention(q, k, v, fp8=True) on bf16 tensors, end to end (the
compiler's quantization kernels, then the FP8 forward), timed beside the
bf16 flashmlir.attention and cuDNN's bf16 SDPA on the same tensors, in one
process; with the relative error of each against float64 at N = 2048.

    python3 scripts/gpu/fp8-python-timing.py [--json OUT.json]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashmlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import bench  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."),
                                                       "fp8-python.json"))
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for d, n, causal in ((128, 2048, False), (128, 8192, False), (128, 8192, True),
                         (256, 8192, False), (256, 16384, True)):
        b, h = 16384 // n, 2048 // d
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        calls = {
            "fp8=True": lambda: flashmlir.attention(q, k, v, causal=causal, fp8=True),
            "bf16": lambda: flashmlir.attention(q, k, v, causal=causal),
        }
        with torch.no_grad():
            outs = {name: call() for name, call in calls.items()}
            ms = {name: bench(call) for name, call in calls.items()}
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                ms["cudnn bf16"] = bench(lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal))
        flops = 4 * b * h * n * n * d / (2 if causal else 1)
        row = dict(d=d, n=n, causal=causal,
                   tflops={name: flops / t / 1e9 for name, t in ms.items()})
        if n <= 2048:
            s = (q.double() @ k.double().transpose(-1, -2)) / d ** 0.5
            ref = torch.softmax(s, -1) @ v.double()
            row["rel_err"] = {name: float((o.double() - ref).norm() / ref.norm())
                              for name, o in outs.items()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
