"""Tuned-config tables on the CPU: YAML round trip, header checks, nearest-bucket lookup, the
heuristic fallback and its one-time warning, the pruning of configs that cannot fit, and that
every config in the committed tables compiles for sm_90a."""

import glob
import os
import warnings
from dataclasses import replace

import pytest
import torch

from cute_dsa import tuning_table as tt
from cute_dsa.checks import DecodeProblem
from cute_dsa.config_select import MAX_DISTANCE, choice_for, heuristic_choice
from cute_dsa.kernel_config import DecodeKernelConfig
from cute_dsa.tune import Progress, candidate_key, config_space, heuristic_key, report, split_candidates
from cute_dsa.tuning_table import Choice, Entry, ShapeKey, TuningTable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU = "NVIDIA H200"


def _problem(rows=8, heads=64, width=2048, block=64):
    return DecodeProblem(rows, heads, width, num_blocks=1000, block_size=block, token_bytes=512,
                         k_scale_on_device=False, v_scale_on_device=False)


def _table():
    t = TuningTable(gpu=GPU, sm_count=132)
    t.put(Entry(ShapeKey(1, 64, 2048, 64), Choice(DecodeKernelConfig(chunk_tokens=16, stages=6), 32, 20.5),
                Choice(DecodeKernelConfig(), 16, 21.0)))
    t.put(Entry(ShapeKey(128, 64, 2048, 64), Choice(DecodeKernelConfig(stages=3), 1, 80.25)))
    t.put(Entry(ShapeKey(8, 16, 2176, 64), Choice(DecodeKernelConfig(), 4, 30.0)))
    return t


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Point the lookup at a temporary file only (not the shipped tables) and forget cached
    tables and warnings."""
    path = tmp_path / "mine.yaml"
    monkeypatch.setenv(tt.ENV_FILE, str(path))
    monkeypatch.setattr(tt, "candidate_paths", lambda gpu: [os.environ[tt.ENV_FILE]])
    tt.clear_cache()
    tt._warned.clear()
    yield path
    tt.clear_cache()


def test_yaml_round_trip_is_exact_and_readable():
    t = _table()
    text = t.dump()
    back = TuningTable.loads(text)
    assert back.dump() == text
    assert back.nearest(ShapeKey(1, 64, 2048, 64)).runner_up.us == 21.0
    assert text.startswith("header:") and "gpu: NVIDIA H200" in text and "nvidia_cutlass_dsl" in text
    # one entry per bucket: putting the same shape again replaces it
    t.put(Entry(ShapeKey(1, 64, 2048, 64), Choice(DecodeKernelConfig(), 8, 19.0)))
    assert len(t.entries) == 3 and t.nearest(ShapeKey(1, 64, 2048, 64)).best.splits == 8


def test_nearest_bucket():
    t = _table()
    assert t.nearest(ShapeKey(2, 64, 2048, 64)).shape.batch == 1
    assert t.nearest(ShapeKey(100, 64, 2100, 64)).shape.batch == 128
    assert t.nearest(ShapeKey(8, 8, 2176, 64)).shape.heads == 16  # heads weigh most
    assert t.nearest(ShapeKey(8, 48, 2048, 64)).shape.heads == 64


def test_tuned_choice_keeps_the_bucket_cta_count(isolated):
    _table().save(str(isolated))
    c = choice_for(_problem(rows=2, heads=64), GPU, 132)  # bucket B=1 with 32 splits -> 16
    assert c.source.startswith("tuned") and c.splits == 16 and c.config.chunk_tokens == 16
    c = choice_for(_problem(rows=200, heads=64), GPU, 132)
    assert c.splits == 1 and c.config.stages == 3


def test_header_mismatch_is_ignored_with_one_warning(isolated):
    t = _table()
    t.versions = dict(t.versions, nvidia_cutlass_dsl="0.0.1")
    t.save(str(isolated))
    with pytest.warns(UserWarning, match="nvidia_cutlass_dsl 0.0.1 in the file"):
        c = choice_for(_problem(), GPU, 132)
    assert c.source == "heuristic"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tt.clear_cache()
        choice_for(_problem(), GPU, 132)  # same message: not repeated


def test_a_mismatched_user_file_falls_back_to_the_shipped_table(tmp_path, monkeypatch):
    t = _table()
    t.versions = dict(t.versions, nvidia_cutlass_dsl="0.0.1")
    t.save(str(tmp_path / "mine.yaml"))
    monkeypatch.setenv(tt.ENV_FILE, str(tmp_path / "mine.yaml"))
    tt.clear_cache()
    tt._warned.clear()
    try:
        with pytest.warns(UserWarning, match="nvidia_cutlass_dsl 0.0.1 in the file"):
            c = choice_for(_problem(), GPU, 132)
        assert c.source.startswith("tuned")  # from tuning/NVIDIA_H200.yaml
    finally:
        tt.clear_cache()


def test_other_gpu_file_is_ignored(isolated):
    t = _table()
    t.gpu = "NVIDIA H100 80GB HBM3"
    t.save(str(isolated))
    with pytest.warns(UserWarning, match="GPU 'NVIDIA H100 80GB HBM3' in the file"):
        assert choice_for(_problem(), GPU, 132).source == "heuristic"


def test_unknown_gpu_and_far_shape_fall_back_once(isolated, monkeypatch):
    monkeypatch.setenv(tt.ENV_FILE, str(isolated.parent / "missing.yaml"))
    with pytest.warns(UserWarning, match="no tuning table for 'Mystery GPU'"):
        c = choice_for(_problem(), "Mystery GPU", 100)
    assert c == heuristic_choice(_problem(), 100)
    _table().save(str(isolated))
    monkeypatch.setenv(tt.ENV_FILE, str(isolated))
    tt.clear_cache()
    far = _problem(rows=1, heads=1)
    assert ShapeKey(1, 1, 2048, 64).distance(ShapeKey(1, 64, 2048, 64)) > MAX_DISTANCE
    with pytest.warns(UserWarning, match="no tuned bucket near"):
        assert choice_for(far, GPU, 132).source == "heuristic"


def test_bad_yaml_is_ignored(isolated):
    isolated.write_text("header: {format: 99}\nentries: []\n")
    with pytest.warns(UserWarning, match="format=99"):
        assert choice_for(_problem(), GPU, 132).source == "heuristic"


def test_config_space_prunes_what_does_not_fit():
    ok, pruned = config_space()
    assert ok and pruned
    for cfg in ok:
        assert cfg.smem_bytes() <= 227 * 1024
    for cfg, why in pruned:
        if "shared memory" in why:
            assert cfg.smem_bytes() > 227 * 1024
        else:  # Q in registers plus two chunks in flight does not fit the consumer's registers
            assert "registers" in why and cfg.q_in_regs and cfg.overlap and cfg.chunk_tokens > 16
    assert split_candidates(ShapeKey(64, 128, 2048, 64), ok[0], 132) == [1, 2]  # 256 CTAs: two waves
    assert split_candidates(ShapeKey(128, 128, 2048, 64), ok[0], 132) == [1]
    assert 64 in split_candidates(ShapeKey(1, 64, 2048, 64), DecodeKernelConfig(chunk_tokens=16), 132)


def test_report_compares_the_winner_with_the_heuristic_choice(tmp_path):
    configs = config_space()[0]
    prog = Progress.open(str(tmp_path / "p.jsonl"))
    a, b = ShapeKey(8, 64, 2048, 64), ShapeKey(64, 16, 2048, 64)
    for sh, heur_us in ((a, 60.0), (b, 100.0)):
        prog.record(heuristic_key(sh, 132), heur_us)
        prog.record(candidate_key(sh, DecodeKernelConfig(chunk_tokens=16, stages=8), 1), 50.0)
        prog.record(candidate_key(sh, DecodeKernelConfig(stages=4), 2), "error: relative error 1e-1")
    # The heuristic's own measurement is the winner when nothing beats it.
    prog.record(candidate_key(ShapeKey(1, 16, 2048, 64), DecodeKernelConfig(stages=4), 32), 31.0)
    prog.record(heuristic_key(ShapeKey(1, 16, 2048, 64), 132), 30.0)
    lines = report([a, b, ShapeKey(1, 16, 2048, 64), ShapeKey(2, 16, 2048, 64)], configs, Progress.open(prog.path), 132)
    rows = [line for line in lines if line.startswith("| 8 ") or line.startswith("| 64 ") or line.startswith("| 1 ")]
    assert "| 50.0 | n16 st8 kv2 w128 x1 | 60.0 | 1.200 |" in rows[0]
    assert rows[1].endswith("| 100.0 | 2.000 |")
    assert rows[2] == "| 1 | 16 | 2048 | 30.0 | t16 st4 w128 cc x16 | 30.0 | 1.000 |"  # tokens as M, 16 splits
    assert not any(line.startswith("| 2 ") for line in lines)  # no measurements: no row
    geo = (1.2 * 2.0 * 1.0) ** (1 / 3)
    assert lines[-1] == f"heuristic/tuned: geomean {geo:.3f}x over 3 shapes; largest gain 2.000x at B=64 H=16 W=2048"


def test_unknown_config_key_is_refused():
    with pytest.raises(ValueError, match="not fields of DecodeKernelConfig"):
        Choice.from_dict({"config": {"chunk_tokenz": 32}, "splits": 1})


COMMITTED = sorted(glob.glob(os.path.join(REPO, "tuning", "*.yaml")))


@pytest.mark.compile
@pytest.mark.parametrize("path", COMMITTED, ids=[os.path.basename(p) for p in COMMITTED])
def test_committed_configs_compile_for_sm90a(path, tmp_path):
    from cute_dsa.compile import build_decode
    from cute_dsa.kernel_config import DecodeVariant
    from cute_dsa.variants import check_ptx, decode_kind

    table = TuningTable.load(path)
    assert table.mismatch(table.gpu) is None, "committed table does not match this library"
    configs = {e.best.config for e in table.entries} | {e.runner_up.config for e in table.entries if e.runner_up}
    for i, cfg in enumerate(sorted(configs, key=str)):
        for split in (False, True):
            v = DecodeVariant(cfg.validate(), split=split, write_lse=True, k_scale_on_device=False, v_scale_on_device=False)
            build_decode(v, dump=(str(tmp_path), f"c{i}{split}"))
            assert check_ptx(decode_kind(v), open(tmp_path / f"c{i}{split}.ptx").read()) == []


_FAKE_WORKER = """
import json, os, sys, time
prog, mode = sys.argv[1], sys.argv[2]
done = set()
if os.path.exists(prog):
    done = {json.loads(l)["key"] for l in open(prog) if l.strip()}
