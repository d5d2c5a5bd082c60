"""Kernel vs the masked oracle on an H200 (skipped with a reason elsewhere)."""

import dataclasses
import itertools

import pytest
import torch

import cute_dsa
from cute_dsa.reference import masked_attention
from cute_dsa.testing import TUNABLE_CONFIG_SPLITS, as_flat_rows, make_inputs, physical_ids, relative_error, tunable_config_inputs
from cute_dsa.tune import config_space

pytestmark = pytest.mark.gpu

REL_TOL = 5e-3
LSE_TOL = 1e-3


def _run_and_check(inp, *, softmax_scale=None, num_splits=None, scales_on_device=False, kv4d=False, twice=True, config=None,
                   fuse_resolve=None, physical=False):
    """`physical`: inp.indices are cache rows (physical_indices=True); the oracle reads them as flat rows."""
    dev = inp.q.device
    rows, heads = inp.q.shape[:2]
    ks, vs = inp.k_scale, inp.v_scale
    if scales_on_device:
        ks = torch.tensor([ks], dtype=torch.float32, device=dev)
        vs = torch.tensor([vs], dtype=torch.float32, device=dev)
    cache = inp.kv_cache.unsqueeze(2) if kv4d else inp.kv_cache
    results = []
    for _ in range(2 if twice else 1):
        out = torch.full((rows, heads, 512), float("nan"), dtype=torch.bfloat16, device=dev)
        lse = torch.full((rows, heads), float("nan"), dtype=torch.float32, device=dev)
        o, l = cute_dsa.dsa_decode(
            inp.q, cache, inp.block_table, inp.seq_lens, inp.indices,
            k_scale=ks, v_scale=vs, softmax_scale=softmax_scale, out=out, lse=lse,
            num_splits=num_splits, config=config, fuse_resolve=fuse_resolve, physical_indices=physical,
        )
        assert o.data_ptr() == out.data_ptr() and l.data_ptr() == lse.data_ptr()
        results.append((out.clone(), lse.clone()))
    torch.cuda.synchronize()
    ref_in = as_flat_rows(inp, inp.indices) if physical else inp
    ref_o, ref_l = masked_attention(
        *ref_in.args(),
        k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=softmax_scale,
    )
    out, lse = results[0]
    assert not torch.isnan(out).any(), "unwritten (NaN) output elements"
    assert not torch.isnan(lse).any(), "unwritten (NaN) lse elements"
    err = relative_error(out, ref_o)
    assert err <= REL_TOL, f"relative error {err:.3e} > {REL_TOL}"
    empty = torch.isinf(ref_l)
    assert torch.equal(torch.isinf(lse) & (lse < 0), empty), "lse = -inf exactly for empty rows"
    assert (out[empty] == 0).all(), "empty rows give out = 0"
    if (~empty).any():
        d = (lse.double() - ref_l)[~empty].abs().max().item()
        assert d <= LSE_TOL, f"lse max abs error {d:.3e} > {LSE_TOL}"
    if twice:
        assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1]), "two runs differ"
    return results[0]


HEADS = [1, 8, 16, 32, 48, 64, 128]
WIDTHS = [1, 63, 2048, 2176]
BLOCKS = [16, 64, 256]
STRIDES = [512, 528, 656]
ROWS = [1, 3, 130]


def _grid():
    # Every head count with every width; block size, token stride and rows cycle through
    # their values so each appears with each head count.
    cyc = itertools.cycle(itertools.product(BLOCKS, STRIDES, ROWS))
    for h, w in itertools.product(HEADS, WIDTHS):
        b, s, r = next(cyc)
        if r == 130 and h >= 64 and w >= 2048:
            r = 3  # keeps the float64 oracle quick; 130 rows are covered with other head counts
        yield h, w, b, s, r


@pytest.mark.parametrize("heads,width,block,stride,rows", list(_grid()))
def test_grid(heads, width, block, stride, rows):
    inp = make_inputs(rows, heads, width, block_size=block, token_bytes=stride, context=3000,
                      seed=heads * 1000 + width + block + rows, device="cuda", k_scale=0.7, v_scale=1.3)
    _run_and_check(inp)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("block", BLOCKS)
