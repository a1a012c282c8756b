#!/usr/bin/env python3
"""Runs kernels written at the GPU tile level (test/gpu/Inputs/tile-kernels.mlir,
compiled on the build machine with `fa-compile --chip=sm_90a`) on the GPU and
compares them with float64 torch: outputs poisoned with NaN before each run,
fresh random inputs each case, ||out - ref|| / ||ref||, rows past the valid
count must stay untouched.

    python3 scripts/gpu/tile-check.py PREFIX.ptx [--quick]

Exits non-zero on any failure. Needs torch and the CUDA driver only.
"""
import argparse
import ctypes
import math
import sys

import torch

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class Driver:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        torch.zeros(1, device="cuda")  # makes the primary context current

    def check(self, rc, what):
        if rc != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError(f"{what}: {name.value.decode()} ({rc})")

    def load(self, ptx: bytes):
        module = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(module),
                                            ctypes.c_char_p(ptx + b"\0")),
                   "cuModuleLoadData")
        return module

    def function(self, module, name):
        f = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(f), module,
                                               name.encode()),
                   f"cuModuleGetFunction({name})")
        return f

    def launch(self, f, grid, block, shared, args):
        if shared > 48 * 1024:
            self.check(self.cu.cuFuncSetAttribute(
                f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
                "cuFuncSetAttribute")
        # Memrefs are bare pointers, indices 64-bit integers.
        values = [ctypes.c_void_p(a.data_ptr()) if torch.is_tensor(a)
                  else ctypes.c_int64(a) for a in args]
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.cu.cuLaunchKernel(
            f, grid, 1, 1, block, 1, 1, shared, stream, params, None),
            "cuLaunchKernel")
        torch.cuda.synchronize()


def rel(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def reference(q, k, v, nq, nk):
    qd, kd, vd = q[:nq].double(), k[:nk].double(), v[:nk].double()
    s = qd @ kd.T / math.sqrt(q.shape[1])
    return torch.softmax(s, dim=-1) @ vd, torch.logsumexp(s, -1) / math.log(2)


# (kernel, Q rows, K/V rows, D, Q rows per CTA, threads, shared bytes, lse)
KERNELS = [
    ("tile_attention", 256, 128, 64, 64, 128, 40960, False),
    ("tile_attention_d128_2wg", 256, 128, 128, 128, 256, 98304, True),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ptx")
    parser.add_argument("--quick", action="store_true",
                        help="one case per kernel (for compute-sanitizer)")
    args = parser.parse_args()
    drv = Driver()
    module = drv.load(open(args.ptx, "rb").read())
    cases = [(256, 128), (250, 100), (77, 1), (129, 17)]
    if args.quick:
        cases = cases[1:2]
    failures = 0
    for name, rows, keys, d, block_rows, threads, shared, has_lse in KERNELS:
        f = drv.function(module, name)
        for nq, nk in cases:
            gen = torch.Generator(device="cuda").manual_seed(hash((name, nq, nk)) & 0xFFFF)
            q = torch.randn(rows, d, device="cuda", generator=gen).bfloat16()
            k = torch.randn(keys, d, device="cuda", generator=gen).bfloat16()
            v = torch.randn(keys, d, device="cuda", generator=gen).bfloat16()
            o = torch.full((rows, d), float("nan"), device="cuda")
            lse = torch.full((rows,), float("nan"), device="cuda")
            kernel_args = [q, k, v, o] + ([lse] if has_lse else []) + [nq, nk]
            grid = (nq + block_rows - 1) // block_rows
            drv.launch(f, grid, threads, shared, kernel_args)
            ref_o, ref_lse = reference(q, k, v, nq, nk)
            err = rel(o[:nq], ref_o)
            untouched = bool(torch.isnan(o[nq:]).all())
            ok = err <= 1e-2 and untouched and bool(torch.isfinite(o[:nq]).all())
            line = f"{name:26s} nq={nq:4d} nk={nk:4d}  O rel err {err:.2e}"
            if has_lse:
                lerr = (lse[:nq].double() - ref_lse).abs().max().item()
                ok = ok and lerr <= 1e-3 and bool(torch.isnan(lse[nq:]).all())
                line += f"  LSE2 max abs err {lerr:.2e}"
            line += f"  rows past nq untouched: {untouched}  {'PASS' if ok else 'FAIL'}"
            print(line, flush=True)
            failures += not ok
    total = len(KERNELS) * len(cases)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
