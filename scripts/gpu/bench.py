"""FlashMLIR's fa-compile kernels against torch's attention backends, in one
process, on the same tensors (run on the GPU machine).

    python3 scripts/gpu/bench.py [KERNEL_DIR] [--json OUT.json]

Each KERNEL_DIR/NAME.ptx + NAME.meta (from scripts/gpu/make-kernels.sh
--bench) is loaded through the CUDA driver (ctypes, the context torch uses),
launched on torch tensors, checked against torch's SDPA (math backend in
fp32 on a slice), and timed with triton's do_bench (median) beside SDPA's
flash (FA2) and cuDNN backends. Prints a table with ratios.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


def read_meta(path):
    meta = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            key, value = (s.strip() for s in line.split("=", 1))
            meta[key] = value
    return meta


class Driver:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")

    def check(self, result, what):
        if result != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(result, ctypes.byref(name))
            raise RuntimeError(f"{what} failed: {name.value.decode()}")

    def load(self, ptx_path, meta):
        module = ctypes.c_void_p()
        data = open(ptx_path, "rb").read() + b"\0"
        self.check(self.cu.cuModuleLoadData(ctypes.byref(module), data), "cuModuleLoadData")
        func = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(func), module,
                                               meta["entry"].encode()), "cuModuleGetFunction")
        self.check(self.cu.cuFuncSetAttribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              int(meta["shared_bytes"])), "cuFuncSetAttribute")
        return func

    def launcher(self, func, meta, tensors):
        grid = [int(x) for x in meta["grid"].split(",")]
        block = [int(x) for x in meta["block"].split(",")]
        shared = int(meta["shared_bytes"])
        ptrs = [ctypes.c_uint64(t.data_ptr()) for t in tensors]
        params = (ctypes.c_void_p * len(ptrs))(*[ctypes.addressof(p) for p in ptrs])

        def launch():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            self.check(self.cu.cuLaunchKernel(func, *grid, *block, shared, stream, params, None),
                       "cuLaunchKernel")
        launch.keepalive = (ptrs, params)
        return launch


def flops(meta):
    b, h, nq, nk = (int(meta[k]) for k in ("batch", "heads_q", "seq_q", "seq_kv"))
    d, dv = int(meta["head_dim"]), int(meta["head_dim_v"])
    f = 2 * b * h * nq * nk * (d + dv)
    return f / 2 if meta["causal"] == "1" and nq == nk else f


def bench(fn):
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kernel_dir", nargs="?", default=".gpu-carry/bench")
    parser.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.cuda.init()
    torch.empty(1, device="cuda")  # make torch's context current
    driver = Driver()
    rows = []
    for meta_path in sorted(glob.glob(os.path.join(args.kernel_dir, "*.meta"))):
        meta = read_meta(meta_path)
        name = os.path.basename(meta_path)[:-5]
        dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
        b, hq, hkv = int(meta["batch"]), int(meta["heads_q"]), int(meta["heads_kv"])
        nq, nk, d, dv = (int(meta[k]) for k in ("seq_q", "seq_kv", "head_dim", "head_dim_v"))
        causal = meta["causal"] == "1"
        q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype)
        v = torch.randn(b, hkv, nk, dv, device="cuda", dtype=dtype)
        o = torch.full((b, hq, nq, dv), float("nan"), device="cuda", dtype=dtype)
        lse = torch.full((b, hq, nq), float("nan"), device="cuda", dtype=torch.float32)
        func = driver.load(meta_path[:-5] + ".ptx", meta)
        ours = driver.launcher(func, meta, [q, k, v, o, lse])
        ours()
        torch.cuda.synchronize()
        # Correctness on the first batch/head against fp32 math SDPA.
        kk = k[:1, :1].float().repeat_interleave(hq // hkv, 1)[:, :1]
        ref = F.scaled_dot_product_attention(q[:1, :1].float(), kk, v[:1, :1].float(),
                                             is_causal=causal, scale=float(meta["scale"]))
        err = ((o[:1, :1].float() - ref).norm() / ref.norm()).item()
        written = not torch.isnan(o).any().item()
        row = {"kernel": name, "B": b, "Hq": hq, "Hkv": hkv, "N": nq, "D": d, "causal": causal,
               "err": err, "written": written}
        fl = flops(meta)
        row["flashmlir"] = fl / (bench(ours) * 1e-3) / 1e12
        kx = k.repeat_interleave(hq // hkv, 1) if hq != hkv else k
        vx = v.repeat_interleave(hq // hkv, 1) if hq != hkv else v
        for peer, backend in (("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel([backend]):
                    fn = lambda: F.scaled_dot_product_attention(q, kx, vx, is_causal=causal)
                    fn()
                    row[peer] = fl / (bench(fn) * 1e-3) / 1e12
            except Exception as e:  # a backend may not take a shape
                row[peer] = None
        rows.append(row)
        fmt = lambda x: f"{x:7.1f}" if x else "    n/a"
        ratio = lambda a, c: f"{a / c:5.2f}" if c else "  n/a"
        print(f"{name:34s} err={err:.2e} {'ok' if written and err < 2e-2 else 'BAD'} "
              f"flashmlir={fmt(row['flashmlir'])} fa2={fmt(row['fa2'])} cudnn={fmt(row['cudnn'])} "
              f"x_fa2={ratio(row['flashmlir'], row['fa2'])} x_cudnn={ratio(row['flashmlir'], row['cudnn'])}",
              flush=True)
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    bad = [r for r in rows if not r["written"] or not r["err"] < 2e-2]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
