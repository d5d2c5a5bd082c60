"""Compile every kernel variant for sm_90a with no GPU, and check its PTX (and, via ptxas, its
resources) for what the design promises: wgmma, cp.async gathers, e4m3x2 conversions, no
local memory, no spills, and no wgmma serialization (which would silently undo the overlap)."""

import os

import pytest

from cute_dsa.variants import all_variants, check_ptx, find_ptxas, ptxas_report, reqntid, setmaxnreg_need

pytestmark = pytest.mark.compile

VARIANTS = all_variants()


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("ptx"))


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_variant_compiles_and_ptx_has_promised_instructions(variant, dump_dir):
    variant.build(dump=(dump_dir, variant.name))
    ptx_path = os.path.join(dump_dir, variant.name + ".ptx")
    assert os.path.exists(ptx_path), f"no PTX written for {variant.name}"
    ptx = open(ptx_path).read()
    assert ".target sm_90a" in ptx
    problems = check_ptx(variant.kind, ptx)
    assert not problems, f"{variant.name}: {problems}"
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("PTX checked; no ptxas found for the spill check (install the `test` extra)")
    rep = ptxas_report(ptxas, ptx_path)
    assert rep.spill_stores == 0 and rep.spill_loads == 0 and rep.stack_bytes == 0, f"{variant.name}: {rep}"
    assert not rep.wgmma_serialized, f"{variant.name}: ptxas serialized the wgmma pipeline"
    need = setmaxnreg_need(ptx)
    if need is not None:  # the launch allocation must hold the setmaxnreg split, or inc deadlocks
        assert rep.registers * reqntid(ptx) >= need, f"{variant.name}: {rep.registers} registers x {reqntid(ptx)} threads < {need}"


def test_setmaxnreg_need_reads_the_split():
    ptx = ".reqntid 384, 1, 1\n setmaxnreg.dec.sync.aligned.u32 \t40;\n setmaxnreg.inc.sync.aligned.u32 \t232;"
    assert setmaxnreg_need(ptx) == 128 * 40 + 256 * 232 == 64512
    assert setmaxnreg_need(".reqntid 128, 1, 1") is None
    one_each = ".reqntid 384, 1, 1\n setmaxnreg.dec.sync.aligned.u32 120;\n setmaxnreg.inc.sync.aligned.u32 224;\n setmaxnreg.dec.sync.aligned.u32 160;"
    assert setmaxnreg_need(one_each) == 128 * (120 + 224 + 160) == 64512


def test_check_ptx_catches_missing_and_local():
    assert check_ptx("decode", "st.local.b32") != []
    assert "contains ld.local (local memory)" in check_ptx("combine", "ld.global.v4 ld.local")
    assert check_ptx("decode_lg", "wgmma.mma_async cvt.rn.f16x2.e4m3x2 setmaxnreg bar.arrive") == ["missing ld.global.v4.b32"]
    lg = "wgmma.mma_async ld.global.v4.b32 cvt.rn.f16x2.e4m3x2 setmaxnreg bar.arrive"
    assert check_ptx("decode_lg+resolve", lg) == ["missing atom.shared.cta.cas.b32", "missing atom.shared.cta.min.s32"]
    assert check_ptx("decode_lg+resolve", lg + " atom.shared.cta.cas.b32 atom.shared.cta.min.s32") == []


def test_every_config_has_a_fused_resolve_variant():
    names = {v.name for v in VARIANTS}
    fused = [v for v in VARIANTS if v.name.endswith("_fr")]
    assert fused and all("resolve" in v.kind.split("+") for v in fused)
    for v in VARIANTS:
        if v.kind.startswith("decode") and ("_split_lse" in v.name or "_direct_lse" in v.name) and "dev" not in v.name \
                and not v.name.endswith(("_fr", "_sr", "_phys")) and "_p2_" not in v.name:  # a pair never resolves in the decode
            assert v.name + "_fr" in names, v.name


def test_every_tuned_config_that_can_stream_has_streamed_resolve_variants():
    from cute_dsa.kernel_config import DecodeVariant
    from cute_dsa.variants import decode_variant_name, tuned_configs

    streamed = {v.name: v for v in VARIANTS if v.name.endswith("_sr")}
    assert streamed and all(v.kind.endswith("+stream") for v in streamed.values())
    tuned = [c for c in tuned_configs() if c.can_stream_resolve()]
    assert tuned, "the shipped table has configs that can stream"
    for cfg in tuned:
        for split in (False, True):
            for flat in (False, True):
                dv = DecodeVariant(cfg, split=split, write_lse=True, k_scale_on_device=False, v_scale_on_device=False,
                                   flat_cache=flat, stream_resolve=True)
                assert decode_variant_name(dv) in streamed, decode_variant_name(dv)


def test_every_tuned_and_default_config_has_physical_id_variants():
    from types import SimpleNamespace

    from cute_dsa.heuristics import default_config
    from cute_dsa.kernel_config import DecodeVariant
    from cute_dsa.variants import decode_variant_name, tuned_configs

    physical = {v.name: v for v in VARIANTS if v.name.endswith("_phys")}
    # Physical ids need no resolve: a plain decode kind, without the resolve's atomics promised.
    # (+pf: the L2 prefetch of the next id window's rows, a promise of its own.)
    assert physical and all(v.kind.removesuffix("+pf") in ("decode", "decode_lg", "decode_lg+pair") for v in physical.values())
    defaults = [default_config(SimpleNamespace(num_heads=h, num_rows=r)) for h in (8, 16, 32, 64) for r in (8, 256)]
    for cfg in tuned_configs() + defaults:
        for split in (False, True):
            for flat in (False, True):
                dv = DecodeVariant(cfg, split=split, write_lse=True, k_scale_on_device=False, v_scale_on_device=False,
                                   flat_cache=flat, physical_ids=True)
                assert decode_variant_name(dv) in physical, decode_variant_name(dv)