def test_rows_blocks(rows, block):
    inp = make_inputs(rows, 16, 2176, block_size=block, context=5000, seed=rows + block, device="cuda")
    _run_and_check(inp)


@pytest.mark.parametrize("stride", STRIDES)
def test_token_strides(stride):
    inp = make_inputs(5, 64, 2048, token_bytes=stride, seed=stride, device="cuda")
    _run_and_check(inp)


@pytest.mark.parametrize("splits", [1, 3])
def test_blocks_not_back_to_back(splits):
    """A cache with a gap after every block (stride(0) > block_size * stride(1)): the decode
    addresses rows through (block, slot), not as one flat array."""
    inp = make_inputs(3, 64, 2048, hole_frac=0.1, dup_frac=0.05, seed=21 + splits, device="cuda")
    blocks, bs, tb = inp.kv_cache.shape
    padded = torch.full((blocks, bs + 3, tb), 0x7F, dtype=torch.uint8, device="cuda")  # 0x7F: NaN in e4m3
    padded[:, :bs] = inp.kv_cache.view(torch.uint8)
    view = padded[:, :bs].view(inp.kv_cache.dtype)
    assert view.stride(0) != bs * view.stride(1)
    _run_and_check(dataclasses.replace(inp, kv_cache=view), num_splits=splits)


def test_holes_dups_oob_bad_blocks_empty_rows():
    inp = make_inputs(9, 32, 2176, hole_frac=0.3, dup_frac=0.3, oob_frac=0.1, bad_block_frac=0.2,
                      empty_rows=2, seed=7, device="cuda")
    _run_and_check(inp)


def test_all_duplicates_of_one_token():
    inp = make_inputs(2, 64, 2048, seed=11, device="cuda")
    inp.indices[0] = 5
    inp.indices[1, ::2] = -1
    _run_and_check(inp)


def test_scales_and_custom_softmax_scale():
    inp = make_inputs(4, 64, 2048, k_scale=0.25, v_scale=3.0, seed=3, device="cuda")
    _run_and_check(inp, softmax_scale=192 ** -0.5)


def test_scales_on_device():
    inp = make_inputs(4, 16, 2048, k_scale=1.7, v_scale=0.4, seed=4, device="cuda")
    _run_and_check(inp, scales_on_device=True)


@pytest.mark.parametrize("heads", [8, 32, 64, 128])
@pytest.mark.parametrize("splits", [1, 2, 5, 8, 17, 32])
def test_decode_resolving_its_own_ids(heads, splits):
    """The decode resolving its own ids (no resolve launch), from one split of all 2176 positions
    to 32 short ones (each scans every earlier position for its ids). Duplicates across splits
    (the second half of each row repeats ids of the first, reversed), inside a split, holes,
    out-of-range ids, bad blocks and an empty row: the same set semantics, so the very same bits
    as with the resolve kernel."""
    inp = make_inputs(3, heads, 2176, hole_frac=0.15, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.05, empty_rows=1,
                      seed=heads + splits, device="cuda", k_scale=0.9, v_scale=1.1)
    half = inp.indices.shape[1] // 2
    inp.indices[1, half:2 * half] = inp.indices[1, :half].flip(0)
    fused = _run_and_check(inp, num_splits=splits, fuse_resolve=True)
    separate = _run_and_check(inp, num_splits=splits, fuse_resolve=False, twice=False)
    assert torch.equal(fused[0], separate[0]) and torch.equal(fused[1], separate[1]), "fused resolve differs from the resolve kernel"


def _tuned_stream_configs():
    from cute_dsa.tuning_table import table_for

    table = table_for("NVIDIA H200")  # shipped in the package
    assert table is not None, "tuning/NVIDIA_H200.yaml not found"
    out = []
    for entry in table.entries:
        cfg = entry.best.config
        if cfg.can_stream_resolve() and cfg not in out:
            out.append(cfg)
    return out


STREAM_CONFIGS = _tuned_stream_configs()


