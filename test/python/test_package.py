"""The flashmlir package without a GPU: loading, configs, compile errors."""

import dataclasses
import hashlib
import json
import os
import struct
import warnings

import pytest

import flashmlir
from flashmlir import Config, FlashMLIRError, _capi


# The kernel cache's entry format (include/fa/Runtime/KernelCache.h), written
# here independently of the library to forge entries as an attacker could.
_MAGIC = b"FLASHMLIR-KERNEL-CACHE 3\n"


def _read_entry(path):
    header, body = path.read_bytes().split(b"\n\n", 1)
    lines = header.split(b"\n")
    assert lines[0] + b"\n" == _MAGIC
    sizes = dict(line.split(b" ") for line in lines[1:4])
    k, m = int(sizes[b"key-bytes"]), int(sizes[b"metadata-bytes"])
    return body[:k], body[k:k + m], body[k + m:]


def _write_entry(path, key, metadata, payload):
    fields = (key, metadata, payload)
    digest = hashlib.sha256(_MAGIC + b"".join(
        struct.pack(">Q", len(f)) + f for f in fields)).hexdigest()
    path.write_bytes(_MAGIC + b"key-bytes %d\nmetadata-bytes %d\n"
                     b"payload-bytes %d\nsha256 %s\n\n"
                     % (len(key), len(metadata), len(payload),
                        digest.encode()) + key + metadata + payload)


def test_imports_and_finds_library():
    path = flashmlir.library_path()
    assert os.path.basename(path) == "libFlashMLIR.so"
    assert os.path.exists(path)
    assert flashmlir.compiler_version()


def test_library_found_in_build_tree_without_env(monkeypatch):
    build_lib = os.path.normpath(os.path.join(
        os.path.dirname(flashmlir.__file__), "..", "..", "build", "lib",
        "libFlashMLIR.so"))
    if not os.path.exists(build_lib):
        pytest.skip("no build/ tree next to the package")
    monkeypatch.delenv("FLASHMLIR_LIBRARY", raising=False)
    lib = _capi.load()
    assert lib._flashmlir_path == build_lib
    assert lib._flashmlir_path.endswith(os.path.join("lib", "libFlashMLIR.so"))


def test_bad_library_env_is_skipped_with_list(monkeypatch, tmp_path):
    # The library this run loaded (ctest sets FLASHMLIR_LIBRARY to the build's,
    # wherever the build directory is), linked into a stand-in package
    # directory: the fallback after a bad FLASHMLIR_LIBRARY is then known
    # whatever the source and build layout.
    built = flashmlir.library_path()
    package = tmp_path / "python" / "flashmlir"
    package.mkdir(parents=True)
    (package / "libFlashMLIR.so").symlink_to(built)
    monkeypatch.setattr(_capi, "__file__", str(package / "_capi.py"))
    monkeypatch.setenv("FLASHMLIR_LIBRARY", "/nonexistent/libFlashMLIR.so")
    # Falls back to the other locations; the bad one is not fatal.
    assert _capi.load()._flashmlir_path == str(package / "libFlashMLIR.so")
    # With nothing to fall back to, the error lists every place tried.
    (package / "libFlashMLIR.so").unlink()
    with pytest.raises(OSError, match=r"/nonexistent/libFlashMLIR.so "
                                      r"\(missing\).*set FLASHMLIR_LIBRARY"):
        _capi.load()


def test_validate_ok_forward_and_backward():
    flashmlir.validate(Config())
    flashmlir.validate(Config(heads_q=8, heads_kv=2, causal=True,
                              window=(64, 0), softcap=30.0), backward=True)


def test_bad_dtype_carries_compiler_message():
    with pytest.raises(FlashMLIRError, match="unsupported dtype 'f32'"):
        flashmlir.validate(Config(dtype="f32"))
    with pytest.raises(FlashMLIRError, match="unsupported dtype"):
        flashmlir.validate(Config(dtype="int8"))


def test_gqa_heads_carry_compiler_message():
    with pytest.raises(FlashMLIRError,
                       match=r"multiple of key/value heads \(Hkv = 2\)") as e:
        flashmlir.validate(Config(heads_q=3, heads_kv=2))
    assert e.value.status == _capi.ERROR_COMPILE


