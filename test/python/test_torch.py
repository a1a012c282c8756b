"""flashmlir.attention's argument checks (CPU); skipped without torch."""

import pytest

torch = pytest.importorskip("torch")

import flashmlir  # noqa: E402


def test_attention_exported():
    assert hasattr(flashmlir, "attention")
    assert issubclass(flashmlir.FlashAttentionFunction,
                      torch.autograd.Function)


def test_cpu_tensors_rejected():
    q = torch.zeros(1, 2, 16, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="CUDA tensor"):
        flashmlir.attention(q, q, q)


def test_non_tensor_rejected():
    with pytest.raises(TypeError, match="torch.Tensor"):
        flashmlir.attention(1, 2, 3)


def _custom_ops():
    from flashmlir import torch_ops
    if not torch_ops._CUSTOM_OPS:
        pytest.skip("this torch has no torch.library.custom_op")
    return torch.ops.flashmlir


def test_custom_ops_fake_shapes():
    # What torch.compile sees of the ops (their fake implementations, also
    # used for meta tensors): o (B, Hq, Nq, Dv) in q's dtype, lse (B, Hq,
    # Nq) float32; the gradients dense whatever the inputs' strides, as the
    # kernels write them.
    ops = _custom_ops()
    bf16 = torch.bfloat16
    q = torch.empty(2, 100, 8, 64, dtype=bf16, device="meta").transpose(1, 2)
    k = torch.empty(2, 2, 120, 64, dtype=bf16, device="meta")
    v = torch.empty(2, 2, 120, 32, dtype=bf16, device="meta")
    o, lse = ops.attention_forward(q, k, v, True, None, [16, 0], None, None,
                                   False)
    assert o.shape == (2, 8, 100, 32) and o.dtype == bf16
    assert lse.shape == (2, 8, 100) and lse.dtype == torch.float32
    assert o.is_contiguous() and lse.is_contiguous()
    dq, dk, dv = ops.attention_backward(o, None, q, k, v, o, lse, True, None,
                                        [16, 0], None, True)
    assert not q.is_contiguous()
    for grad, like in ((dq, q), (dk, k), (dv, v)):
        assert grad.shape == like.shape and grad.dtype == like.dtype
        assert grad.is_contiguous()


def test_deterministic_must_be_bool():
    q = torch.zeros(1, 2, 16, 64, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="deterministic"):
        flashmlir.attention(q, q, q, deterministic=1)


def test_thin_call_path_key():
    # A call reuses an earlier checked call's config and kernel only where
    # everything the checks read is in its key; flags of other types than
    # the checks take, and tensor subclasses, always go through the checks.
    from flashmlir.torch_ops import _call_key
    q = torch.zeros(1, 2, 16, 64, dtype=torch.bfloat16)
    key = _call_key(q, q, q, False, None, None, None, False, None)
    assert key == _call_key(q.clone(), q, q, 0, None, None, None, False,
                            None)
    assert key != _call_key(q, q, q, True, None, None, None, False, None)
    assert key != _call_key(q[:, :, :8], q, q, False, None, None, None,
                            False, None)
    assert key != _call_key(q.half(), q, q, False, None, None, None, False,
                            None)
    assert _call_key(q, q, q, False, None, None, None, 1, None) is None
    assert _call_key(q, q, q, False, None, None, None, False, 1) is None
    p = torch.nn.Parameter(q)
    assert _call_key(p, q, q, False, None, None, None, False, None) is None
    # A list window makes an unhashable key: the call is checked as usual.
    with pytest.raises(ValueError, match="CUDA tensor"):
        flashmlir.attention(q, q, q, window=[4, 4])


def test_runtime_shapes_backward_only_where_measured_as_fast():
    # "auto" gives a problem's later shapes the runtime-shapes backward set
    # only where the H200 measured it as fast as a set built for the shape.
    from flashmlir import Config
    from flashmlir.torch_ops import _runtime_shapes_backward_pays as pays
    assert pays(Config(head_dim=128))
    assert pays(Config(head_dim=64, head_dim_v=64, softcap=30.0))
    assert not pays(Config(head_dim=128, causal=True))
    assert not pays(Config(head_dim=128, window=(64, 64)))
    assert not pays(Config(head_dim=256))
    assert not pays(Config(head_dim=128, head_dim_v=256))


def test_attention_fp8_checks_its_arguments():
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("this torch has no float8_e4m3fn")
    q = torch.zeros(1, 2, 16, 128, dtype=torch.bfloat16)
    d = torch.ones(1, 2)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        flashmlir.attention_fp8(q, q, q, d, d, d)
    q8 = q.to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="CUDA tensor"):
        flashmlir.attention_fp8(q8, q8, q8, d, d, d)


