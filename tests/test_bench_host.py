"""Host-side pieces of `cute-dsa bench` on the CPU: the problem builder and the torch peer."""

import torch

from cute_dsa.bench import Row, format_table, SOFTMAX_SCALE
from cute_dsa.bench_inputs import FLASHMLA_TOKEN_BYTES, make_bench_problem
from cute_dsa.peers import flashmla_padded_heads, setup_torch
from cute_dsa.reference import masked_attention
from cute_dsa.testing import relative_error


def test_bench_problem_layout():
    p = make_bench_problem(3, 8, 96, context=1000, page=64, scale=0.25, device="cpu")
    inp = p.inputs
    assert inp.kv_cache.shape[-1] == FLASHMLA_TOKEN_BYTES
    # FlashMLA's four per-token fp32 scales follow the latent and equal the per-tensor scale.
    scales = inp.kv_cache.view(torch.uint8)[..., 512:].contiguous().view(torch.float32)
    assert torch.all(scales == 0.25)
    ids = inp.indices
    for r in range(3):
        valid = ids[r][ids[r] >= 0]
        assert valid.unique().numel() == valid.numel(), "selections hold distinct ids"
        assert (valid < 1000).all()
        # holes only at the tail
        n = valid.numel()
        assert (ids[r, n:] == -1).all() and n >= 96 - 96 // 16
        page = inp.block_table[r, (valid // 64).long()]
        assert torch.equal(p.phys[r, :n], page * 64 + valid % 64)
        assert (p.phys[r, n:] == -1).all()
    assert p.valid_tokens == int((ids >= 0).sum())


def test_torch_peer_matches_oracle():
    p = make_bench_problem(2, 4, 80, context=700, page=16, scale=0.5, device="cpu")
    inp = p.inputs
    out, lse = setup_torch(p, SOFTMAX_SCALE)()
    ref, ref_lse = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE)
    assert relative_error(out, ref) < 1e-2
    assert (lse.double() - ref_lse).abs().max() < 1e-2


def test_flashmla_head_padding_and_table():
    assert [flashmla_padded_heads(h) for h in (1, 8, 64, 65, 128)] == [64, 64, 64, 128, 128]
    row = Row(1, 8, 2048, ours_us=10.0, ours_graph_us=9.0, ours_host_us=30.0, ours_err=1e-3, roofline_us=5.0, tbps=1.0,
              tflops=2.0, roof_frac=0.5, flashmla_us=20.0, ratio=2.0)
    table = format_table([row])
    assert "FlashMLA µs" in table and "2.00" in table and "host µs" in table and table.count("\n") == 2