def test_block_size_carries_compiler_message():
    with pytest.raises(FlashMLIRError, match="block-q must be a positive power"
                                             " of two or multiple of 16, got 40"):
        flashmlir.validate(Config(block_q=40))
    # A multiple of 16 that no kernel takes: the kernel's own limit.
    with pytest.raises(FlashMLIRError, match="block-q must be 16 rows per warp"
                                             " times a power of two of warps"):
        flashmlir.validate(Config(block_q=48))
    with pytest.raises(FlashMLIRError, match="block_q / block_kv"):
        flashmlir.validate(Config(block_kv=-1))


def test_compile_without_driver_raises_driver_error():
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a GPU is present")
    with pytest.raises(FlashMLIRError, match="driver") as e:
        flashmlir.compile(Config())
    assert e.value.status == _capi.ERROR_DRIVER
    with pytest.raises(FlashMLIRError, match="driver"):
        flashmlir.compile(Config(chip="sm_90"), backward=True)


def test_compile_unloaded_metadata_and_workspace():
    cfg = Config(heads_q=4, heads_kv=2, seq_q=256, head_dim=128, causal=True)
    fwd = flashmlir.compile_unloaded(cfg)
    md = fwd.metadata_dict()
    assert md["kind"] == "forward"
    assert md["heads_q"] == 4 and md["heads_kv"] == 2
    assert md["causal"] is True
    with pytest.raises(FlashMLIRError, match="not a backward kernel"):
        fwd.workspace_bytes()
    bwd = flashmlir.compile_unloaded(cfg, backward=True)
    assert bwd.metadata_dict()["kind"] == "backward"
    assert bwd.workspace_bytes() > 0
    assert bwd.workspace_bytes() % 256 == 0


def test_launch_validation_errors_without_gpu():
    fwd = flashmlir.compile_unloaded(Config())
    with pytest.raises(FlashMLIRError, match="null") as e:
        fwd.forward(0, 0, 0, 0, 0)
    assert e.value.status == _capi.ERROR_LAUNCH
    # Misaligned pointers are rejected before any launch.
    with pytest.raises(FlashMLIRError, match="align"):
        fwd.forward(1 << 20 | 2, 2 << 20, 3 << 20, 4 << 20, 5 << 20)
    # Valid-looking pointers pass validation, then the kernel has no code.
    with pytest.raises(FlashMLIRError, match="not loaded"):
        fwd.forward(1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20)
    with pytest.raises(FlashMLIRError, match="not a backward kernel"):
        fwd.backward_launch(*([1 << 20] * 10))
    bwd = flashmlir.compile_unloaded(Config(), backward=True)
    with pytest.raises(FlashMLIRError, match="not a forward kernel"):
        bwd.forward(1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20)
    with pytest.raises(FlashMLIRError):
        bwd.backward_launch(*([0] * 10))


def test_runtime_shapes_kernel_takes_each_launchs_shape():
    cfg = Config(heads_q=4, heads_kv=2, head_dim=128, causal=True,
                 chip="sm_90", runtime_shapes=True)
    fwd = flashmlir.compile_unloaded(cfg)
    md = fwd.metadata_dict()
    assert md["runtime_shapes"] is True
    assert "seq_q" not in md and "batch" not in md
    gib = 1 << 30
    ptrs = (gib, 2 * gib, 3 * gib, 4 * gib, 5 * gib)
    # Any shape validates; then the kernel has no code.
    for shape in ((1, 77, 1000), (3, 4096, 5)):
        with pytest.raises(FlashMLIRError, match="not loaded"):
            fwd.forward(*ptrs, shape=shape)
    with pytest.raises(FlashMLIRError, match="must be positive"):
        fwd.forward(*ptrs)
    with pytest.raises(FlashMLIRError, match="must be positive"):
        fwd.forward(*ptrs, shape=(1, 0, 5))
    # The lengths do not key the kernel.
    assert cfg.without_lengths() == Config(
        heads_q=4, heads_kv=2, head_dim=128, causal=True, chip="sm_90",
        runtime_shapes=True, batch=7, seq_q=9, seq_kv=11).without_lengths()
    assert Config(seq_q=9).without_lengths() == Config(seq_q=9)
    with pytest.raises(TypeError, match="runtime_shapes"):
        Config(runtime_shapes=1)
    # Below Hopper the GPU tile level's mma.sync kernel takes them.
    ampere = flashmlir.compile_unloaded(Config(chip="sm_80", runtime_shapes=True))
    assert ampere.metadata_dict()["chip"] == "sm_80"
    assert ampere.metadata_dict()["runtime_shapes"] is True


