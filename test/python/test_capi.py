"""The C API's error paths through ctypes: null / stale / foreign handles,
null out-pointers, bad enums. Each must return an error, never crash."""

import ctypes

import flashmlir
from flashmlir import _capi

lib = flashmlir._library()
P = ctypes.c_void_p


def last_error():
    return lib.faGetLastError().decode()


def default_config():
    c = _capi.faConfig()
    assert lib.faConfigInit(ctypes.byref(c)) == _capi.SUCCESS
    return c


def test_version_and_status_strings():
    assert lib.faGetApiVersion() == _capi.API_VERSION
    assert lib.faStatusString(_capi.ERROR_COMPILE) == b"FA_ERROR_COMPILE"
    assert lib.faStatusString(99) == b"FA_ERROR_UNKNOWN"


def test_config_init_defaults_and_null():
    c = default_config()
    assert (c.dtype, c.batch, c.seq_q, c.head_dim) == (0, 1, 128, 64)
    assert (c.window_left, c.window_right) == (-1, -1)
    assert c.chip is None
    assert lib.faConfigInit(None) == _capi.ERROR_INVALID_ARGUMENT
    assert "NULL" in last_error()


def test_success_clears_last_error():
    assert lib.faConfigInit(None) != _capi.SUCCESS
    assert last_error()
    c = default_config()
    assert last_error() == ""
    del c


def test_null_handles():
    out = P()
    c = default_config()
    assert lib.faContextDestroy(None) == _capi.ERROR_INVALID_HANDLE
    assert lib.faKernelDestroy(None) == _capi.ERROR_INVALID_HANDLE
    assert lib.faCompile(None, ctypes.byref(c), 0, ctypes.byref(out)) == \
        _capi.ERROR_INVALID_HANDLE
    assert "invalid context handle" in last_error()
    assert lib.faKernelMetadata(None) is None
    assert lib.faKernelDirection(None) == -1
    assert lib.faKernelCacheHit(None) == 0
    assert lib.faContextCacheDir(None) is None
    n = ctypes.c_uint64()
    assert lib.faBackwardWorkspaceBytes(None, ctypes.byref(n)) == \
        _capi.ERROR_INVALID_HANDLE
    assert lib.faAttentionForward(None, 0, 0, 0, 0, 0, None, 0) == \
        _capi.ERROR_INVALID_HANDLE
    assert lib.faAttentionBackward(None, *([0] * 10), None, 0) == \
        _capi.ERROR_INVALID_HANDLE


def test_foreign_and_destroyed_handles():
    junk = ctypes.create_string_buffer(256)
    bogus = ctypes.cast(junk, P)
    assert lib.faKernelMetadata(bogus) is None
    assert lib.faAttentionForward(bogus, 0, 0, 0, 0, 0, None, 0) == \
        _capi.ERROR_INVALID_HANDLE
    assert lib.faContextDestroy(bogus) == _capi.ERROR_INVALID_HANDLE
    ctx = P()
    assert lib.faContextCreate(None, ctypes.byref(ctx)) == _capi.SUCCESS
    assert lib.faContextCacheDir(ctx)
    assert lib.faContextDestroy(ctx) == _capi.SUCCESS
    assert lib.faContextDestroy(ctx) == _capi.ERROR_INVALID_HANDLE  # double
    c = default_config()
    k = P()
    assert lib.faCompileUnloaded(ctypes.byref(c), 0, ctypes.byref(k)) == \
        _capi.SUCCESS
    assert lib.faKernelDirection(k) == 0
    assert lib.faKernelDestroy(k) == _capi.SUCCESS
    assert lib.faKernelDestroy(k) == _capi.ERROR_INVALID_HANDLE
    assert lib.faKernelMetadata(k) is None


def test_null_out_and_config_pointers():
    c = default_config()
    assert lib.faContextCreate(None, None) == _capi.ERROR_INVALID_ARGUMENT
    assert lib.faCompileUnloaded(ctypes.byref(c), 0, None) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert lib.faValidateConfig(None, 0) == _capi.ERROR_INVALID_ARGUMENT
    ctx = P()
    assert lib.faContextCreate(b"", ctypes.byref(ctx)) == _capi.SUCCESS
    out = P()
    assert lib.faCompile(ctx, None, 0, ctypes.byref(out)) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert "config is NULL" in lib.faContextGetLastError(ctx).decode()
    assert lib.faCompile(ctx, ctypes.byref(c), 0, None) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert lib.faContextDestroy(ctx) == _capi.SUCCESS