@pytest.mark.parametrize("cfg", STREAM_CONFIGS, ids=lambda c: c.label().replace(" ", "-"))
@pytest.mark.parametrize("splits", [1, 3, 17])  # 17: splits of 128 positions, one id window each (the small-batch choice)
def test_decode_streaming_its_own_ids(cfg, splits):
    """The decode resolving its ids window by window (kernels/stream_resolve.py), with every tuned
    config it can run: duplicates inside a window, across windows (the second half of a row
    repeats the first, reversed) and across splits, holes, out-of-range ids, bad blocks and an
    empty row give the very same bits as the resolve kernel."""
    heads = cfg.head_tile if cfg.tiling == "tokens_m" else 100
    inp = make_inputs(3, heads, 2176, hole_frac=0.15, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.05, empty_rows=1,
                      context=8192, seed=splits + cfg.stages, device="cuda", k_scale=0.9, v_scale=1.1)
    half = inp.indices.shape[1] // 2
    inp.indices[1, half:2 * half] = inp.indices[1, :half].flip(0)
    streamed = _run_and_check(inp, num_splits=splits, config=cfg, fuse_resolve="stream")
    separate = _run_and_check(inp, num_splits=splits, config=cfg, fuse_resolve=False, twice=False)
    assert torch.equal(streamed[0], separate[0]) and torch.equal(streamed[1], separate[1]), "streamed resolve differs from the resolve kernel"


@pytest.mark.parametrize("heads", [8, 16, 32, 64, 128])
@pytest.mark.parametrize("splits", [1, 3, 17])
def test_physical_indices_give_the_logical_bits(heads, splits):
    """physical_indices=True on the rows the resolve would produce (each id's first position,
    holes elsewhere): the very same bits as the logical ids, with no resolve at all, long splits
    and short ones (which resolve in the decode on the logical path)."""
    inp = make_inputs(3, heads, 2176, hole_frac=0.15, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.05, empty_rows=1,
                      seed=40 + heads + splits, device="cuda", k_scale=0.9, v_scale=1.1)
    logical = _run_and_check(inp, num_splits=splits, twice=False)
    physical = _run_and_check(dataclasses.replace(inp, indices=physical_ids(inp)), num_splits=splits, physical=True)
    assert torch.equal(logical[0], physical[0]) and torch.equal(logical[1], physical[1]), "physical ids differ from the logical path"


PAIR_CONFIGS = [c for c in config_space()[0] if c.pair]


@pytest.mark.parametrize("cfg", PAIR_CONFIGS, ids=lambda c: c.label().replace(" ", "-"))
@pytest.mark.parametrize("heads", [65, 100, 128])
@pytest.mark.parametrize("splits", [1, 3])
def test_pair_gives_the_bits_of_two_head_tiles(cfg, heads, splits):
    """Two head tiles of a cluster sharing the gather (each CTA converts half of every K/V tile and
    stores it into both): the very bits of the same config without pair, on logical ids (holes,
    duplicates, bad blocks, an empty row, a partial last tile) and on physical ids."""
    inp = make_inputs(3, heads, 2000, hole_frac=0.15, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.05, empty_rows=1,
                      seed=heads + splits + cfg.stages, device="cuda", k_scale=0.9, v_scale=1.1)
    solo = dataclasses.replace(cfg, pair=False)
    paired = _run_and_check(inp, num_splits=splits, config=cfg)
    alone = _run_and_check(inp, num_splits=splits, config=solo, twice=False)
    assert torch.equal(paired[0], alone[0]) and torch.equal(paired[1], alone[1]), "pair differs from two separate head tiles"
    phys = dataclasses.replace(inp, indices=physical_ids(inp))
    paired = _run_and_check(phys, num_splits=splits, config=cfg, physical=True, twice=False)
    assert torch.equal(paired[0], alone[0]) and torch.equal(paired[1], alone[1]), "pair on physical ids differs"