def test_deterministic_backward_takes_turn_counters():
    cfg = Config(heads_q=4, heads_kv=2, seq_q=300, head_dim=128, causal=True,
                 chip="sm_90", deterministic=True)
    bwd = flashmlir.compile_unloaded(cfg, backward=True)
    md = bwd.metadata_dict()
    assert md["deterministic"] is True
    assert "dq_turns" in md["args"]
    plain = flashmlir.compile_unloaded(
        dataclasses.replace(cfg, deterministic=False), backward=True)
    assert "deterministic" not in plain.metadata_dict()
    assert bwd.workspace_bytes() > plain.workspace_bytes()
    # The forward is deterministic anyway: the option leaves it alone.
    fwd = flashmlir.compile_unloaded(cfg)
    assert "deterministic" not in fwd.metadata_dict()
    with pytest.raises(TypeError, match="deterministic"):
        Config(deterministic=1)
    with pytest.raises(FlashMLIRError, match="deterministic"):
        flashmlir.compile_unloaded(dataclasses.replace(cfg, chip="sm_80"),
                                   backward=True)


def test_varlen_backward_takes_packed_sequences():
    cfg = Config(heads_q=4, heads_kv=2, head_dim=128, causal=True,
                 chip="sm_90", varlen=True)
    bwd = flashmlir.compile_unloaded(cfg, backward=True)
    md = bwd.metadata_dict()
    assert md["kind"] == "backward" and md["varlen"] is True
    assert "cu_seqlens_k" in md["args"]
    # The workspace is the call's: f32 delta and dQ of every packed row.
    with pytest.raises(FlashMLIRError, match="WorkspaceBytesVarlen"):
        bwd.workspace_bytes()
    rows = 300 * 4
    assert bwd.workspace_bytes_varlen(300) == \
        (rows * 4 + 255) // 256 * 256 + rows * 128 * 4
    gib = 1 << 30
    ptrs = [i * gib for i in range(1, 12)]
    # Valid, then the kernel has no code; a bad longest key sequence first.
    with pytest.raises(FlashMLIRError, match="not loaded"):
        bwd.backward_varlen(*ptrs, 12 * gib, sequences=3, max_seqlen_q=200,
                            max_seqlen_k=250, total_q=300, total_kv=500)
    with pytest.raises(FlashMLIRError, match="max_seqlen_k 501"):
        bwd.backward_varlen(*ptrs, 12 * gib, sequences=3, max_seqlen_q=200,
                            max_seqlen_k=501, total_q=300, total_kv=500)
    with pytest.raises(FlashMLIRError, match="deterministic with packed"):
        flashmlir.compile_unloaded(
            dataclasses.replace(cfg, deterministic=True), backward=True)


def test_runtime_shapes_backward_takes_each_launchs_shape():
    cfg = Config(heads_q=4, heads_kv=2, head_dim=128, causal=True,
                 chip="sm_90", runtime_shapes=True)
    bwd = flashmlir.compile_unloaded(cfg, backward=True)
    assert bwd.metadata_dict()["runtime_shapes"] is True
    rows = 2 * 4 * 300
    assert bwd.workspace_bytes((2, 300, 77)) == \
        (rows * 4 + 255) // 256 * 256 + rows * 128 * 4
    gib = 1 << 30
    ptrs = [i * gib for i in range(1, 11)]
    with pytest.raises(FlashMLIRError, match="not loaded"):
        bwd.backward_launch(*ptrs, shape=(2, 300, 77))
    with pytest.raises(FlashMLIRError, match="must be positive"):
        bwd.backward_launch(*ptrs)


def test_config_is_hashable_for_the_kernel_cache():
    assert hash(Config(causal=True)) == hash(Config(causal=True))
    assert Config(causal=True) != Config()


