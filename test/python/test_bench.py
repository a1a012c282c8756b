"""flashmlir.bench without a GPU: the FA3 sweep, FLOP counts, argument
errors and --precompile (which fills the kernel cache through ptxas)."""

import os
import subprocess
import sys

import pytest

from flashmlir import bench


def test_shapes_follow_the_fa3_sweep():
    # 16k tokens, hidden 2048: batch = 16384 / N, heads = 2048 / hdim.
    assert bench.shapes([64, 256], [512, 16384], [False, True]) == [
        (32, 32, 512, 64, False), (1, 32, 16384, 64, False),
        (32, 32, 512, 64, True), (1, 32, 16384, 64, True),
        (32, 8, 512, 256, False), (1, 8, 16384, 256, False),
        (32, 8, 512, 256, True), (1, 8, 16384, 256, True)]


def test_flops_count_causal_half_and_backward_factor():
    shape = (2, 16, 8192, 128, False)
    fwd = 4.0 * 2 * 16 * 8192 * 8192 * 128
    assert bench.flops(shape, "fwd") == fwd
    assert bench.flops(shape, "bwd") == 2.5 * fwd
    assert bench.flops(shape[:4] + (True,), "fwd") == fwd / 2


@pytest.mark.parametrize("argv, message", [
    (["--hdims", "96"], "does not divide the hidden size"),
    (["--seqlens", "1000"], "does not divide 16384 tokens"),
    (["--directions", "fwd,sideways"], "fwd and/or bwd"),
    (["--peers", "cudnn,fa3"], "unknown peer"),
])
def test_bad_arguments_exit_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_precompile_fills_and_then_hits_the_cache(tmp_path):
    env = dict(os.environ, FLASHMLIR_CACHE_DIR=str(tmp_path))
    cmd = [sys.executable, "-m", "flashmlir.bench", "--precompile",
           "--hdims", "64", "--seqlens", "16384", "--causal", "yes",
           "--directions", "fwd", "--jobs", "1"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "built fwd b1 h32 n16384 d64 causal" in first.stdout
    assert "1 kernels for sm_90, 0 failed" in first.stdout
    again = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "hit  fwd b1 h32 n16384 d64 causal" in again.stdout