@pytest.mark.parametrize("width", [2176, 9000])
def test_resolve_indices_then_physical_decode(width):
    """cute_dsa.resolve_indices gives exactly each id's first position's cache row (-1 elsewhere),
    and decoding those physical ids (twice, as layers sharing a selection would) the logical bits;
    9000 ids take the resolve's global-memory duplicate search."""
    inp = make_inputs(3, 64, width, hole_frac=0.15, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.05, empty_rows=1,
                      context=16384, seed=width, device="cuda")
    resolved = cute_dsa.resolve_indices(inp.kv_cache, inp.block_table, inp.seq_lens, inp.indices)
    assert torch.equal(resolved, physical_ids(inp))
    into = torch.full_like(inp.indices, 7)
    assert cute_dsa.resolve_indices(inp.kv_cache, inp.block_table, inp.seq_lens, inp.indices, out=into) is into
    assert torch.equal(into, resolved)
    logical = _run_and_check(inp, twice=False)
    physical = _run_and_check(dataclasses.replace(inp, indices=resolved), physical=True)
    assert torch.equal(logical[0], physical[0]) and torch.equal(logical[1], physical[1])


@pytest.mark.parametrize("block", [1, 3, 48, 64, 100])
@pytest.mark.parametrize("width", [2048, 2176, 9000])
def test_resolve_indices_any_block_size(block, width):
    """The resolve's page and slot (a multiply-shift division by block_size) are exact for every
    block size, power of two or not; 133 rows: more CTAs than SMs."""
    inp = make_inputs(133, 1, width, block_size=block, hole_frac=0.1, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.05,
                      empty_rows=2, context=10000, seed=block * 7 + width, device="cuda")
    resolved = cute_dsa.resolve_indices(inp.kv_cache, inp.block_table, inp.seq_lens, inp.indices)
    assert torch.equal(resolved, physical_ids(inp))


@pytest.mark.parametrize("heads", [16, 64])
@pytest.mark.parametrize("flat", [True, False])
def test_physical_indices_outside_the_cache_select_nothing(heads, flat):
    """Ids past the last cache row or below -1 select nothing (never read), ids of other
    sequences' pages are read as given (the block table is not consulted), on a flat cache and on
    one with a gap after every block (0x7F: NaN bytes that must not be read)."""
    inp = make_inputs(4, heads, 2048, seed=heads + flat, device="cuda", k_scale=1.3)
    blocks, bs, tb = inp.kv_cache.shape
    total = blocks * bs
    g = torch.Generator(device="cuda").manual_seed(heads)
    ids = torch.stack([torch.randperm(total, generator=g, device="cuda")[:2048] for _ in range(4)]).to(torch.int32)
    u = torch.rand(ids.shape, generator=g, device="cuda")
    ids[u < 0.05] = total + (ids[u < 0.05] % 977)
    ids[(u >= 0.05) & (u < 0.08)] = -3
    ids[(u >= 0.08) & (u < 0.12)] = -1
    ids[3] = torch.where(ids[3] >= 0, total + ids[3], ids[3])  # a row with nothing inside the cache
    ids[2, 0] = 2**31 - 1
    cache = inp.kv_cache
    if not flat:
        padded = torch.full((blocks, bs + 3, tb), 0x7F, dtype=torch.uint8, device="cuda")
        padded[:, :bs] = cache.view(torch.uint8)
        cache = padded[:, :bs].view(cache.dtype)
    _run_and_check(dataclasses.replace(inp, kv_cache=cache, indices=ids), physical=True)
    _run_and_check(dataclasses.replace(inp, kv_cache=cache, indices=ids), physical=True, num_splits=5)


def _tuned_configs():
    from cute_dsa.variants import tuned_configs

    return list(dict.fromkeys(tuned_configs()))


@pytest.mark.parametrize("cfg", _tuned_configs(), ids=lambda c: c.label().replace(" ", "-"))
def test_physical_indices_every_tuned_config(cfg):
    heads = cfg.head_tile if cfg.tiling == "tokens_m" else 100
    inp = make_inputs(5, heads, 2176, hole_frac=0.1, dup_frac=0.1, seed=cfg.stages + heads, device="cuda")
    _run_and_check(dataclasses.replace(inp, indices=physical_ids(inp)), config=cfg, physical=True)