def test_precompile_fills_the_cache_without_a_gpu(tmp_path):
    ctx = flashmlir.Context(str(tmp_path))
    cfg = Config(heads_q=2, seq_q=64, head_dim=64, causal=True, chip="sm_90")
    assert ctx.precompile(cfg) is False      # compiled, no driver needed
    assert ctx.precompile(cfg) is True       # now a memory hit
    assert flashmlir.Context(str(tmp_path)).precompile(cfg) is True  # disk
    assert ctx.precompile(cfg, backward=True) is False
    entries = [_read_entry(p) for p in tmp_path.glob("*.fakernel")]
    assert sorted(json.loads(meta)["kind"] for _, meta, _ in entries) == \
        ["backward", "forward"]
    assert all(b".target sm_90" in ptx for _, _, ptx in entries)


def test_context_device(tmp_path):
    assert flashmlir.Context(str(tmp_path)).device == 0
    assert flashmlir.Context(str(tmp_path), device=0).device == 0
    for bad in ("1", 1.0, True, None):
        with pytest.raises(TypeError, match="device must be an int ordinal"):
            flashmlir.Context(str(tmp_path), device=bad)
    with pytest.raises(FlashMLIRError,
                       match="device -1 is not a device ordinal") as e:
        flashmlir.Context(str(tmp_path), device=-1)
    assert e.value.status == _capi.ERROR_INVALID_ARGUMENT


def test_precompile_reports_compiler_errors(tmp_path):
    ctx = flashmlir.Context(str(tmp_path))
    with pytest.raises(FlashMLIRError, match="dtype") as e:
        ctx.precompile(Config(dtype="f32"))
    assert e.value.status == _capi.ERROR_COMPILE


@pytest.mark.parametrize("chip", ["sm_75", "sm_100a", "sm_90 x", "garbage",
                                  "compute_90"])
def test_unsupported_chip_is_a_compile_error(chip, tmp_path):
    # These reached LLVM's NVPTX back end and crashed or aborted the process.
    message = ("unsupported chip '%s': FlashMLIR compiles for sm_80, sm_86, "
               "sm_87, sm_89, sm_90, sm_90a" % chip)
    with pytest.raises(FlashMLIRError, match=message) as e:
        flashmlir.validate(Config(chip=chip))
    assert e.value.status == _capi.ERROR_COMPILE
    with pytest.raises(FlashMLIRError, match=message):
        flashmlir.compile_unloaded(Config(chip=chip), backward=True)
    # The JIT refuses it before looking in the cache.
    with pytest.raises(FlashMLIRError, match=message):
        flashmlir.Context(str(tmp_path)).precompile(Config(chip=chip))
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_supported_chips_compile():
    for chip in ["sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"]:
        kernel = flashmlir.compile_unloaded(Config(chip=chip))
        # sm_90's forward is the WGMMA kernel, built for sm_90a.
        built = "sm_90a" if chip == "sm_90" else chip
        assert kernel.metadata_dict()["chip"] == built


def test_compiler_refuses_what_the_runtime_would():
    # These compiled, then the runtime refused the metadata (grid x past
    # 2^31-1; a scale whose text does not read back).
    with pytest.raises(FlashMLIRError, match=r"query of type 'tensor<1x1x"
                       r"9223372036854775807x64xbf16>' has more than 2\^31-1"):
        flashmlir.validate(Config(seq_q=2**63 - 1))
    with pytest.raises(FlashMLIRError, match="scale = 4.9406564584124654e-324"
                                             " is below the smallest normal"):
        flashmlir.validate(Config(scale=5e-324))
    with pytest.raises(FlashMLIRError, match=r"query of type 'tensor<1x1x"
                       r"2147483648x16xbf16>' has more than 2\^31-1"):
        flashmlir.validate(Config(seq_q=2**31, head_dim=16), backward=True)
    # At the limit, the runtime takes the compiler's metadata (parsed by
    # compile_unloaded) and the launch passes every size check.
    edge = flashmlir.compile_unloaded(Config(seq_q=2**25 - 1, seq_kv=16))
    assert edge.metadata_dict()["seq_q"] == 2**25 - 1
    with pytest.raises(FlashMLIRError, match="not loaded"):
        edge.forward(1 << 40, 2 << 40, 3 << 40, 4 << 40, 5 << 40)


