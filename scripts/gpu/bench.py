"""FlashMLIR's fa-compile kernels against torch's attention backends, in one
process, on the same tensors (run on the GPU machine).

    python3 scripts/gpu/bench.py [KERNEL_DIR] [--json OUT.json] [--check-only]

Each KERNEL_DIR/NAME.ptx + NAME.meta (from scripts/gpu/make-kernels.sh) is
loaded through the CUDA driver (ctypes, the context torch uses) and launched
on torch tensors. Forward kernels are checked against fp32 SDPA on one head;
backward kernels (pre, main, post) against an fp64 autograd reference on
fresh inputs with every output poisoned first. Then both are timed with
triton's do_bench (median) beside SDPA's flash (FA2) and cuDNN backends.
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
    """A .meta file (JSON, docs/runtime.md): integers, booleans and lists as
    such; a backward's or quantization's other kernels under "pre" and
    "post"."""
    with open(path) as f:
        return json.load(f)


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

    def tensor_map(self, tensor, rows, cols):
        """A CUtensorMap over a dense [B, H, N, D] tensor, boxes of rows x
        cols, the swizzle whose span is a box row (128 bytes; 64 or 32 for
        narrower rows: head dim 96), zero fill (what fa/Runtime/TensorMap.h
        encodes; this script launches kernels without the runtime)."""
        b, h, n, d = tensor.shape
        eb = tensor.element_size()
        # FP8 tensors go to TMA as bytes (CU_TENSOR_MAP_DATA_TYPE_UINT8).
        dtypes = {torch.bfloat16: 9, torch.float16: 6, torch.float32: 7,
                  torch.float8_e4m3fn: 0, torch.uint8: 0}
        u64x4 = ctypes.c_uint64 * 4
        dims = u64x4(d, n, h, b)
        strides = (ctypes.c_uint64 * 3)(d * eb, n * d * eb, h * n * d * eb)
        box = (ctypes.c_uint32 * 4)(cols, rows, 1, 1)
        ones = (ctypes.c_uint32 * 4)(1, 1, 1, 1)
        raw = ctypes.create_string_buffer(128 + 64)
        aligned = (ctypes.addressof(raw) + 63) // 64 * 64
        self.check(self.cu.cuTensorMapEncodeTiled(
            ctypes.c_void_p(aligned), dtypes[tensor.dtype], 4, ctypes.c_void_p(tensor.data_ptr()),
            dims, strides, box, ones, 0, {32: 1, 64: 2}.get(cols * eb, 3), 2, 0),
            "cuTensorMapEncodeTiled")
        return raw, aligned

    def launcher(self, func, meta, tensors):
        """`tensors` maps parameter names to tensors; `tmap_x` parameters
        (meta `tensor_maps`) are encoded from tensor x and passed by value."""
        grid, block, shared = meta.get("grid"), meta["block"], meta["shared_bytes"]
        sizes = {}
        if meta.get("runtime_shapes"):
            grid, sizes = self.runtime_grid(meta, tensors)
        boxes = meta.get("tensor_maps", {})
        ptrs, addresses = [], []
        for name in meta["args"]:
            if name in sizes:
                p = ctypes.c_uint64(sizes[name])
                ptrs.append(p)
                addresses.append(ctypes.addressof(p))
            elif name.startswith("tmap_"):
                rows, cols = boxes[name[5:]]
                raw, aligned = self.tensor_map(tensors[name[5:]], rows, cols)
                ptrs.append(raw)
                addresses.append(aligned)
            else:
                p = ctypes.c_uint64(tensors[name].data_ptr())
                ptrs.append(p)
                addresses.append(ctypes.addressof(p))
        params = (ctypes.c_void_p * len(addresses))(*addresses)

        def launch():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            self.check(self.cu.cuLaunchKernel(func, *grid, *block, shared, stream, params, None),
                       "cuLaunchKernel")
        launch.keepalive = (ptrs, params)
        return launch

    @staticmethod
    def runtime_grid(meta, tensors):
        """A runtime-shapes forward's grid and size arguments for `tensors`
        (as fa/Runtime's instantiate: a block per tile, or min(persistent
        blocks, tiles) looping over them)."""
        if meta["kind"] != "forward" or meta.get("varlen"):
            raise NotImplementedError("runtime shapes: the dense forward only")
        b, hq, nq = tensors["q"].shape[:3]
        sizes = {"batch": b, "seq_q": nq, "seq_kv": tensors["k"].shape[2]}
        grid = [-(-nq // int(meta["block_q"])), hq, b]
        blocks = int(meta.get("persistent_blocks", 0))
        if blocks > 0:
            grid = [min(blocks, grid[0] * grid[1] * grid[2]), 1, 1]
        return grid, sizes


def kernel_launcher(driver, meta_path, meta, tensors):
    """One call that launches a .meta's kernels on `tensors`: the forward,
    or the backward's pre, main and post kernels in turn."""
    ptx = meta_path[:-5] + ".ptx"
    launch_keys = {"backward": ("pre", None, "post"),
                   "quantize": ("pre", None)}.get(meta["kind"], (None,))
    # A deterministic backward takes turns on dq_turns, zero at every call;
    # a quantization's amax (i32 bits of non-negative floats) starts at 0.
    zeroed = None
    if meta.get("deterministic"):
        q_blocks = -(-int(meta["seq_q"]) // int(meta["block_q"]))
        zeroed = torch.zeros(int(meta["batch"]), int(meta["heads_q"]), q_blocks,
                             dtype=torch.int32, device="cuda")
        tensors = dict(tensors, dq_turns=zeroed)
    if meta["kind"] == "quantize":
        zeroed = torch.zeros(int(meta["batch"]), int(meta["groups"]),
                             dtype=torch.int32, device="cuda")
        tensors = dict(tensors, amax=zeroed)
    launches = []
    for key in launch_keys:
        # A launch object's keys over the top level's (tensor_maps, ...).
        sub = dict(meta, **meta[key]) if key else meta
        launches.append(driver.launcher(driver.load(ptx, sub), sub, tensors))

    def run():
        if zeroed is not None:
            zeroed.zero_()
        for launch in launches:
            launch()
    return run


def reference(q, k, v, meta):
    """fp64 attention with our masks (bottom-right), GQA, softcap; O, LSE."""
    hq, hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(hq // hkv, 1)
    v = v.repeat_interleave(hq // hkv, 1)
    s = (q @ k.transpose(-1, -2)) * float(meta["scale"])
    cap = float(meta.get("softcap", 0))
    if cap > 0:
        s = cap * torch.tanh(s / cap)
    nq, nk = q.shape[2], k.shape[2]
    i = torch.arange(nq, device=q.device)[:, None]
    j = torch.arange(nk, device=q.device)[None, :]
    shift = nk - nq
    keep = torch.ones(nq, nk, dtype=torch.bool, device=q.device)
    if meta["causal"]:
        keep &= j <= i + shift
    left, right = meta.get("window_left", -1), meta.get("window_right", -1)
    if left >= 0:
        keep &= j >= i + shift - left
    if right >= 0:
        keep &= j <= i + shift + right
    s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def rel(out, ref):
    """||out - ref|| / ||ref||, with ||ref|| floored at 0.1 per element: a
    gradient that is exactly 0 (N = 1: P = 1, dS = dP - delta = 0) is then
    judged against the O(1) scale of the inputs instead of against 0."""
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any():
        return float("inf")
    floor = 0.1 * math.sqrt(ref.numel())
    return ((out - ref).norm() / max(ref.norm().item(), floor)).item()


def run_backward(driver, name, meta, meta_path, check_only):
    dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
    b, hq, hkv = int(meta["batch"]), int(meta["heads_q"]), int(meta["heads_kv"])
    nq, nk, d, dv = (int(meta[k]) for k in ("seq_q", "seq_kv", "head_dim", "head_dim_v"))
    dev = "cuda"
    q = torch.randn(b, hq, nq, d, device=dev).to(dtype)
    k = torch.randn(b, hkv, nk, d, device=dev).to(dtype)
    v = torch.randn(b, hkv, nk, dv, device=dev).to(dtype)
    do = torch.randn(b, hq, nq, dv, device=dev).to(dtype)
    row = {"kernel": name, "kind": "backward", "B": b, "Hq": hq, "Hkv": hkv, "N": nq, "D": d,
           "causal": meta["causal"]}
    small = b * hq * nq * nk <= 64 * 1024 * 1024
    if small:
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        o64, lse64 = reference(q64, k64, v64, meta)
        dq64, dk64, dv64 = torch.autograd.grad(o64, (q64, k64, v64), do.double())
        o, lse = o64.detach().to(dtype), lse64.detach().float()
    else:  # timing only: any finite O and LSE
        o = torch.randn(b, hq, nq, dv, device=dev).to(dtype)
        lse = torch.full((b, hq, nq), 8.0, device=dev)
    nan = float("nan")
    delta = torch.full((b, hq, nq), nan, device=dev)
    dq_acc = torch.full((b, hq, nq, d), nan, device=dev)
    dq = torch.full_like(q, nan)
    dk = torch.full_like(k, nan)
    dv_out = torch.full_like(v, nan)
    tensors = {"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse, "delta": delta,
               "dq_acc": dq_acc, "dq": dq, "dk": dk, "dv": dv_out}
    ours = kernel_launcher(driver, meta_path, meta, tensors)
    ours()
    torch.cuda.synchronize()
    if small:
        row["err_dq"], row["err_dk"], row["err_dv"] = rel(dq, dq64), rel(dk, dk64), rel(dv_out, dv64)
    else:
        row["err_dq"] = row["err_dk"] = row["err_dv"] = None
    written = not any(torch.isnan(t).any().item() for t in (dq, dk, dv_out))
    row["written"] = written
    bound = 2e-2 if dtype == torch.bfloat16 else 5e-3
    row["ok"] = written and all(e is None or e < bound for e in (row["err_dq"], row["err_dk"], row["err_dv"]))
    if not check_only:
        fl = 2.5 * flops(meta)
        row["flashmlir"] = fl / (bench(ours) * 1e-3) / 1e12
        kx = k.repeat_interleave(hq // hkv, 1).requires_grad_()
        vx = v.repeat_interleave(hq // hkv, 1).requires_grad_()
        qx = q.clone().requires_grad_()
        for peer, backend in (("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel([backend]):
                    out = F.scaled_dot_product_attention(qx, kx, vx, is_causal=row["causal"])
                    g = lambda: torch.autograd.grad(out, (qx, kx, vx), do, retain_graph=True)
                    row[peer] = fl / (bench(g) * 1e-3) / 1e12
            except Exception:
                row[peer] = None
    fmt = lambda x: f"{x:.2e}" if x is not None else "n/a"
    print(f"{'PASS' if row['ok'] else 'FAIL'} {name} bwd err_dq={fmt(row['err_dq'])} "
          f"err_dk={fmt(row['err_dk'])} err_dv={fmt(row['err_dv'])}" +
          ("" if check_only else
           f" flashmlir={row['flashmlir']:.1f} fa2={row['fa2'] or 0:.1f} cudnn={row['cudnn'] or 0:.1f}"
           f" x_fa2={row['flashmlir'] / row['fa2'] if row['fa2'] else 0:.2f}"
           f" x_cudnn={row['flashmlir'] / row['cudnn'] if row['cudnn'] else 0:.2f}"), flush=True)
    return row


def flops(meta):
    b, h, nq, nk = (int(meta[k]) for k in ("batch", "heads_q", "seq_q", "seq_kv"))
    d, dv = int(meta["head_dim"]), int(meta["head_dim_v"])
    f = 2 * b * h * nq * nk * (d + dv)
    return f / 2 if meta["causal"] and nq == nk else f


def bench(fn):
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kernel_dir", nargs="?", default=".gpu-carry/bench")
    parser.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    parser.add_argument("--check-only", action="store_true", help="no timing")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.cuda.init()
    torch.empty(1, device="cuda")  # make torch's context current
    driver = Driver()
    rows = []
    for meta_path in sorted(glob.glob(os.path.join(args.kernel_dir, "*.meta"))):
        meta = read_meta(meta_path)
        name = os.path.basename(meta_path)[:-5]
        if meta["kind"] == "backward":
            rows.append(run_backward(driver, name, meta, meta_path, args.check_only))
            continue
        dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
        b, hq, hkv = int(meta["batch"]), int(meta["heads_q"]), int(meta["heads_kv"])
        nq, nk, d, dv = (int(meta[k]) for k in ("seq_q", "seq_kv", "head_dim", "head_dim_v"))
        causal = meta["causal"]
        q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype)
        v = torch.randn(b, hkv, nk, dv, device="cuda", dtype=dtype)
        o = torch.full((b, hq, nq, dv), float("nan"), device="cuda", dtype=dtype)
        lse = torch.full((b, hq, nq), float("nan"), device="cuda", dtype=torch.float32)
        func = driver.load(meta_path[:-5] + ".ptx", meta)
        ours = driver.launcher(func, meta, {"q": q, "k": k, "v": v, "o": o, "lse": lse})
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
        if args.check_only:  # one launch each (scripts/gpu/profile.sh)
            rows.append(row)
            print(f"{name:34s} err={err:.2e} {'ok' if written and err < 2e-2 else 'BAD'}", flush=True)
            continue
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
    bad = [r for r in rows if not r["written"] or not r.get("ok", r.get("err", 1) < 2e-2)]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