@pytest.mark.parametrize("splits", [1, 2, 5, 17])
def test_forced_splits(splits):
    inp = make_inputs(3, 64, 2176, seed=splits, device="cuda")
    _run_and_check(inp, num_splits=splits)


def test_kv_cache_4d_one_head():
    inp = make_inputs(2, 8, 2048, seed=5, device="cuda")
    _run_and_check(inp, kv4d=True)


def test_return_lse_false_and_allocated_outputs():
    inp = make_inputs(3, 48, 2048, seed=6, device="cuda")
    out, lse = cute_dsa.dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, return_lse=False)
    assert lse is None and out.shape == (3, 48, 512) and out.dtype == torch.bfloat16
    ref, _ = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale)
    assert relative_error(out, ref) <= REL_TOL


def test_long_context_wide_selection():
    inp = make_inputs(2, 64, 16384, context=40000, min_context=30000, seed=8, device="cuda")
    _run_and_check(inp)


def test_cache_larger_than_2gib():
    """Row addresses past 2**31 bytes (a 32k-context batch of 128 is 2.2 GB): 64-bit offsets."""
    small = make_inputs(3, 64, 2048, token_bytes=528, seed=11, device="cuda")
    nb = small.kv_cache.shape[0]
    total = (2**31 + 2**28) // (64 * 528) + nb  # blocks; the used ones sit past 2**31 bytes
    big = torch.empty(total, 64, 528, dtype=torch.uint8, device="cuda")
    big[total - nb:] = small.kv_cache.view(torch.uint8)
    bt = small.block_table
    table = torch.where((bt >= 0) & (bt < nb), bt + (total - nb), bt).to(torch.int32)
    inp = dataclasses.replace(small, kv_cache=big.view(torch.float8_e4m3fn), block_table=table)
    _run_and_check(inp, twice=False)
    del big


def test_current_stream():
    inp = make_inputs(3, 64, 2048, seed=9, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out, lse = cute_dsa.dsa_decode(*inp.args())
    s.synchronize()
    ref, _ = masked_attention(*inp.args())
    assert relative_error(out, ref) <= REL_TOL


def test_cuda_graph_capture():
    inp = make_inputs(4, 64, 2048, seed=10, device="cuda")
    out = torch.empty(4, 64, 512, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(4, 64, dtype=torch.float32, device="cuda")
    cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse)  # compile + warm up outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    ref, _ = masked_attention(*inp.args())
    assert relative_error(out, ref) <= REL_TOL


WORKSPACE_CASES = [  # (splits, fuse_resolve, physical, return_lse): every set of scratch parts
    (4, False, False, True),   # resolve launch + split partials
    (17, "slice", False, True),  # the decode resolves its slices: phys written by the decode
    (3, "stream", False, True),  # streamed: no phys
    (3, None, True, True),     # physical ids: partials only
    (1, False, False, False),  # one split, no lse wanted: phys + the throw-away lse
    (1, None, True, True),     # physical, one split: nothing at all
]


@pytest.mark.parametrize("splits,fuse,physical,want_lse", WORKSPACE_CASES)
def test_workspace_gives_the_same_bits_and_allocates_nothing(splits, fuse, physical, want_lse):
    """A caller's workspace (sized by decode_workspace_bytes, at an offset inside a larger buffer)
    holds every scratch tensor: the bits of the allocating call, and with out/lse given the call
    makes no CUDA allocation. A workspace one byte short is refused before any launch."""
    inp = make_inputs(3, 64, 2176, hole_frac=0.1, dup_frac=0.1, empty_rows=1, context=8192, seed=70 + splits,
                      device="cuda")
    if physical:
        inp = dataclasses.replace(inp, indices=physical_ids(inp))
    cfg = cute_dsa.DecodeKernelConfig() if fuse == "stream" else None  # has id windows: can stream
    kw = dict(k_scale=inp.k_scale, v_scale=inp.v_scale, num_splits=splits, fuse_resolve=fuse, physical_indices=physical,
              return_lse=want_lse, config=cfg)
    ref_o, ref_l = cute_dsa.dsa_decode(*inp.args(), **kw)
    need = cute_dsa.decode_workspace_bytes(*inp.args(), **kw)
    assert (need == 0) == (physical and splits == 1)
    big = torch.full((need + 4096,), 0xFF, dtype=torch.uint8, device="cuda")  # stale bytes must not matter
    ws = big[256: 256 + need]
    out = torch.empty(3, 64, 512, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(3, 64, dtype=torch.float32, device="cuda") if want_lse else None
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    o, l = cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse, workspace=ws, **kw)
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == before, "the call allocated"
    torch.cuda.synchronize()
    assert o.data_ptr() == out.data_ptr() and torch.equal(o, ref_o)
    if want_lse:
        assert torch.equal(l, ref_l)
    else:
        assert l is None and ref_l is None
    if need:
        with pytest.raises(ValueError, match=rf"workspace.numel\(\)={need - 1}: expected >= {need} bytes"):
            cute_dsa.dsa_decode(*inp.args(), workspace=ws[: need - 1], **kw)


def test_workspace_under_cuda_graph_capture():
    inp = make_inputs(4, 16, 2048, seed=12, device="cuda")
    kw = dict(k_scale=inp.k_scale, v_scale=inp.v_scale, num_splits=5, fuse_resolve=False)
    ws = torch.empty(cute_dsa.decode_workspace_bytes(*inp.args(), **kw), dtype=torch.uint8, device="cuda")
    out = torch.empty(4, 16, 512, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(4, 16, dtype=torch.float32, device="cuda")
    cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse, workspace=ws, **kw)  # compile + warm up outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse, workspace=ws, **kw)
    out.fill_(float("nan"))
    ws.fill_(0xFF)
    g.replay()
    torch.cuda.synchronize()
    ref, ref_lse = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale)
    assert relative_error(out, ref) <= REL_TOL
    live = torch.isfinite(ref_lse)
    assert (lse.double() - ref_lse)[live].abs().max().item() <= LSE_TOL


