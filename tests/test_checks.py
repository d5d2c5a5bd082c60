"""Every invariant the adapter enforces raises a message naming the argument, value and expectation.

These run on the CPU: the structural checks come before the device check, so CPU tensors reach
each one; a fully valid CPU call stops at the device check.
"""

import dataclasses

import pytest
import torch

from cute_dsa import dsa_decode
from cute_dsa.testing import make_inputs


def _args(**over):
    inp = make_inputs(2, 8, 16, block_size=16, context=64, seed=0)
    a = dict(q=inp.q, kv_cache=inp.kv_cache, block_table=inp.block_table, seq_lens=inp.seq_lens, indices=inp.indices)
    kw = {}
    for k, v in over.items():
        (a if k in a else kw).__setitem__(k, v)
    return a, kw


def _call(**over):
    a, kw = _args(**over)
    return dsa_decode(a["q"], a["kv_cache"], a["block_table"], a["seq_lens"], a["indices"], **kw)


def _expect(exc, pattern, **over):
    with pytest.raises(exc, match=pattern):
        _call(**over)


def test_valid_cpu_call_stops_at_device_check():
    _expect(ValueError, r"q\.device=cpu: expected a CUDA tensor")


def test_kv_lora_rank():
    _expect(ValueError, r"kv_lora_rank\)=576: expected 512", q=torch.zeros(2, 8, 576, dtype=torch.bfloat16))


def test_kv_heads_4d():
    base, _ = _args()
    c = base["kv_cache"]
    _expect(ValueError, r"expected 1 KV head in dim 2, got 2", kv_cache=torch.stack([c, c], dim=2))


def test_kv_head_4d_of_one_is_accepted_up_to_device():
    base, _ = _args()
    _expect(ValueError, r"q\.device=cpu", kv_cache=base["kv_cache"].unsqueeze(2))


def test_block_size_multiple_of_kpool():
    _expect(ValueError, r"index_kpool=3: expected a divisor of block_size=16", index_kpool=3)
    _expect(ValueError, r"index_kpool=0: expected an int >= 1", index_kpool=0)


def test_selection_rows_equal_query_rows():
    _expect(ValueError, r"indices\.shape\[0\]=3: expected q\.shape\[0\]=2", indices=torch.zeros(3, 16, dtype=torch.int32))


def test_rows_equal_sequences():
    _expect(ValueError, r"num_rows\)=2: expected seq_lens\.shape\[0\] \(num_seqs\)=3", seq_lens=torch.ones(3, dtype=torch.int32))


def test_block_table_rows():
    _expect(ValueError, r"block_table\.shape\[0\]=5: expected seq_lens\.shape\[0\]=2", block_table=torch.zeros(5, 4, dtype=torch.int32))


def test_zero_sequences_and_zero_heads():
    _expect(ValueError, r"num_heads\)=0: expected >= 1", q=torch.zeros(2, 0, 512, dtype=torch.bfloat16))
    _expect(
        ValueError, r"num_rows\)=0: expected >= 1",
        q=torch.zeros(0, 8, 512, dtype=torch.bfloat16), indices=torch.zeros(0, 16, dtype=torch.int32),
        seq_lens=torch.zeros(0, dtype=torch.int32), block_table=torch.zeros(0, 4, dtype=torch.int32),
    )


def test_zero_width():
    _expect(ValueError, r"width\)=0: expected >= 1", indices=torch.zeros(2, 0, dtype=torch.int32))


@pytest.mark.parametrize(
    "name,bad,pattern",
    [
        ("q", torch.zeros(2, 8, 512, dtype=torch.float16), r"q\.dtype=torch\.float16: expected torch\.bfloat16"),
        ("kv_cache", torch.zeros(4, 16, 512, dtype=torch.bfloat16), r"kv_cache\.dtype=torch\.bfloat16: expected"),
        ("block_table", torch.zeros(2, 4, dtype=torch.int64), r"block_table\.dtype=torch\.int64: expected torch\.int32"),
        ("seq_lens", torch.zeros(2, dtype=torch.int64), r"seq_lens\.dtype=torch\.int64: expected torch\.int32"),
        ("indices", torch.zeros(2, 16, dtype=torch.int64), r"indices\.dtype=torch\.int64: expected torch\.int32"),
    ],
)
def test_dtypes(name, bad, pattern):
    _expect(TypeError, pattern, **{name: bad})


