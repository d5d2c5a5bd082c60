"""The scratch a launch needs, carved from a caller's workspace (CPU: plans compile for sm_90a)."""

import dataclasses

import pytest
import torch

from cute_dsa.workspace import ALIGN, scratch, scratch_parts, workspace_bytes


def _plans():
    from cute_dsa.api import launch_plan
    from cute_dsa.checks import DecodeProblem
    from cute_dsa.compile import ensure_arch_for_cpu_compile
    from cute_dsa.kernel_config import DecodeKernelConfig

    ensure_arch_for_cpu_compile()
    # The problem and splits of test_checks' plan tests: the same variants, compiled once per session.
    problem = DecodeProblem(2, 64, 2176, num_blocks=10, block_size=64, token_bytes=528, k_scale_on_device=False,
                            v_scale_on_device=False, flat_cache=True, max_blocks=1024)
    cfg, cpu = DecodeKernelConfig(), torch.device("cpu")
    return {
        "launch": launch_plan(problem, cpu, cfg, 4, True, fuse_resolve=False),
        "slice": launch_plan(problem, cpu, cfg, 17, True, fuse_resolve="slice"),
        "stream": launch_plan(problem, cpu, cfg, 5, True, fuse_resolve="stream"),
        "physical": launch_plan(problem, cpu, cfg, 4, True, physical=True),
        "one": launch_plan(problem, cpu, cfg, 1, True),
        "one_physical": launch_plan(problem, cpu, cfg, 1, True, physical=True),
    }


def _parts(plan, rows, heads, width, write_lse=True):
    return scratch_parts(dataclasses.replace(plan.variant, write_lse=write_lse), plan.splits, rows, heads, width)


def test_scratch_parts_follow_the_plan():
    p = _plans()
    rows, heads, width = 2, 64, 2176
    assert all(plan.scratch == _parts(plan, rows, heads, width) for plan in p.values())  # computed once per plan
    names = {k: [part.name for part in plan.scratch] for k, plan in p.items()}
    assert p["launch"].resolve is not None and p["slice"].variant.fused_resolve and p["stream"].variant.stream_resolve
    assert names == {
        "launch": ["phys", "o_part", "lse_part"],
        "slice": ["phys", "o_part", "lse_part"],  # the decode writes its slices' rows into phys
        "stream": ["o_part", "lse_part"],  # rows in shared memory
        "physical": ["o_part", "lse_part"],  # the caller's ids are the rows
        "one": ["phys"],
        "one_physical": [],
    }
    # Without a wanted LSE an unsplit launch still needs the kernel's lse operand; a split one
    # uses a row of its partial LSE.
    assert [q.name for q in _parts(p["one_physical"], rows, heads, width, False)] == ["lse"]
    assert [q.name for q in _parts(p["physical"], rows, heads, width, False)] == ["o_part", "lse_part"]
    parts = p["launch"].scratch
    sizes = [q.nbytes for q in parts]
    assert sizes == [rows * width * 4, rows * 4 * heads * 512 * 4, rows * 4 * heads * 4]
    rounded = [-(-n // ALIGN) * ALIGN for n in sizes]
    assert [q.offset for q in parts] == [0, rounded[0], rounded[0] + rounded[1]]
    assert workspace_bytes(parts) == sum(rounded)
    assert workspace_bytes(()) == 0


def test_scratch_carves_aligned_disjoint_views():
    parts = _parts(_plans()["launch"], 3, 8, 100)  # phys 1200 bytes: not a multiple of ALIGN
    need = workspace_bytes(parts)
    big = torch.zeros(need + 64, dtype=torch.uint8)
    ws = big[16: 16 + need]  # 16-byte aligned, not 256
    views = scratch(parts, ws, torch.device("cpu"))
    assert list(views) == ["phys", "o_part", "lse_part"]
    spans = []
    for part in parts:
        v = views[part.name]
        assert v.shape == part.shape and v.dtype == part.dtype and v.is_contiguous()
        assert (v.data_ptr() - ws.data_ptr()) % ALIGN == 0
        assert v.untyped_storage().data_ptr() == big.untyped_storage().data_ptr()  # a view, no copy
        spans.append((v.data_ptr(), v.data_ptr() + part.nbytes))
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert a1 <= b0
    assert spans[-1][1] <= ws.data_ptr() + need
    views["o_part"].fill_(1.0)
    views["phys"].fill_(-1)
    assert (views["lse_part"] == 0).all()  # writing one part leaves the next alone
    assert (big[:16] == 0).all() and (big[16 + need:] == 0).all()  # nothing outside the workspace
    assert (ws[: parts[0].nbytes] == 0xFF).all()  # phys = -1 landed at the workspace's start

    fresh = scratch(parts, None, torch.device("cpu"))
    assert {k: (t.shape, t.dtype) for k, t in fresh.items()} == {p.name: (p.shape, p.dtype) for p in parts}


def test_workspace_is_checked():
    parts = _plans()["launch"].scratch
    need = workspace_bytes(parts)
    cpu = torch.device("cpu")
    with pytest.raises(ValueError, match=rf"workspace.numel\(\)={need - 1}: expected >= {need} bytes for this launch "
                                         r"\(phys \(2, 2176\), o_part \(2, 4, 64, 512\), lse_part \(2, 4, 64\); "
                                         r"cute_dsa.decode_workspace_bytes gives it\)"):
        scratch(parts, torch.empty(need - 1, dtype=torch.uint8), cpu)
    with pytest.raises(TypeError, match=r"workspace.dtype=torch.float32: expected torch.uint8"):
        scratch(parts, torch.empty(need, dtype=torch.float32), cpu)
    with pytest.raises(ValueError, match=r"workspace.shape=\(2, \d+\): expected 1 dimensions"):
        scratch(parts, torch.empty(2, need, dtype=torch.uint8), cpu)
    with pytest.raises(ValueError, match=r"workspace.stride\(\)=\(2,\): expected a contiguous tensor"):
        scratch(parts, torch.empty(2 * need, dtype=torch.uint8)[::2], cpu)
    with pytest.raises(ValueError, match=r"workspace.data_ptr\(\)=0x[0-9a-f]+: expected 16-byte alignment"):
        scratch(parts, torch.empty(need + 16, dtype=torch.uint8)[1:], cpu)
    with pytest.raises(ValueError, match=r"workspace.device=meta: expected cpu \(same as q\)"):
        scratch(parts, torch.empty(need, dtype=torch.uint8, device="meta"), cpu)
    with pytest.raises(TypeError, match=r"workspace: expected a torch.Tensor, got bytearray"):
        scratch(parts, bytearray(need), cpu)