def test_contexts_on_devices():
    # Device 0 needs no driver until a kernel loads; ordinals outside 0..63
    # are argument errors; another device must exist (no GPU here).
    ctx = P()
    assert lib.faContextCreateOnDevice(None, 0, ctypes.byref(ctx)) == \
        _capi.SUCCESS
    assert lib.faContextDevice(ctx) == 0
    assert lib.faContextDestroy(ctx) == _capi.SUCCESS
    assert lib.faContextDevice(ctx) == -1
    for device in (-1, 64, 2**31 - 1):
        assert lib.faContextCreateOnDevice(None, device, ctypes.byref(ctx)) \
            == _capi.ERROR_INVALID_ARGUMENT
        assert b"is not a device ordinal (0 to 63)" in lib.faGetLastError()
    assert lib.faContextCreateOnDevice(None, 0, None) == \
        _capi.ERROR_INVALID_ARGUMENT


def test_bad_enums():
    c = default_config()
    c.dtype = 7
    assert lib.faValidateConfig(ctypes.byref(c), 0) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert "unknown dtype enum value 7" in last_error()
    c = default_config()
    assert lib.faValidateConfig(ctypes.byref(c), 5) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert "direction" in last_error()


def test_kernel_last_error_and_null_workspace_pointer():
    c = default_config()
    k = P()
    assert lib.faCompileUnloaded(ctypes.byref(c), 1, ctypes.byref(k)) == 0
    assert lib.faBackwardWorkspaceBytes(k, None) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert "bytes is NULL" in lib.faKernelGetLastError(k).decode()
    # Null device pointers: validation error, nothing launched.
    assert lib.faAttentionBackward(k, *([0] * 10), None, 0) == \
        _capi.ERROR_LAUNCH
    assert "null" in lib.faKernelGetLastError(k).decode()
    # Non-dense strides are rejected.
    s = _capi.faBackwardStrides()
    assert lib.faAttentionBackward(k, *([1 << 20] * 10), ctypes.byref(s),
                                   0) == _capi.ERROR_LAUNCH
    assert lib.faKernelDestroy(k) == _capi.SUCCESS


def test_huge_block_sizes_are_refused():
    # 2^56 .. 2^62: wrong shared-memory sizes, out-of-memory aborts, and a
    # SIGSEGV through faValidateConfig before they were bounded.
    for shift in (56, 57, 58, 60, 62):
        for field in ("block_q", "block_kv"):
            for direction in (0, 1):
                c = default_config()
                setattr(c, field, 1 << shift)
                assert lib.faValidateConfig(ctypes.byref(c), direction) == \
                    _capi.ERROR_COMPILE
                assert "%s must be at most 1024, got %d" % (
                    field.replace("_", "-"), 1 << shift) in last_error()


def test_handle_of_the_wrong_kind_is_an_invalid_handle():
    # A context where a kernel is expected, and a kernel where a context is:
    # each call must report it, not read one struct as the other.
    c = default_config()
    ctx, k = P(), P()
    assert lib.faContextCreate(None, ctypes.byref(ctx)) == _capi.SUCCESS
    assert lib.faCompileUnloaded(ctypes.byref(c), 1, ctypes.byref(k)) == \
        _capi.SUCCESS
    n = ctypes.c_uint64(7)

    def invalid(status, what, got):
        assert status == _capi.ERROR_INVALID_HANDLE
        assert "invalid %s handle (got a %s handle)" % (what, got) in \
            last_error()

    invalid(lib.faKernelDestroy(ctx), "kernel", "context")
    assert lib.faKernelMetadata(ctx) is None
    invalid(_capi.ERROR_INVALID_HANDLE, "kernel", "context")
    assert lib.faKernelDirection(ctx) == -1
    assert lib.faKernelCacheHit(ctx) == 0
    assert lib.faKernelGetLastError(ctx) == b"invalid kernel handle"
    invalid(lib.faBackwardWorkspaceBytes(ctx, ctypes.byref(n)), "kernel",
            "context")
    assert n.value == 7
    invalid(lib.faAttentionForward(ctx, 0, 0, 0, 0, 0, None, 0), "kernel",
            "context")
    invalid(lib.faAttentionBackward(ctx, *([0] * 10), None, 0), "kernel",
            "context")

    invalid(lib.faContextDestroy(k), "context", "kernel")
    assert lib.faContextCacheDir(k) is None
    invalid(_capi.ERROR_INVALID_HANDLE, "context", "kernel")
    assert lib.faContextGetLastError(k) == b"invalid context handle"
    out = P()
    invalid(lib.faCompile(k, ctypes.byref(c), 0, ctypes.byref(out)), "context",
            "kernel")
    assert out.value is None
    hit = ctypes.c_int(5)
    invalid(lib.faPrecompile(k, ctypes.byref(c), 0, ctypes.byref(hit)),
            "context", "kernel")
    assert hit.value == 0

    # Both handles are still alive and of their own kind.
    assert lib.faKernelDirection(k) == 1
    assert lib.faContextCacheDir(ctx)
    assert lib.faKernelDestroy(k) == _capi.SUCCESS
    assert lib.faContextDestroy(ctx) == _capi.SUCCESS