@pytest.mark.parametrize("fields, error, message", [
    # ctypes wrapped it to 128.
    (dict(seq_q=2**64 + 128), ValueError,
     r"Config.seq_q = 18446744073709551744 does not fit in 64 bits"),
    (dict(block_kv=-2**63 - 1), ValueError, r"Config.block_kv = .* 64 bits"),
    # int() truncated it to 64.
    (dict(head_dim=64.7), TypeError,
     r"Config.head_dim must be an integer, got 64.7"),
    (dict(heads_kv="2"), TypeError, r"Config.heads_kv must be an integer"),
    (dict(batch=True), TypeError, r"Config.batch must be an integer"),
    # Any non-empty string was true.
    (dict(causal="no"), TypeError,
     r"Config.causal must be True or False, got 'no'"),
    (dict(causal=2), TypeError, r"Config.causal must be True or False"),
    # An AttributeError from .encode().
    (dict(chip=90), TypeError,
     r"Config.chip must be a string such as 'sm_90' or None, got 90"),
    (dict(scale="0.1"), TypeError, r"Config.scale must be a number or None"),
    (dict(softcap=True), TypeError, r"Config.softcap must be a number"),
    (dict(window=(1, 2, 3)), TypeError, r"Config.window must be \(left, "
                                        r"right\) or None"),
    (dict(window=(0.5, 0)), TypeError,
     r"Config.window left must be an integer"),
])
def test_config_fields_are_checked_not_coerced(fields, error, message):
    with pytest.raises(error, match=message):
        Config(**fields)


def test_config_accepts_what_it_documents():
    Config(causal=1, window=(None, 0), scale=1, softcap=30, heads_kv=None)
    assert Config(seq_q=2**63 - 1).seq_q == 2**63 - 1


def test_window_below_minus_one_is_an_error_not_no_window():
    # (-5, -5) became "no window"; only -1 means unbounded.
    with pytest.raises(FlashMLIRError, match=r"window bounds must be >= 0, or "
                                             r"-1 for unbounded, got \[-5, -5\]"):
        flashmlir.validate(Config(window=(-5, -5)))
    with pytest.raises(FlashMLIRError, match=r"got \[-1, -7\]"):
        flashmlir.validate(Config(window=(-1, -7)), backward=True)
    # (-1, -1) is no window, as faConfigInit sets it.
    flashmlir.validate(Config(window=(-1, -1)))


def test_backward_kernels_are_named_fa_bwd():
    md = flashmlir.compile_unloaded(Config(), backward=True).metadata_dict()
    assert (md["entry"], md["pre"]["entry"], md["post"]["entry"]) == \
        ("fa_bwd", "fa_bwd_pre", "fa_bwd_post")
    assert flashmlir.compile_unloaded(Config()).metadata_dict()["entry"] == \
        "fa_fwd"


def test_unusable_cache_directory_is_reported(tmp_path):
    # It was silent: every process then compiled every kernel again.
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    cache = str(blocker / "cache")
    with pytest.warns(flashmlir.FlashMLIRWarning,
                      match=r"kernel cache directory '.*a-file/cache' is "
                            r"unusable \(mkdir\(.*\): Not a directory\); "
                            r"kernels are cached in memory only"):
        ctx = flashmlir.Context(cache)
    cfg = Config(seq_q=64, chip="sm_90")
    with pytest.warns(flashmlir.FlashMLIRWarning,
                      match=r"cache directory '.*' is unusable .* entry kept "
                            r"in memory only"):
        assert ctx.precompile(cfg) is False
    # A memory hit writes nothing, so there is nothing to report.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ctx.precompile(cfg) is True
        flashmlir.Context(str(tmp_path / "fine")).precompile(cfg)