def test_not_a_tensor():
    _expect(TypeError, r"seq_lens: expected a torch\.Tensor, got list", seq_lens=[1, 2])


def test_ndim():
    _expect(ValueError, r"q\.shape=\(2, 512\): expected 3 dimensions", q=torch.zeros(2, 512, dtype=torch.bfloat16))


def test_token_stride_bytes():
    _expect(ValueError, r"token_stride_bytes\)=448: expected a multiple of 16 that is >= 512",
            kv_cache=torch.zeros(4, 16, 448, dtype=torch.uint8))
    _expect(ValueError, r"token_stride_bytes\)=520: expected a multiple of 16",
            kv_cache=torch.zeros(4, 16, 520, dtype=torch.uint8))


def test_non_unit_inner_strides():
    q = torch.zeros(2, 8, 1024, dtype=torch.bfloat16)[..., ::2]
    _expect(ValueError, r"q\.stride\(\)=\(8192, 1024, 2\): expected a unit last stride", q=q)
    ind = torch.zeros(2, 32, dtype=torch.int32)[:, ::2]
    _expect(ValueError, r"indices\.stride\(\)=\(32, 2\): expected a unit last stride", indices=ind)


def test_cache_strides_aligned():
    c = torch.zeros(4, 16, 520, dtype=torch.uint8)[:, :, :512]
    _expect(ValueError, r"kv_cache\.stride\(\)=\(8320, 520, 1\): expected block and token strides that are multiples of 16", kv_cache=c)


def test_out_and_lse_shapes_and_dtypes():
    _expect(ValueError, r"out\.shape=\(2, 4, 512\): expected \(2, 8, 512\)", out=torch.zeros(2, 4, 512, dtype=torch.bfloat16))
    _expect(TypeError, r"out\.dtype=torch\.float32: expected torch\.bfloat16", out=torch.zeros(2, 8, 512))
    _expect(ValueError, r"lse\.shape=\(2, 9\): expected \(2, 8\)", lse=torch.zeros(2, 9))
    _expect(TypeError, r"lse\.dtype=torch\.float16: expected torch\.float32", lse=torch.zeros(2, 8, dtype=torch.float16))


def test_scales():
    _expect(TypeError, r"k_scale='x': expected a finite python float", k_scale="x")
    _expect(TypeError, r"v_scale=inf: expected a finite python float", v_scale=float("inf"))
    _expect(ValueError, r"k_scale\.shape=\(2,\): expected a 1-element tensor", k_scale=torch.ones(2))
    _expect(ValueError, r"v_scale\.dtype=torch\.float16: expected torch\.float32", v_scale=torch.ones(1, dtype=torch.float16))


def test_softmax_scale():
    _expect(ValueError, r"softmax_scale=-1\.0: expected a finite float > 0", softmax_scale=-1.0)
    _expect(TypeError, r"softmax_scale='a': expected a python float or None", softmax_scale="a")


def test_flat_cache_only_when_blocks_are_back_to_back():
    from cute_dsa.checks import check_decode_args

    a, _ = _args()
    common = dict(k_scale=1.0, v_scale=1.0, softmax_scale=None, index_kpool=1, out=None, lse=None)
    a["q"] = a["q"].cuda() if torch.cuda.is_available() else a["q"]

    def flat(cache):
        try:
            return check_decode_args(a["q"], cache, a["block_table"], a["seq_lens"], a["indices"], **common).flat_cache
        except ValueError as e:  # CPU tensors: the device check comes last; read the flag anyway
            assert "expected a CUDA tensor" in str(e)
            return cache.stride(0) == cache.shape[1] * cache.stride(1)

    cache = a["kv_cache"]
    blocks, bs, tb = cache.shape
    assert flat(cache)
    padded = torch.zeros(blocks, bs + 1, tb, dtype=cache.dtype)[:, :bs]  # a gap after every block
    assert not flat(padded)


