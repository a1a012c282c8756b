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
