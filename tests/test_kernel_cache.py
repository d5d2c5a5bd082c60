"""The persistent kernel cache (kernel_cache.py) and the GPU-free launch specs that `cute-dsa
precompile` fills it from. Compiles for sm_90a without a GPU; loading an entry needs none either."""

import warnings

import pytest

from cute_dsa import compile as kc
from cute_dsa import kernel_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setitem(kernel_cache.stats, "loaded", 0)
    monkeypatch.setitem(kernel_cache.stats, "built", 0)
    return tmp_path


def test_entry_names_are_c_identifiers_that_differ_by_key_and_arch(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    a = kernel_cache.entry_name(("combine", True, 4))
    assert a.startswith("cute_dsa_combine_") and a.isidentifier()
    assert a == kernel_cache.entry_name(("combine", True, 4))
    assert a != kernel_cache.entry_name(("combine", False, 4))
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    assert a != kernel_cache.entry_name(("combine", True, 4))


def test_no_cache_directory_builds_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(kernel_cache.CACHE_ENV, raising=False)
    built = []
    assert kernel_cache.load_or_build(("x",), lambda: built.append(1) or "fn") == "fn"
    assert built == [1] and not list(tmp_path.iterdir())


@pytest.mark.compile
def test_a_compiled_kernel_is_stored_then_loaded_instead_of_compiled(cache):
    key = ("combine", True, 4)
    first = kernel_cache.load_or_build(key, lambda: kc.build_combine(True, 4))
    entry = cache / f"{kernel_cache.entry_name(key)}.o"
    assert entry.is_file() and entry.stat().st_size > 0
    # The entry and its key beside it, no temporary file left behind.
    assert sorted(p.name for p in cache.iterdir()) == sorted([entry.name, entry.with_suffix(".key").name])
    assert kernel_cache.keys_in(cache) == [key]
    assert kernel_cache.stats == {"loaded": 0, "built": 1}

    def must_not_compile():
        raise AssertionError("a cached kernel was compiled again")

    again = kernel_cache.load_or_build(key, must_not_compile)
    assert kernel_cache.stats == {"loaded": 1, "built": 1}
    assert callable(again) and type(again).__name__ == "Function" and first is not again


@pytest.mark.compile
def test_a_damaged_entry_is_compiled_again_and_replaced(cache):
    key = ("combine", False, 4)
    entry = cache / f"{kernel_cache.entry_name(key)}.o"
    entry.write_bytes(b"not an object file")
    with pytest.warns(UserWarning, match="did not load"):
        kernel_cache.load_or_build(key, lambda: kc.build_combine(False, 4))
    assert kernel_cache.stats == {"loaded": 0, "built": 1}
    assert entry.read_bytes()[:4] == b"\x7fELF"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel_cache.load_or_build(key, lambda: pytest.fail("compiled again"))
    assert kernel_cache.stats["loaded"] == 1


def test_an_unwritable_cache_warns_and_still_returns_the_kernel(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(kernel_cache.CACHE_ENV, str(blocker / "cache"))  # below a file: mkdir fails

    class Compiled:
        def export_to_c(self, path, name):
            raise AssertionError("not reached: the directory cannot be made")

    fn = Compiled()
    with pytest.warns(UserWarning, match="could not write"):
        assert kernel_cache.load_or_build(("y",), lambda: fn) is fn


@pytest.mark.compile
def test_launch_spec_needs_no_gpu_and_matches_the_launch_plan():
    import torch

    from cute_dsa.api import launch_plan, launch_spec
    from cute_dsa.bench_inputs import bench_decode_problem
    from cute_dsa.kernel_config import DecodeKernelConfig

    problem = bench_decode_problem(64, 64, 2048)
    assert problem.flat_cache and problem.num_blocks == 64 * 512 and problem.max_blocks == 512
    spec = launch_spec(problem, ("NVIDIA H200", 132), None, None, write_lse=True)
    assert spec.splits >= 1 and spec.variant.write_lse and not spec.variant.physical_ids
    phys = launch_spec(problem, ("NVIDIA H200", 132), None, None, write_lse=True, physical=True)
    assert phys.variant.physical_ids and phys.resolve_slots is None and phys.variant.config == spec.variant.config
    # With an explicit config and split count the plan reads no GPU: it must be the spec's.
    cfg = DecodeKernelConfig()
    plan = launch_plan(problem, torch.device("cpu"), cfg, 4, True)
    forced = launch_spec(problem, None, cfg, 4, True)
    assert (plan.splits, plan.split_len, plan.variant) == (forced.splits, forced.split_len, forced.variant)


@pytest.mark.compile
def test_recorded_keys_rebuild_a_run_s_kernels_into_another_cache(tmp_path, monkeypatch):
    """What `cute-dsa precompile --keys-from` does: every key a run recorded (here a decode variant,
    whose repr nests the frozen configs) compiles again into a fresh cache."""
    from cute_dsa.kernel_config import DecodeKernelConfig, DecodeVariant

    run_dir, fresh = tmp_path / "run", tmp_path / "fresh"
    variant = DecodeVariant(DecodeKernelConfig(chunk_tokens=64, stages=4, gather="ld_global", scores="one"), split=True,
                            write_lse=True, k_scale_on_device=False, v_scale_on_device=False, flat_cache=True)
    keys = [("decode", variant), ("combine", True, 4)]
    run_dir.mkdir()
    for i, key in enumerate(keys):
        (run_dir / f"k{i}.key").write_text(repr(key) + "\n")
    (run_dir / "bad.key").write_text("DecodeVariant(no_such_field=1)\n")
    with pytest.warns(UserWarning, match="ignoring kernel cache key file"):
        assert kernel_cache.keys_in(run_dir) == keys
    monkeypatch.setenv(kernel_cache.CACHE_ENV, str(fresh))
    monkeypatch.setattr(kc, "_cache", {})
    for key in keys:
        kc.kernel_for_key(key)
    assert sorted(p.name for p in fresh.glob("*.o")) == sorted(f"{kernel_cache.entry_name(k)}.o" for k in keys)
    with pytest.raises(ValueError, match="first element"):
        kc.kernel_for_key(("nope", 1))


def test_precompile_adds_each_forced_config_to_the_tuned_grid(tmp_path, monkeypatch, capsys):
    """`precompile --config TEXT` builds, per grid shape, the tuned choice and that forced config, as
    `bench --config TEXT` launches them (here recorded instead of compiled)."""
    import argparse

    import cute_dsa.api as api
    from cute_dsa import precompile

    seen = []
    monkeypatch.setattr(api, "spec_kernels", seen.append)
    # run() sets both in os.environ: registered here so they are restored after the test.
    monkeypatch.delenv(kernel_cache.CACHE_ENV, raising=False)
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    parser = argparse.ArgumentParser()
    precompile.add_parser(parser.add_subparsers())
    args = parser.parse_args(["precompile", "--cache-dir", str(tmp_path), "--batch", "8", "--heads", "64", "--width", "2048",
                              "--no-physical", "--config", "chunk_tokens=16,stages=6,scores=split"])
    assert precompile.run(args) == 0
    configs = [s.variant.config for s in seen]
    assert len(seen) == 2 and len(set(configs)) == 2
    assert any((c.chunk_tokens, c.stages, c.scores) == (16, 6, "split") for c in configs)
    assert "2 launch specs" in capsys.readouterr().out
