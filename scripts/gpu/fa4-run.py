"""On the GPU machine: runs FlashAttention 4's forward (CuTe DSL, installed by
scripts/gpu/fa4-install.sh) on FA3-paper shapes (16k tokens, hidden 2048,
bf16), so that Nsight Compute can profile its kernel beside ours
(scripts/gpu/profile.sh, FA_PROFILE_FA4).

    python3 fa4-run.py [--site /tmp/fa4/site] [--iters 3] [--backward]
        D:N[:causal] ...

Each iteration runs the forward, then (--backward) its backward.
"""
import argparse
import site

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--site", default="/tmp/fa4/site")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--backward", action="store_true")
    args = parser.parse_args()
    site.addsitedir(args.site)
    from flash_attn.cute.interface import flash_attn_func

    for shape in args.shapes:
        d, n, *rest = shape.split(":")
        d, n, causal = int(d), int(n), rest == ["causal"]
        b, h = 16384 // n, 2048 // d
        q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16,
                               requires_grad=args.backward) for _ in range(3))
        for _ in range(args.iters):
            out = flash_attn_func(q, k, v, causal=causal)
            out = out[0] if isinstance(out, tuple) else out
            if args.backward:
                out.backward(torch.ones_like(out))
        torch.cuda.synchronize()
        print(f"fa4 hd{d} N={n}{' causal' if causal else ''}: out finite "
              f"{bool(torch.isfinite(out).all())}", flush=True)


if __name__ == "__main__":
    main()
