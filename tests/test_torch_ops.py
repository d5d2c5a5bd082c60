"""dsa_decode as torch custom ops (torch.ops.cute_dsa.*): traced without a graph break, fake
shapes for the compiler, the adapter's own errors on bad input. The GPU test compares a
torch.compile'd call with a plain one."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import cute_dsa  # noqa: F401  (registers the ops)
from cute_dsa.testing import make_inputs

ARGS = (0.5, 1.0, None, None, -1.0, 1, False)  # k_scale, v_scale, k/v scale tensors, softmax_scale (default), kpool, physical


class _Model(torch.nn.Module):
    def forward(self, q, cache, table, lens, ids):
        out, lse = torch.ops.cute_dsa.dsa_decode(q, cache, table, lens, ids, *ARGS)
        return out.float() * 2, lse


def _fake_args(rows=3, heads=16, width=100):
    q = torch.empty(rows, heads, 512, dtype=torch.bfloat16, device="cuda")
    cache = torch.empty(10, 64, 528, dtype=torch.float8_e4m3fn, device="cuda")
    table = torch.empty(rows, 5, dtype=torch.int32, device="cuda")
    lens = torch.empty(rows, dtype=torch.int32, device="cuda")
    ids = torch.empty(rows, width, dtype=torch.int32, device="cuda")
    return q, cache, table, lens, ids


def test_export_traces_the_op_without_a_graph_break():
    inp = make_inputs(3, 16, 100, seed=0)
    rows = torch.export.Dim("rows", min=2, max=1024)
    ep = torch.export.export(_Model(), inp.args(), dynamic_shapes=({0: rows}, None, {0: rows}, {0: rows}, {0: rows}))
    calls = [n for n in ep.graph.nodes if n.op == "call_function" and "cute_dsa" in str(n.target)]
    assert [str(n.target) for n in calls] == ["cute_dsa.dsa_decode.default"]
    out, lse = calls[0].meta["val"]  # the fake implementation's shapes, with the row count symbolic
    assert isinstance(out.shape[0], torch.SymInt) and tuple(out.shape[1:]) == (16, 512) and out.dtype == torch.bfloat16
    assert lse.shape[0] is out.shape[0] or str(lse.shape[0]) == str(out.shape[0])
    assert lse.shape[1] == 16 and lse.dtype == torch.float32


def test_fake_shapes_on_cuda_without_a_gpu():
    with FakeTensorMode():
        args = _fake_args(rows=5, heads=24)
        out, lse = torch.ops.cute_dsa.dsa_decode(*args, *ARGS)
        assert out.shape == (5, 24, 512) and out.dtype == torch.bfloat16 and out.device.type == "cuda"
        assert lse.shape == (5, 24) and lse.dtype == torch.float32
        o = torch.empty(5, 24, 512, dtype=torch.bfloat16, device="cuda")
        l = torch.empty(5, 24, dtype=torch.float32, device="cuda")
        assert torch.ops.cute_dsa.dsa_decode_out(*args, *ARGS, o, l, None) is None
        ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
        assert torch.ops.cute_dsa.dsa_decode_out(*args, *ARGS, o, l, workspace=ws) is None


def test_cpu_call_reaches_the_adapter_checks():
    inp = make_inputs(2, 8, 16, block_size=16, context=64, seed=0)
    with pytest.raises(ValueError, match=r"q\.device=cpu: expected a CUDA tensor"):
        torch.ops.cute_dsa.dsa_decode(*inp.args(), *ARGS)
    out = torch.empty(2, 8, 512, dtype=torch.bfloat16)
    lse = torch.empty(2, 8, dtype=torch.float32)
    # The mutating op passes its ADInplaceOrView kernel (torch 2.11 raised IndexError there when
    # an optional mutable argument was left out) before the adapter refuses the CPU tensors.
    with pytest.raises(ValueError, match=r"q\.device=cpu: expected a CUDA tensor"):
        torch.ops.cute_dsa.dsa_decode_out(*inp.args(), *ARGS, out, lse, None)
    bad = torch.zeros(2, 8, 256, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"q\.shape\[2\] \(kv_lora_rank\)=256: expected 512"):
        torch.ops.cute_dsa.dsa_decode(bad, *inp.args()[1:], *ARGS)


@pytest.mark.gpu
def test_compiled_model_matches_the_plain_call():
    inp = make_inputs(4, 64, 2048, seed=9, device="cuda", k_scale=0.7)
    ks = torch.tensor([0.7], dtype=torch.float32, device="cuda")
    ref_o, ref_l = cute_dsa.dsa_decode(*inp.args(), k_scale=ks)

    def f(q, cache, table, lens, ids):
        return torch.ops.cute_dsa.dsa_decode(q, cache, table, lens, ids, 1.0, 1.0, ks, None, -1.0, 1, False)

    o, l = torch.compile(f, fullgraph=True)(*inp.args())
    assert torch.equal(o, ref_o) and torch.equal(l, ref_l)
    out = torch.full_like(ref_o, float("nan"))
    lse = torch.full_like(ref_l, float("nan"))
    torch.ops.cute_dsa.dsa_decode_out(*inp.args(), 1.0, 1.0, ks, None, -1.0, 1, False, out, lse, None)
    assert torch.equal(out, ref_o) and torch.equal(lse, ref_l)
    ws = torch.empty(cute_dsa.decode_workspace_bytes(*inp.args(), k_scale=ks), dtype=torch.uint8, device="cuda")
    out.fill_(float("nan"))
    torch.ops.cute_dsa.dsa_decode_out(*inp.args(), 1.0, 1.0, ks, None, -1.0, 1, False, out, lse, ws)
    assert torch.equal(out, ref_o) and torch.equal(lse, ref_l)