def _config_id(cfg):
    return cfg.label().replace(" ", "-")


@pytest.mark.parametrize("cfg", config_space()[0], ids=_config_id)
def test_every_tunable_config(cfg):
    """Each config the tuner may pick, direct and split, with holes, duplicates and an empty row."""
    inp = tunable_config_inputs(cfg)
    for splits in TUNABLE_CONFIG_SPLITS:
        _run_and_check(inp, config=cfg, num_splits=splits)


ID_WINDOW_CONFIGS = [
    cute_dsa.DecodeKernelConfig(stages=2, id_window=128),
    cute_dsa.DecodeKernelConfig(stages=2, id_window=256, overlap=False),
    cute_dsa.DecodeKernelConfig(chunk_tokens=16, stages=4, id_window=128, kv_buffers=3),
    cute_dsa.DecodeKernelConfig(stages=4, id_window=128),
]


@pytest.mark.parametrize("cfg", ID_WINDOW_CONFIGS, ids=_config_id)
def test_id_window_prefetch(cfg):
    """Row ids prefetched a window ahead: many windows per split, a partial last window, splits
    that start mid-selection, holes, duplicates and an empty row."""
    inp = make_inputs(3, 64, 2176, hole_frac=0.2, dup_frac=0.1, bad_block_frac=0.05, empty_rows=1,
                      seed=cfg.id_window + cfg.chunk_tokens, device="cuda")
    _run_and_check(inp, config=cfg, num_splits=1)
    _run_and_check(inp, config=cfg, num_splits=5)
    wide = make_inputs(2, 16, 16384, context=40000, min_context=30000, seed=8, device="cuda")
    _run_and_check(wide, config=cfg, num_splits=2, twice=False)