def test_launch_plan_and_cache_operand_shared_by_dsa_decode_and_ablate():
    from cute_dsa.api import cache_operand, launch_plan
    from cute_dsa.checks import DecodeProblem
    from cute_dsa.compile import ensure_arch_for_cpu_compile
    from cute_dsa.heuristics import STREAM_RESOLVE_AUTO, split_length
    from cute_dsa.kernel_config import DecodeKernelConfig

    ensure_arch_for_cpu_compile()
    problem = DecodeProblem(2, 64, 2176, num_blocks=10, block_size=64, token_bytes=528,
                            k_scale_on_device=False, v_scale_on_device=False, flat_cache=True)
    cfg = DecodeKernelConfig()
    plan = launch_plan(problem, torch.device("cpu"), cfg, 4, True)
    assert plan.splits == 4 and plan.split_len == split_length(2176, 4, cfg.chunk_tokens)
    assert plan.variant.split and plan.variant.flat_cache and plan.variant.config == cfg and plan.combine is not None
    assert launch_plan(problem, torch.device("cpu"), cfg, 4, True) is plan  # cached per shape
    # Splits of at most 128 positions resolve their ids in the decode window by window where the
    # cache allows (not here: max_blocks 0), else with the launch; up front (slice) on demand, up
    # to the config's longest (2048 here: its shared memory).
    assert cfg.fused_resolve_max_split() == 2048
    assert plan.split_len == 544 and not plan.variant.fused_resolve and plan.resolve is not None
    short = launch_plan(problem, torch.device("cpu"), cfg, 17, True)
    assert short.split_len == 128 and not short.variant.fused_resolve and short.resolve is not None
    assert launch_plan(problem, torch.device("cpu"), cfg, 17, True, fuse_resolve="slice").variant.fused_resolve
    five = launch_plan(problem, torch.device("cpu"), cfg, 5, True)
    assert five.split_len == 448 and not five.variant.fused_resolve and five.resolve is not None
    forced = launch_plan(problem, torch.device("cpu"), cfg, 5, True, fuse_resolve=True)
    assert forced.variant.fused_resolve and forced.resolve is None
    assert not launch_plan(problem, torch.device("cpu"), cfg, 17, True, fuse_resolve=False).variant.fused_resolve
    assert launch_plan(problem, torch.device("cpu"), cfg, 4, True, fuse_resolve=True).variant.fused_resolve
    whole = launch_plan(problem, torch.device("cpu"), cfg, 1, True)  # 2176 > 2048 positions
    assert whole.split_len == 2176 and not whole.variant.fused_resolve
    # Longer splits resolve window by window in the decode, where the cache's rows address few
    # enough tokens for the bitmap (the problem above does not say how many: max_blocks 0).
    with pytest.raises(ValueError, match=r"fuse_resolve=True: splits of 2176 positions need the streamed resolve .*"
                                         r"\(block_table.shape\[1\] x block_size = 0\)"):
        launch_plan(problem, torch.device("cpu"), cfg, 1, True, fuse_resolve=True)
    with pytest.raises(ValueError, match=r"fuse_resolve='stream': splits of 448 positions need the streamed resolve"):
        launch_plan(problem, torch.device("cpu"), cfg, 5, True, fuse_resolve="stream")
    paged = dataclasses.replace(problem, max_blocks=1024)  # 65536 tokens: the bitmap's whole reach
    assert cfg.can_stream_resolve() and cfg.smem_bytes() + cfg.stream_resolve_bytes() <= 227 * 1024
    for splits in (1, 4, 5):  # measured slower than the resolve launch: automatic only if STREAM_RESOLVE_AUTO
        auto = launch_plan(paged, torch.device("cpu"), cfg, splits, True)
        assert auto.variant.stream_resolve == STREAM_RESOLVE_AUTO and (auto.resolve is None) == STREAM_RESOLVE_AUTO
        assert not auto.variant.fused_resolve
        streamed = launch_plan(paged, torch.device("cpu"), cfg, splits, True, fuse_resolve="stream")
        assert streamed.variant.stream_resolve and not streamed.variant.fused_resolve and streamed.resolve is None
    short = launch_plan(paged, torch.device("cpu"), cfg, 17, True)  # 128 positions: window by window
    assert short.variant.stream_resolve and not short.variant.fused_resolve and short.resolve is None
    assert launch_plan(paged, torch.device("cpu"), cfg, 17, True, fuse_resolve="stream").variant.stream_resolve
    assert launch_plan(paged, torch.device("cpu"), cfg, 1, True, fuse_resolve=True).variant.stream_resolve
    assert launch_plan(paged, torch.device("cpu"), cfg, 5, True, fuse_resolve="slice").variant.fused_resolve
    assert launch_plan(paged, torch.device("cpu"), cfg, 5, True, fuse_resolve=False).resolve is not None
    wide = dataclasses.replace(problem, max_blocks=1025)  # one block too many for the bitmap
    assert launch_plan(wide, torch.device("cpu"), cfg, 1, True).resolve is not None
    no_window = DecodeKernelConfig(id_window=0)
    assert not no_window.can_stream_resolve()
    assert launch_plan(paged, torch.device("cpu"), no_window, 1, True).resolve is not None
    narrow = DecodeProblem(2, 64, 2048, num_blocks=10, block_size=64, token_bytes=528,
                           k_scale_on_device=False, v_scale_on_device=False, flat_cache=True)
    assert not launch_plan(narrow, torch.device("cpu"), cfg, 1, True).variant.fused_resolve
    one = launch_plan(narrow, torch.device("cpu"), cfg, 1, True, fuse_resolve=True)
    assert one.split_len == 2048 and one.variant.fused_resolve and one.resolve is None and one.combine is None
    with pytest.raises(ValueError, match=r"num_splits=0: expected an int in \[1, 64\]"):
        launch_plan(problem, torch.device("cpu"), cfg, 0, True)

    cache = torch.zeros(10, 64, 528, dtype=torch.float8_e4m3fn)
    flat = cache_operand(cache, problem)
    assert flat.shape == (640, 528) and flat.dtype == torch.uint8 and flat.data_ptr() == cache.data_ptr()
    padded = torch.zeros(10, 65, 528, dtype=torch.uint8)[:, :64]
    blocked = dataclasses.replace(problem, flat_cache=False)
    assert cache_operand(padded, blocked) is padded