def test_unusable_cache_entries_are_rebuilt_with_a_warning(tmp_path,
                                                           monkeypatch):
    monkeypatch.delenv("FLASHMLIR_CACHE_TRUST_DIR", raising=False)
    cache = tmp_path / "cache"
    cfg = Config(seq_q=64, chip="sm_90")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert flashmlir.Context(str(cache)).precompile(cfg) is False
    (path,) = cache.glob("*.fakernel")
    key, metadata, ptx = _read_entry(path)
    assert json.loads(metadata)["seq_q"] == 64

    # Damaged: one payload byte.
    path.write_bytes(path.read_bytes()[:-1] + b"#")
    with pytest.warns(flashmlir.FlashMLIRWarning,
                      match=r"unusable cache entry '.*\.fakernel' \(sha256 "
                            r"mismatch: the entry was damaged or altered\): "
                            r"deleted and rebuilt"):
        assert flashmlir.Context(str(cache)).precompile(cfg) is False

    # Forged with a valid digest: another problem's metadata and PTX.
    _write_entry(path, key, metadata.replace(b'"seq_q": 64,',
                                             b'"seq_q": 999,'),
                 ptx.replace(b"fa_fwd", b"fa_evil"))
    with pytest.warns(flashmlir.FlashMLIRWarning,
                      match=r"it does not match the request: seq_q is 999, "
                            r"the request has 64\): deleted and rebuilt"):
        assert flashmlir.Context(str(cache)).precompile(cfg) is False

    # Another key's entry copied over this one.
    other = Config(seq_q=128, chip="sm_90")
    flashmlir.Context(str(cache)).precompile(other)
    (other_path,) = set(cache.glob("*.fakernel")) - {path}
    other_path.replace(path)
    with pytest.warns(flashmlir.FlashMLIRWarning,
                      match=r"it holds the entry of another key"):
        assert flashmlir.Context(str(cache)).precompile(cfg) is False

    # Each rebuild replaced the entry: found again, silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert flashmlir.Context(str(cache)).precompile(cfg) is True
    assert _read_entry(path) == (key, metadata, ptx)


def test_cache_directory_others_can_write_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("FLASHMLIR_CACHE_TRUST_DIR", raising=False)
    cache = tmp_path / "cache"
    cfg = Config(seq_q=64, chip="sm_90")
    flashmlir.Context(str(cache)).precompile(cfg)
    assert cache.stat().st_mode & 0o777 == 0o700
    (entry,) = cache.glob("*.fakernel")
    assert entry.stat().st_mode & 0o777 == 0o600
    cache.chmod(0o777)
    with pytest.warns(flashmlir.FlashMLIRWarning,
                      match=r"kernel cache directory '.*cache' is unusable "
                            r"\('.*cache' is writable by its group or by "
                            r"others \(mode 0777\): whoever can write it can "
                            r"plant kernels .* FLASHMLIR_CACHE_TRUST_DIR=1"):
        ctx = flashmlir.Context(str(cache))
    # Not read either: the kernel is compiled again, in memory only.
    with pytest.warns(flashmlir.FlashMLIRWarning, match=r"in memory only"):
        assert ctx.precompile(cfg) is False
    monkeypatch.setenv("FLASHMLIR_CACHE_TRUST_DIR", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert flashmlir.Context(str(cache)).precompile(cfg) is True


def test_fp8_config_compiles_unloaded_and_takes_its_descales():
    cfg = Config(dtype="e4m3", out_dtype="f16", head_dim=128, chip="sm_90a")
    fwd = flashmlir.compile_unloaded(cfg)
    md = fwd.metadata_dict()
    assert md["dtype"] == "e4m3" and md["out_dtype"] == "f16"
    assert md["args"][:8] == ["q", "k", "v", "o", "lse", "q_descale",
                              "k_descale", "v_descale"]
    # Every argument validates; only the missing code stops the launch.
    with pytest.raises(FlashMLIRError, match="not loaded"):
        fwd.forward_fp8(*[(i + 1) << 30 for i in range(8)])
    # The 16-bit call has no descales to give.
    with pytest.raises(FlashMLIRError, match="descale"):
        fwd.forward(*[(i + 1) << 30 for i in range(5)])
    with pytest.raises(FlashMLIRError, match="takes bf16 inputs, not e4m3"):
        flashmlir.compile_unloaded(Config()).forward_fp8(
            *[(i + 1) << 30 for i in range(8)])
    with pytest.raises(ValueError,
                       match="Config.out_dtype must be 'bf16' or 'f16'"):
        Config(dtype="e4m3", out_dtype="e4m3")
    with pytest.raises(FlashMLIRError, match="no FP8 backward"):
        flashmlir.validate(cfg, backward=True)
