"""Runs torch's cuDNN and flash SDPA once per shape (after a warm-up), so that
ncu can profile the peers' kernels beside ours (scripts/gpu/profile.sh).

    python3 scripts/gpu/peer-sdpa.py D:N[:causal] ...
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

TOKENS = 16384  # as scripts/gpu/bench.py: batch = 16k / N, 2048 / D heads


def main():
    for spec in sys.argv[1:]:
        parts = spec.split(":")
        d, n = int(parts[0]), int(parts[1])
        causal = len(parts) > 2 and parts[2] == "causal"
        b, h = max(1, TOKENS // n), 2048 // d
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
            with sdpa_kernel([backend]):
                for _ in range(2):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        print(f"ran d={d} n={n} causal={causal} b={b} h={h}", flush=True)


if __name__ == "__main__":
    main()