def test_physical_indices_plan_has_no_resolve():
    from cute_dsa.api import launch_plan
    from cute_dsa.checks import DecodeProblem
    from cute_dsa.compile import ensure_arch_for_cpu_compile
    from cute_dsa.kernel_config import DecodeKernelConfig

    ensure_arch_for_cpu_compile()
    problem = DecodeProblem(2, 64, 2176, num_blocks=10, block_size=64, token_bytes=528, k_scale_on_device=False,
                            v_scale_on_device=False, flat_cache=True, max_blocks=1024)
    cfg = DecodeKernelConfig()
    for splits in (1, 4, 17):  # long splits (a launch otherwise), short ones (resolved in the decode otherwise)
        plan = launch_plan(problem, torch.device("cpu"), cfg, splits, True, physical=True)
        v = plan.variant
        assert plan.resolve is None and v.physical_ids and not v.fused_resolve and not v.stream_resolve
        assert launch_plan(problem, torch.device("cpu"), cfg, splits, True) is not plan  # keyed apart
    assert launch_plan(problem, torch.device("cpu"), cfg, 4, True, fuse_resolve=False, physical=True).variant.physical_ids
    for mode in (True, "slice", "stream"):
        with pytest.raises(ValueError, match=rf"fuse_resolve={mode!r}: physical_indices=True has nothing to resolve"):
            launch_plan(problem, torch.device("cpu"), cfg, 4, True, fuse_resolve=mode, physical=True)


