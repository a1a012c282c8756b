"""The quantization kernels of fa.quantize (fa-compile on a .mlir with one
fa.quantize: `quantize_*.meta`), checked against float64 and timed.

For each kernel: x ~ N(0, 1) with 0.1 % of entries N(0, 10) (FlashAttention
3's outliers), the output poisoned (0x7f, e4m3's NaN) and the descale NaN
before the launch. Reference: y = x diag(signs) Hd / sqrt(D) in float64
(the signs from the op's definition, QuantizeOp::hadamardSign, written
again here), amax per (batch, group), descale = amax / 448, and torch's
e4m3 rounding of clamp(y * 448 / amax). Passes when the descales agree to
1e-5, every byte equals the reference's or is its neighbouring code (f32
against f64 rounding at a tie; +0 and -0 count as equal), at most 1e-3 of
them differ, and no NaN is left. Then the time of amax + scale (zeroing included) and the bytes moved
(x read twice, the output written once) per second.

    python3 scripts/gpu/quantize-check.py DIR... [--json OUT.json]
"""
import argparse
import glob
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Driver, bench, kernel_launcher, read_meta  # noqa: E402

MASK = (1 << 64) - 1


def hadamard_sign(seed, i):
    """QuantizeOp::hadamardSign: splitmix64's finalizer over (seed, i)."""
    z = (seed * 0x9E3779B97F4A7C15 + i + 0x632BE59BD9B4E019) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return -1.0 if z >> 63 else 1.0


def rotation(d, seed):
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    signs = torch.tensor([hadamard_sign(seed, i) for i in range(d)], dtype=torch.float64)
    return (signs[:, None] * h / d ** 0.5).cuda()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "quantize-check.json"))
    args = parser.parse_args()
    torch.manual_seed(0)
    driver = Driver()
    rows, failed = [], False
    for meta_path in sorted(p for d in args.dirs for p in glob.glob(os.path.join(d, "quantize_*.meta"))):
        meta = read_meta(meta_path)
        b, h, g, n, d = (int(meta[k]) for k in ("batch", "heads", "groups", "seq", "head_dim"))
        dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
        x = torch.randn(b, h, n, d, device="cuda")
        outliers = torch.rand(b, h, n, d, device="cuda") < 0.001
        x = torch.where(outliers, 10 * torch.randn(b, h, n, d, device="cuda"), x).to(dtype)
        t = {"x": x,
             "out": torch.full((b, h, n, d), 0x7F, dtype=torch.uint8, device="cuda"),
             "descale": torch.full((b, g), float("nan"), device="cuda")}
        run = kernel_launcher(driver, meta_path, meta, t)
        run()
        torch.cuda.synchronize()

        y = x.double()
        if "rotation_seed" in meta:
            y = y @ rotation(d, int(meta["rotation_seed"]))
        amax = y.reshape(b, g, -1).abs().amax(-1).clamp_min(1e-12)
        descale_err = float(((t["descale"].double() - amax / 448) / (amax / 448)).abs().max())
        scaled = (y.reshape(b, g, -1) * (448 / amax)[..., None]).clamp(-448, 448)
        ref = scaled.float().to(torch.float8_e4m3fn).view(torch.uint8).reshape(b, h, n, d)
        diff = (t["out"].int() - ref.int()).abs()
        # +0 and -0 (0x00, 0x80): a value that rounds to zero from f32 and
        # f64 with different signs; both dequantize to 0.
        zeros = ((t["out"] & 0x7F) == 0) & ((ref & 0x7F) == 0)
        diff = torch.where(zeros, torch.zeros_like(diff), diff)
        mismatch = float((diff != 0).double().mean())
        nan_left = int(((t["out"] & 0x7F) == 0x7F).sum())
        ok = (descale_err <= 1e-5 and int(diff.max()) <= 1 and mismatch <= 1e-3
              and nan_left == 0)
        failed |= not ok
        deq = t["out"].view(torch.float8_e4m3fn).double().reshape(b, g, -1) * t["descale"].double()[..., None]
        rel = float((deq - y.reshape(b, g, -1)).norm() / y.norm())
        ms = bench(run)
        gbs = (2 * x.numel() * x.element_size() + x.numel()) / ms / 1e6
        name = os.path.basename(meta_path)[:-5]
        rows.append(dict(name=name, ok=ok, descale_rel_err=descale_err, byte_mismatch=mismatch,
                         max_code_diff=int(diff.max()), nan_left=nan_left,
                         rel_l2_dequantized=rel, ms=ms, gb_per_s=gbs))
        print(f"{'PASS' if ok else 'FAIL'} {name:32s} descale {descale_err:.1e}  bytes off "
              f"{mismatch:.1e} (max code diff {int(diff.max())})  NaN {nan_left}  "
              f"rel l2 {rel:.2e}  {ms * 1e3:7.1f} us  {gbs:6.0f} GB/s", flush=True)
    json.dump(rows, open(args.json, "w"), indent=1)
    sys.exit(1 if failed or not rows else 0)


if __name__ == "__main__":
    main()