for key in ("a", "b", "c"):
    if key in done:
        continue
    open(prog + ".current", "w").write(key)
    if key == "b":
        if mode == "hang":
            time.sleep(60)
        else:
            os._exit(7)  # a lost CUDA context kills the process
    with open(prog, "a") as f:
        f.write(json.dumps({"key": key, "result": 1.0}) + "\\n")
"""


@pytest.mark.parametrize("mode", ["hang", "crash"])
def test_watchdog_records_a_stalled_or_dead_candidate_and_resumes(tmp_path, mode):
    import sys

    from cute_dsa.tune import Progress, supervise

    prog = str(tmp_path / "p.jsonl")
    rc = supervise([sys.executable, "-c", _FAKE_WORKER, prog, mode], prog, watchdog=1.0, max_restarts=3)
    assert rc == 0
    res = Progress.open(prog).results
    assert res["a"] == 1.0 and res["c"] == 1.0
    assert str(res["b"]).startswith("error: " + ("no result within" if mode == "hang" else "worker died (7)"))


def test_tokens_as_m_config_rules():
    from cute_dsa.heuristics import HEADS_M_CONFIG, default_config, fit_to_heads, tokens_m_tile

    t = DecodeKernelConfig(tiling="tokens_m", head_tile=16, chunk_tokens=64, stages=3)
    assert t.validate() is t and t.label() == "t16 st3 w128" and t.gather_tokens() == 32
    for bad, msg in [
        (dict(head_tile=64), r"head_tile=64: expected one of \(8, 16, 32\) for tiling 'tokens_m'"),
        (dict(chunk_tokens=32), "chunk_tokens=32: expected 64 for tiling 'tokens_m'"),
        (dict(kv_buffers=3), "takes kv_buffers=2"),
        (dict(overlap=True), "overlap=False"),
        (dict(id_window=48), "expected 0, 128 or 256"),
        (dict(head_tile=32, stages=4), "bytes of shared memory"),
        (dict(convert="consumer"), "convert='consumer' takes stages=4"),
        (dict(convert="gpu"), "convert='gpu': expected one of"),
    ]:
        with pytest.raises(ValueError, match=msg):
            DecodeKernelConfig(**{**t.to_dict(), **bad}).validate()
    with pytest.raises(ValueError, match="head_tile=16: expected 64 for tiling 'heads_m'"):
        DecodeKernelConfig(head_tile=16).validate()
    with pytest.raises(ValueError, match="convert='consumer': only with tiling 'tokens_m'"):
        DecodeKernelConfig(convert="consumer").validate()
    # Heads as M, rows through registers (no raw ring) and one scoring consumer: 64-token tiles fit.
    lg = DecodeKernelConfig(chunk_tokens=64, stages=4, gather="ld_global", scores="one")
    assert lg.validate() is lg and lg.label() == "n64 st4 kv2 w128 lg s1" and lg.gather_tokens() == 16
    assert lg.smem_bytes() < DecodeKernelConfig(chunk_tokens=64, stages=4, scores="one").smem_bytes()
    # A fifth and sixth register set take the scorer's registers (five next to the overlap).
    for more in (dict(stages=5), dict(stages=6), dict(stages=5, overlap=True)):
        assert DecodeKernelConfig(**{**lg.to_dict(), **more}).validate().max_load_sets() >= more["stages"]
    for bad, msg in [
        (dict(stages=7), "keeps 2..6 register sets"),
        (dict(stages=6, overlap=True), "keeps 2..5 register sets"),
        (dict(scores="split", stages=4, chunk_tokens=32), "keeps 2..2 register sets"),
        (dict(stages=3, chunk_tokens=32), "keeps 2..2 register sets"),
        (dict(kv_buffers=3), "bytes of shared memory"),
        (dict(q_in_regs=True), "scores='one' takes q_in_regs=False"),
        (dict(scores="split", chunk_tokens=48, stages=2), "chunk_tokens=48: only with gather='ld_global', scores='one'"),
        (dict(scores="both"), "scores='both': expected one of"),
        (dict(gather="tma"), "gather='tma': expected one of"),
    ]:
        with pytest.raises(ValueError, match=msg):
            DecodeKernelConfig(**{**lg.to_dict(), **bad}).validate()
    with pytest.raises(ValueError, match="tiling 'tokens_m' takes gather='cp_async', scores='split'"):
        DecodeKernelConfig(**{**t.to_dict(), "scores": "one"}).validate()
    # Register-fed consumers: one 64-token ring slot per chunk, no FP16 K/V tiles, so 32 heads fit 4 slots.
    rf = DecodeKernelConfig(tiling="tokens_m", head_tile=32, chunk_tokens=64, stages=4, convert="registers")
    assert rf.validate() is rf and rf.label() == "t32 st4 w128 rf" and rf.gather_tokens() == 64
    assert rf.smem_bytes() < DecodeKernelConfig(tiling="tokens_m", head_tile=32, chunk_tokens=64, stages=3).smem_bytes()
    with pytest.raises(ValueError, match="convert='registers' takes stages=4"):
        DecodeKernelConfig(**{**rf.to_dict(), "stages": 3}).validate()
    with pytest.raises(ValueError, match="convert='registers': only with tiling 'tokens_m'"):
        DecodeKernelConfig(convert="registers").validate()
    rf8 = DecodeKernelConfig(**{**rf.to_dict(), "head_tile": 8})
    assert DecodeKernelConfig(**{**rf8.to_dict(), "release_early": True}).validate().label() == "t8 st4 w128 rf re"
    with pytest.raises(ValueError, match="release_early takes 8 or 16 heads"):
        DecodeKernelConfig(**{**rf.to_dict(), "release_early": True}).validate()
    with pytest.raises(ValueError, match="release_early=True: only with convert='registers'"):
        DecodeKernelConfig(release_early=True).validate()
    assert fit_to_heads(rf8, 12) == DecodeKernelConfig(**{**rf.to_dict(), "head_tile": 16})
    # A 32-head tuned bucket that is register-fed gets producer conversion (one fragment buffer
    # next to the 32-head O^T is slower); another bucket's tokens-as-M choice gives way to heads as M
    # above 16 heads, as the heuristic does.
    assert fit_to_heads(rf, 24).label() == "t32 st3 w128"
    assert fit_to_heads(rf8, 24) == HEADS_M_CONFIG
    assert default_config(_problem(rows=64, heads=8)).label() == "t8 st4 w128 rf re"
    assert fit_to_heads(default_config(_problem(rows=64, heads=8)), 32) == HEADS_M_CONFIG
    assert fit_to_heads(default_config(_problem(rows=64, heads=8)), 16).label() == "t16 st4 w128 rf re"
    assert default_config(_problem(rows=63, heads=8)).label() == "t8 st4 w128 cc"
    assert default_config(_problem(rows=256, heads=32)) == HEADS_M_CONFIG  # 17-32 heads: one padded 64-row tile
    assert default_config(_problem(rows=1, heads=17)) == HEADS_M_CONFIG
    assert default_config(_problem(rows=1, heads=16)).label() == "t16 st4 w128 cc"
    assert default_config(_problem(rows=32, heads=64)).label() == "n64 st4 kv2 w128 lg s1"
    assert default_config(_problem(rows=1, heads=128)).label() == "n64 st4 kv2 w128 lg s1"

    assert [tokens_m_tile(h) for h in (1, 8, 9, 16, 17, 32, 33, 64)] == [8, 8, 16, 16, 32, 32, None, None]
    # A tuned tokens-as-M choice for another head count takes the tile that holds the heads,
    # with fewer ring stages where the larger tile needs the shared memory.
    t4 = DecodeKernelConfig(tiling="tokens_m", head_tile=16, chunk_tokens=64, stages=4)
    assert fit_to_heads(t4, 5).head_tile == 8 and fit_to_heads(t4, 5).stages == 4
    assert fit_to_heads(t4, 24) == HEADS_M_CONFIG  # a larger tile above 16 heads: heads as M
    t32 = DecodeKernelConfig(tiling="tokens_m", head_tile=32, chunk_tokens=64, stages=3)
    assert fit_to_heads(t32, 24) == t32 and fit_to_heads(t32, 12).head_tile == 16  # a tuned 32-head bucket holds
    assert fit_to_heads(t4, 40) == HEADS_M_CONFIG  # above 32 heads: heads as M
    assert fit_to_heads(DecodeKernelConfig(stages=4), 8) == DecodeKernelConfig(stages=4)
    assert default_config(_problem(heads=12)).label() == "t16 st4 w128 cc"
    assert fit_to_heads(default_config(_problem(heads=12)), 32) == HEADS_M_CONFIG
    assert default_config(_problem(heads=32)) == HEADS_M_CONFIG
    assert default_config(_problem(heads=48)) == HEADS_M_CONFIG

    # The tuner tries tokens as M only with the head tile that fits the bucket's heads.
    ok = config_space()[0]
    tiles = {c.head_tile for c in ok if c.tiling == "tokens_m"}
    assert tiles == {8, 16, 32}
    for c in ok:
        if c.tiling == "tokens_m":
            assert bool(split_candidates(ShapeKey(64, 16, 2048, 64), c, 132)) == (c.head_tile == 16)
            assert split_candidates(ShapeKey(64, 64, 2048, 64), c, 132) == []


def test_tuned_tokens_as_m_choice_fits_the_heads(isolated):
    from cute_dsa.heuristics import HEADS_M_CONFIG

    t = TuningTable(gpu=GPU, sm_count=132)
    tm = DecodeKernelConfig(tiling="tokens_m", head_tile=16, chunk_tokens=64, stages=4)
    t.put(Entry(ShapeKey(64, 16, 2048, 64), Choice(tm, 2, 60.0)))
    t.save(str(isolated))
    c = choice_for(_problem(rows=64, heads=8), GPU, 132)
    assert c.config.head_tile == 8 and c.config.tiling == "tokens_m" and c.splits == 2
    c = choice_for(_problem(rows=64, heads=32), GPU, 132)
    assert c.config == HEADS_M_CONFIG and c.splits == 2  # above 16 heads as M; same CTA count: one (padded) tile


def test_pair_config_rules():
    """pair (two head tiles of a cluster share the gather): only the 64-token register-gather
    heads-as-M tiles with one scorer and an id window, at most 3 register sets; one head tile
    drops it; the tuner tries it above 64 heads only; it never resolves its ids in the decode."""
    from cute_dsa.api import launch_plan
    from cute_dsa.checks import DecodeProblem
    from cute_dsa.compile import ensure_arch_for_cpu_compile
    from cute_dsa.heuristics import fit_to_heads
    from cute_dsa.tune import applies

    pair = DecodeKernelConfig(chunk_tokens=64, stages=3, gather="ld_global", scores="one", pair=True).validate()
    assert pair.label() == "n64 st3 kv2 w128 lg s1 p2"
    for bad, why in [(dict(gather="cp_async", stages=2), "pair=True takes"), (dict(chunk_tokens=48, kv_buffers=3), "pair=True takes"),
                     (dict(scores="split", stages=2), "pair=True takes"), (dict(id_window=0), "pair=True takes an id window"),
                     (dict(stages=4), r"stages=4: gather='ld_global' keeps 2..3")]:
        with pytest.raises(ValueError, match=why):
            replace(pair, **bad).validate()
    assert fit_to_heads(pair, 128) == pair and fit_to_heads(pair, 65) == pair
    assert fit_to_heads(pair, 64) == replace(pair, pair=False, stages=4)
    assert applies(pair, 65) and applies(pair, 128) and not applies(pair, 64)
    assert any(c.pair for c in config_space()[0])

    ensure_arch_for_cpu_compile()
    problem = DecodeProblem(2, 128, 2048, num_blocks=10, block_size=64, token_bytes=528,
                            k_scale_on_device=False, v_scale_on_device=False, flat_cache=True)
    plan = launch_plan(problem, torch.device("cpu"), pair, 16, True)  # 128-position splits: the solo config resolves them itself
    assert plan.split_len == 128 and not plan.variant.fused_resolve and plan.resolve is not None
    assert launch_plan(problem, torch.device("cpu"), replace(pair, pair=False), 16, True, fuse_resolve="slice").variant.fused_resolve
    with pytest.raises(ValueError, match=r"fuse_resolve=True: n64 st3 kv2 w128 lg s1 p2 \(pair\) takes the resolve launch"):
        launch_plan(problem, torch.device("cpu"), pair, 16, True, fuse_resolve=True)


def test_l2_prefetch_rules_and_tuner_space():
    """l2_prefetch (the next id window's rows prefetched into L2): any config with an id window;
    tagged 'pf'; the tuner tries it with both tilings; its variants promise the prefetch
    in the PTX except streamed (whose pending registers hold block-table entries)."""
    from cute_dsa.kernel_config import DecodeVariant
    from cute_dsa.variants import all_variants, check_ptx, decode_kind

    pf = DecodeKernelConfig(chunk_tokens=64, stages=4, gather="ld_global", scores="one", l2_prefetch=True).validate()
    assert pf.label() == "n64 st4 kv2 w128 lg s1 pf"
    with pytest.raises(ValueError, match="l2_prefetch=True takes an id window"):
        replace(pf, id_window=0).validate()
    tm = DecodeKernelConfig(tiling="tokens_m", head_tile=16, chunk_tokens=64, stages=3, l2_prefetch=True).validate()
    assert tm.label() == "t16 st3 w128 pf"
    space = config_space()[0]
    assert {(c.stages, c.overlap, c.pair) for c in space if c.l2_prefetch and c.tiling == "heads_m"} == {
        (3, False, False), (4, False, False), (3, True, False), (4, True, False), (3, False, True)}
    assert {(c.head_tile, c.convert, c.stages, c.release_early) for c in space if c.l2_prefetch and c.tiling == "tokens_m"} == {
        (t, cv, st, re) for t in (8, 16, 32) for cv, st, re in [("producer", 2, False), ("producer", 3, False),
                                                                ("consumer", 4, False), ("registers", 4, True)]
        if not (re and t > 16) and not (t == 32 and cv == "consumer")}  # 32 heads with four raw slots: no shared memory left
    assert all(c.id_window == 128 for c in space if c.l2_prefetch)
    pf_split = DecodeVariant(pf, True, True, False, False)
    assert pf_split.prefetches_l2 and decode_kind(pf_split) == "decode_lg+pf"
    streamed = replace(pf_split, stream_resolve=True)
    assert not streamed.prefetches_l2 and decode_kind(streamed) == "decode_lg+stream"
    assert check_ptx("decode_lg+pf", "wgmma.mma_async ld.global.v4.b32 cvt.rn.f16x2.e4m3x2 setmaxnreg bar.arrive") == [
        "missing cp.async.bulk.prefetch.L2.global"]
    names = [v.name for v in all_variants()]
    assert any("_pf_" in n and n.endswith("_phys") for n in names)  # physical ids: FlashMLA's contract
    assert DecodeKernelConfig.from_dict(pf.to_dict()) == pf
    assert DecodeVariant(pf, True, True, False, False).config.l2_prefetch