TOKENS_M_CONFIGS = [
    cute_dsa.DecodeKernelConfig(tiling="tokens_m", head_tile=t, chunk_tokens=64, stages=st, id_window=w, convert=cv.split()[0],
                                release_early=cv == "registers early")
    for t, st, w, cv in [(8, 2, 128, "producer"), (16, 3, 128, "producer"), (32, 3, 128, "producer"), (32, 2, 0, "producer"),
                         (8, 4, 128, "consumer"), (16, 4, 0, "consumer"), (16, 4, 128, "consumer"),
                         (8, 4, 128, "registers"), (16, 4, 0, "registers"), (16, 4, 128, "registers"), (32, 4, 128, "registers"),
                         (8, 6, 0, "registers"), (16, 6, 0, "registers"),
                         (8, 4, 128, "registers early"), (16, 4, 0, "registers early")]
]


@pytest.mark.parametrize("cfg", TOKENS_M_CONFIGS, ids=_config_id)
@pytest.mark.parametrize("heads", [1, 5, 8, 12, 16, 24, 32, 40])
def test_tokens_as_m(cfg, heads):
    """Tokens as the wgmma M: head counts below, at and above the tile (several head tiles, a
    partial last one), one chunk, an odd number of chunks (one consumer idle at the end), splits,
    holes, duplicates, bad blocks and an empty row."""
    inp = make_inputs(3, heads, 2176, hole_frac=0.2, dup_frac=0.1, bad_block_frac=0.05, empty_rows=1,
                      seed=heads * 7 + cfg.head_tile, device="cuda", k_scale=0.7, v_scale=1.3)
    _run_and_check(inp, config=cfg, num_splits=1)
    _run_and_check(inp, config=cfg, num_splits=5)
    short = make_inputs(2, heads, 63, seed=heads, device="cuda")  # one chunk, consumer 1 idle
    _run_and_check(short, config=cfg, num_splits=1)
    odd = make_inputs(2, heads, 3 * 64 + 5, block_size=16, token_bytes=656, seed=heads + 1, device="cuda")
    _run_and_check(odd, config=cfg, num_splits=1)


HEADS_M_CONFIGS = [
    cute_dsa.DecodeKernelConfig(chunk_tokens=n, stages=st, kv_buffers=kv, id_window=w, gather=g, scores=sc, overlap=ov)
    for n, st, kv, w, g, sc, ov in [
        (64, 4, 2, 128, "ld_global", "one", False), (64, 2, 2, 0, "ld_global", "one", False),
        (32, 2, 3, 128, "ld_global", "one", False), (32, 4, 2, 128, "cp_async", "one", False),
        (32, 2, 2, 128, "ld_global", "split", False), (32, 2, 3, 0, "ld_global", "split", True),
        (64, 4, 2, 128, "ld_global", "one", True), (48, 3, 3, 128, "ld_global", "one", True),
        (48, 4, 3, 0, "ld_global", "one", False), (32, 4, 2, 0, "cp_async", "one", True),
        # A fifth and sixth register set of rows (the scorer's registers): with and without the overlap.
        (64, 5, 2, 128, "ld_global", "one", True), (64, 6, 2, 128, "ld_global", "one", False),
    ]
]


@pytest.mark.parametrize("cfg", HEADS_M_CONFIGS, ids=_config_id)
@pytest.mark.parametrize("heads", [5, 64, 100, 128])
def test_heads_as_m(cfg, heads):
    """Heads as M with the ld_global producer and/or one scoring consumer: one head tile, a padded
    one, two tiles; splits, holes, duplicates, bad blocks and an empty row; one chunk and an odd
    number of chunks with small blocks."""
    inp = make_inputs(3, heads, 2176, hole_frac=0.2, dup_frac=0.1, bad_block_frac=0.05, empty_rows=1,
                      seed=heads * 5 + cfg.chunk_tokens, device="cuda", k_scale=0.8, v_scale=1.2)
    _run_and_check(inp, config=cfg, num_splits=1)
    _run_and_check(inp, config=cfg, num_splits=5)
    short = make_inputs(2, heads, 40, seed=heads, device="cuda")
    _run_and_check(short, config=cfg, num_splits=1)
    odd = make_inputs(2, heads, 5 * 64 + 7, block_size=16, token_bytes=656, seed=heads + 1, device="cuda")
    _run_and_check(odd, config=cfg, num_splits=1)