def test_attention_fp8_true_refuses_gradients_and_bad_flags():
    q = torch.zeros(1, 2, 16, 128, dtype=torch.bfloat16, requires_grad=True)
    with pytest.raises(NotImplementedError, match="no backward yet"):
        flashmlir.attention(q, q, q, fp8=True)
    with pytest.raises(TypeError, match="fp8 must be True or False"):
        flashmlir.attention(q, q, q, fp8="yes")
    with pytest.raises(TypeError, match="bfloat16 or float16 CUDA tensor"):
        flashmlir.quantize_fp8(q.detach())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_quantize_fp8_and_attention_fp8_true_against_float64():
    torch.manual_seed(0)
    major, _ = torch.cuda.get_device_capability()
    if major < 9:
        pytest.skip("FP8 attention runs on sm_90a")
    q, k, v = (torch.randn(2, 4, 300, 128, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    # The quantization alone: the descales are amax / 448 of the rotated
    # rows, and dequantizing gives them back within e4m3's precision.
    q8, qd = flashmlir.quantize_fp8(q, groups=2, rotation_seed=7)
    assert q8.dtype == torch.float8_e4m3fn and qd.shape == (2, 2)
    from flashmlir.fp8 import DEFAULT_ROTATION_SEED
    v8, vd = flashmlir.quantize_fp8(v, groups=2)
    amax = v.double().reshape(2, 2, -1).abs().amax(-1)
    assert torch.allclose(vd.double(), amax / 448, rtol=1e-6)
    back = v8.double().reshape(2, 2, -1) * vd.double()[..., None]
    err = (back - v.double().reshape(2, 2, -1)).norm() / v.double().norm()
    assert err < 0.04, err
    # The whole FP8 forward against float64: of the inputs it quantized
    # (Q and K rotated with attention's seed, per (batch, KV head) scales),
    # the kernel's own error (P in e4m3: 1-2e-2 in the GPU check matrix);
    # of the bf16 inputs, that plus e4m3's rounding of every input (3
    # mantissa bits: ~3.6 % a value, ~4.5 % on O here).
    o = torch.full_like(q, float("nan"))
    with torch.no_grad():
        o = flashmlir.attention(q, k, v, causal=True, fp8=True)
    mask = torch.ones(300, 300, device="cuda", dtype=torch.bool).tril()

    def reference(q, k, v):
        s = (q @ k.transpose(-1, -2)) / 128 ** 0.5
        return torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v

    def dequantized(x, groups, seed):
        x8, descale = flashmlir.quantize_fp8(x, groups=groups, rotation_seed=seed)
        blocks = x8.double().reshape(2, groups, -1) * descale.double()[..., None]
        return blocks.reshape(x.shape)

    seed = DEFAULT_ROTATION_SEED
    ref8 = reference(dequantized(q, 4, seed), dequantized(k, 4, seed),
                     dequantized(v, 4, None))
    rel8 = (o.double() - ref8).norm() / ref8.norm()
    assert o.dtype == torch.bfloat16 and rel8 < 3e-2, rel8
    ref = reference(q.double(), k.double(), v.double())
    rel = (o.double() - ref).norm() / ref.norm()
    assert rel < 7e-2, rel


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_attention_fp8_non_positive_descales_make_their_rows_nan():
    # Descales must be positive: a (batch, KV head) whose q or k descale is
    # not gets NaN rows (the kernel scales the raw row max), the others
    # their values.
    torch.manual_seed(1)
    shape = (2, 4, 256, 128)
    q, k, v = (torch.randn(shape, device="cuda").to(torch.float8_e4m3fn)
               for _ in range(3))
    qd, kd, vd = (torch.full((2, 4), 0.05, device="cuda") for _ in range(3))
    good = flashmlir.attention_fp8(q, k, v, qd, kd, vd, causal=True)
    kd[1, 2] = -0.05
    qd[0, 3] = 0.0
    o = torch.full_like(good, float("nan"))
    o = flashmlir.attention_fp8(q, k, v, qd, kd, vd, causal=True)
    assert torch.isnan(o[1, 2]).all() and torch.isnan(o[0, 3]).all()
    spoiled = torch.zeros(2, 4, dtype=torch.bool)
    spoiled[1, 2] = spoiled[0, 3] = True
    assert not torch.isnan(o[~spoiled]).any()
    assert torch.equal(o[~spoiled], good[~spoiled])


def test_lse_scratch_shared_per_stream_and_kept_when_grown():
    # A call that neither returns lse nor records it for a backward writes
    # it to a scratch buffer of its device and stream: one buffer serves
    # every smaller call; a grown one keeps its predecessor alive (a
    # captured CUDA graph may still write there).
    from flashmlir import torch_ops
    q = torch.zeros(1, 2, 16, 64, dtype=torch.bfloat16)
    saved = dict(torch_ops._lse_scratch), list(torch_ops._lse_scratch_kept)
    try:
        torch_ops._lse_scratch.clear()
        torch_ops._lse_scratch_kept.clear()
        first = torch_ops._lse_scratch_pointer(q, 7, 100)
        assert torch_ops._lse_scratch_pointer(q, 7, 60) == first
        other = torch_ops._lse_scratch_pointer(q, 8, 60)
        assert other != first
        grown = torch_ops._lse_scratch_pointer(q, 7, 150)
        assert grown != first
        assert torch_ops._lse_scratch[(-1, 7)].numel() >= 200
        assert [b.data_ptr() for b in torch_ops._lse_scratch_kept] == [first]
    finally:
        torch_ops._lse_scratch.clear()
        torch_ops._lse_scratch.update(saved[0])
        torch_ops._lse_scratch_kept[:] = saved[1]