def test_last_warning_needs_a_live_context():
    c = default_config()
    k = P()
    assert lib.faCompileUnloaded(ctypes.byref(c), 0, ctypes.byref(k)) == 0
    assert lib.faContextGetLastWarning(None) == b"invalid context handle"
    assert lib.faContextGetLastWarning(k) == b"invalid context handle"
    ctx = P()
    assert lib.faContextCreate(None, ctypes.byref(ctx)) == _capi.SUCCESS
    assert lib.faContextGetLastWarning(ctx) == b""
    assert lib.faContextDestroy(ctx) == _capi.SUCCESS
    assert lib.faKernelDestroy(k) == _capi.SUCCESS


def test_quantize_kernels_compile_unloaded_and_check_their_calls():
    config = flashmlir.QuantizeConfig(batch=2, heads=4, groups=2, seq=100,
                                      head_dim=128, rotation_seed=12345,
                                      chip="sm_90a")
    flashmlir.validate(config)
    kernel = flashmlir.compile_unloaded(config)
    meta = kernel.metadata_dict()
    assert meta["kind"] == "quantize"
    assert meta["rotation_seed"] == 12345
    assert meta["groups"] == 2
    assert kernel.quantize_workspace_bytes() == 2 * 2 * 4
    # A valid call reaches the launch, which an unloaded kernel cannot do.
    try:
        kernel.quantize(0x10000000, 0x20000000, 0x30000000, 0x40000000)
        raise AssertionError("an unloaded kernel launched")
    except flashmlir.FlashMLIRError as e:
        assert "kernel is not loaded" in str(e)
    try:
        kernel.quantize(0, 0x20000000, 0x30000000, 0x40000000)
        raise AssertionError("a null x was accepted")
    except flashmlir.FlashMLIRError as e:
        assert e.status == _capi.ERROR_LAUNCH
    # Attention calls on it fail by kind.
    assert lib.faAttentionForward(kernel.handle, 1, 2, 3, 4, 5, None, 0) == \
        _capi.ERROR_INVALID_ARGUMENT
    assert "not a forward kernel" in last_error()


def test_quantize_configs_are_checked():
    bad = [
        (dict(dtype="e4m3"), "to quantize"),
        (dict(groups=3), "must be a multiple of the descale's blocks"),
        (dict(head_dim=96), "power of two"),
        (dict(head_dim=32), "head dims of 64 to 256"),
        (dict(chip="sm_80"), "e4m3 conversion needs sm_89 or later"),
    ]
    for fields, message in bad:
        kwargs = dict(batch=1, heads=4, groups=2, seq=64, head_dim=128,
                      rotation_seed=1, chip="sm_90a")
        kwargs.update(fields)
        try:
            flashmlir.validate(flashmlir.QuantizeConfig(**kwargs))
            raise AssertionError("accepted: %r" % (fields,))
        except flashmlir.FlashMLIRError as e:
            assert message in str(e), (fields, str(e))
    for name, value in (("seq", 2.5), ("rotation_seed", True),
                        ("heads", 2 ** 64)):
        try:
            flashmlir.QuantizeConfig(**{name: value})
            raise AssertionError("accepted %s=%r" % (name, value))
        except (TypeError, ValueError):
            pass