def test_physical_indices_must_be_a_bool():
    _expect(TypeError, r"physical_indices=1: expected a bool", physical_indices=1)


def test_check_indices_values():
    from cute_dsa.api import _check_index_values

    inp = make_inputs(2, 8, 40, block_size=16, context=64, dup_frac=0.0, oob_frac=0.0, seed=3)
    cache, table, lens = inp.kv_cache, inp.block_table, inp.seq_lens
    ids = inp.indices.clone()
    ids[ids >= 0] = ids[ids >= 0] % 8  # inside every sequence (at least 32 tokens), duplicates allowed
    _check_index_values(cache, table, lens, ids)
    bad = ids.clone()
    bad[1, 3] = -2
    with pytest.raises(ValueError, match=r"indices: 1 entries below -1"):
        _check_index_values(cache, table, lens, bad)
    bad = ids.clone()
    bad[1, 3] = int(lens[1])
    with pytest.raises(ValueError, match=rf"indices\[1\]: ids >= seq_lens\[1\]={int(lens[1])}"):
        _check_index_values(cache, table, lens, bad)
    # Physical ids: inside the cache and distinct per row.
    total = cache.shape[0] * cache.shape[1]
    phys = torch.stack([torch.randperm(total)[:40] for _ in range(2)]).to(torch.int32)
    phys[0, :5] = -1  # holes may repeat
    _check_index_values(cache, table, lens, phys, physical=True)
    bad = phys.clone()
    bad[1, 7] = total
    with pytest.raises(ValueError, match=rf"indices\[1\]: physical ids >= num_blocks \* block_size = {total}"):
        _check_index_values(cache, table, lens, bad, physical=True)
    bad = phys.clone()
    bad[1, 9] = bad[1, 2]
    with pytest.raises(ValueError, match=r"indices\[1\]: a physical id repeats"):
        _check_index_values(cache, table, lens, bad, physical=True)


def test_combine_prefetch_depth_covers_the_splits():
    from cute_dsa.kernels.combine_splits import prefetch_depth

    assert [prefetch_depth(s) for s in (2, 3, 4, 5, 16, 17, 32, 33, 64)] == [2, 4, 4, 8, 16, 32, 32, 32, 32]


def test_resolve_indices_checks():
    from cute_dsa import resolve_indices

    inp = make_inputs(2, 8, 16, block_size=16, context=64, seed=0)
    args = (inp.kv_cache, inp.block_table, inp.seq_lens, inp.indices)
    with pytest.raises(ValueError, match=r"indices\.device=cpu: expected a CUDA tensor"):
        resolve_indices(*args)
    with pytest.raises(TypeError, match=r"indices\.dtype=torch\.int64: expected torch\.int32"):
        resolve_indices(*args[:3], inp.indices.long())
    with pytest.raises(ValueError, match=r"seq_lens\.shape\[0\]=1: expected indices\.shape\[0\]=2"):
        resolve_indices(args[0], args[1], inp.seq_lens[:1], args[3])
    with pytest.raises(ValueError, match=r"block_table\.shape\[0\]=1: expected indices\.shape\[0\]=2"):
        resolve_indices(args[0], inp.block_table[:1], *args[2:])
    with pytest.raises(ValueError, match=r"out\.shape=\(2, 15\): expected \(2, 16\)"):
        resolve_indices(*args, out=torch.empty(2, 15, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"out: expected a tensor other than indices"):
        resolve_indices(*args, out=inp.indices)
    with pytest.raises(ValueError, match=r"indices\.shape\[1\] \(width\)=32769: expected <= 32768"):
        resolve_indices(*args[:3], torch.zeros(2, 32769, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"indices.shape=\(2, 0\): expected >= 1 row and >= 1 id per row"):
        resolve_indices(*args[:3], torch.zeros(2, 0, dtype=torch.int32))
