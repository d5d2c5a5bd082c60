"""The dense masked oracle against a straightforward per-row float64 loop over the id set."""

import math

import pytest
import torch

from cute_dsa.reference import masked_attention
from cute_dsa.testing import make_inputs


def loop_reference(q, cache, block_table, seq_lens, indices, k_scale, v_scale, softmax_scale):
    rows, heads, dim = q.shape
    num_blocks, bs = cache.shape[0], cache.shape[1]
    lat = cache[..., :512].view(torch.uint8).view(torch.float8_e4m3fn).to(torch.float64)
    out = torch.zeros(rows, heads, dim, dtype=torch.float64)
    lse = torch.full((rows, heads), -math.inf, dtype=torch.float64)
    for r in range(rows):
        n = int(seq_lens[r])
        chosen = set()
        for t in indices[r].tolist():
            if 0 <= t < n and t // bs < block_table.shape[1]:
                blk = int(block_table[r, t // bs])
                if 0 <= blk < num_blocks:
                    chosen.add(t)  # the set is over logical ids
        if not chosen:
            continue
        keys = torch.stack([lat[int(block_table[r, t // bs]), t % bs] for t in sorted(chosen)])
        for h in range(heads):
            s = (keys @ q[r, h].to(torch.float64)) * k_scale * softmax_scale
            m = s.max()
            w = torch.exp(s - m)
            lse[r, h] = m + torch.log(w.sum())
            out[r, h] = (w / w.sum()) @ keys * v_scale
    return out, lse


@pytest.mark.parametrize("seed", range(4))
def test_oracle_matches_loop(seed):
    inp = make_inputs(5, 3, 40, block_size=16, context=100, hole_frac=0.2, dup_frac=0.2, oob_frac=0.1,
                      bad_block_frac=0.15, empty_rows=1, k_scale=0.6, v_scale=1.7, seed=seed)
    scale = 0.05
    ref_o, ref_l = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=scale)
    loop_o, loop_l = loop_reference(*inp.args(), inp.k_scale, inp.v_scale, scale)
    assert torch.allclose(ref_o, loop_o, rtol=1e-10, atol=1e-12)
    assert torch.equal(torch.isinf(ref_l), torch.isinf(loop_l))
    fin = torch.isfinite(ref_l)
    assert torch.allclose(ref_l[fin], loop_l[fin], rtol=1e-10)
    assert torch.isinf(ref_l[-1]).all() and (ref_o[-1] == 0).all()  # the empty row


def test_duplicates_count_once():
    inp = make_inputs(1, 2, 8, block_size=16, context=64, hole_frac=0, dup_frac=0, oob_frac=0, seed=1)
    once, _ = masked_attention(*inp.args())
    inp.indices[0, 4:] = inp.indices[0, :4]
    twice, _ = masked_attention(*inp.args())
    loop_o, _ = loop_reference(*inp.args(), 1.0, 1.0, 512 ** -0.5)
    assert torch.allclose(twice, loop_o, atol=1e-12)
    assert not torch.allclose(once, twice)  # dropping 4 distinct ids changes the answer


def test_default_softmax_scale_is_rank_rsqrt():
    inp = make_inputs(2, 2, 16, block_size=16, context=64, seed=2)
    a, _ = masked_attention(*inp.args())
    b, _ = masked_attention(*inp.args(), softmax_scale=512 ** -0.5)
    assert torch.equal(a, b)


def test_scale_tensors_accepted():
    inp = make_inputs(2, 2, 16, block_size=16, context=64, seed=3)
    a, la = masked_attention(*inp.args(), k_scale=0.5, v_scale=2.0)
    b, lb = masked_attention(*inp.args(), k_scale=torch.tensor([0.5]), v_scale=torch.tensor([2.0]))
    assert torch.equal(a, b) and torch.equal(la, lb)


def test_max_keys_guard():
    inp = make_inputs(1, 1, 4, block_size=16, context=64, min_context=64, seed=4)
    with pytest.raises(ValueError, match=r"more than max_keys=32"):
        masked_attention(*inp.args(), max_keys=32)


def test_float32_dtype():
    inp = make_inputs(2, 4, 32, block_size=16, context=64, seed=5)
    o, l = masked_attention(*inp.args(), dtype=torch.float32)
    assert o.dtype == torch.float32 and l.dtype == torch.float32


def test_physical_ids_select_what_the_logical_ids_select():
    """testing.physical_ids + as_flat_rows (the GPU tests' oracle for physical_indices=True) give
    the same function as the logical ids: duplicates, holes, out-of-range ids and bad blocks."""
    from cute_dsa.testing import as_flat_rows, physical_ids

    inp = make_inputs(4, 8, 300, hole_frac=0.15, dup_frac=0.2, oob_frac=0.05, bad_block_frac=0.1, empty_rows=1, seed=5)
    phys = physical_ids(inp)
    assert all(len(set(r[r >= 0].tolist())) == int((r >= 0).sum()) for r in phys), "distinct per row"
    ref_o, ref_l = masked_attention(*inp.args())
    o, l = masked_attention(*as_flat_rows(inp, phys).args())
    assert (o - ref_o).abs().max().item() < 1e-12
    assert torch.equal(torch.isinf(l), torch.isinf(ref_l))
    assert (l - ref_l)[~torch.isinf(ref_l)].abs().max().item() < 1e-12


def test_several_query_tokens_per_sequence_flatten_to_rows():
    """README's recipe for s_q > 1 (MTP): q and indices flattened, seq_lens and block_table rows
    repeated per token, gives each token the attention over its own selection in its own
    sequence (checked token by token against one-row calls)."""
    batch, s_q, heads = 2, 3, 4
    seqs = make_inputs(batch, heads, 24, block_size=16, context=120, hole_frac=0.2, dup_frac=0.1, seed=7)
    g = torch.Generator().manual_seed(8)
    q = torch.randn(batch, s_q, heads, 512, generator=g).to(torch.bfloat16)
    # Token t of sequence b may select positions up to seq_len - s_q + t (the indexer's causality).
    ids = torch.stack([
        torch.stack([torch.randint(-1, int(seqs.seq_lens[b]) - s_q + t + 1, (24,), generator=g, dtype=torch.int32)
                     for t in range(s_q)]) for b in range(batch)
    ])
    out, lse = masked_attention(q.flatten(0, 1), seqs.kv_cache, seqs.block_table.repeat_interleave(s_q, dim=0),
                                seqs.seq_lens.repeat_interleave(s_q), ids.flatten(0, 1))
    out, lse = out.view(batch, s_q, heads, 512), lse.view(batch, s_q, heads)
    for b in range(batch):
        for t in range(s_q):
            o1, l1 = masked_attention(q[b, t][None], seqs.kv_cache, seqs.block_table[b][None], seqs.seq_lens[b][None],
                                      ids[b, t][None])
            assert torch.equal(out[b, t], o1[0]) and torch.equal(lse[b, t], l1[0])
    assert not torch.equal(out[:, 0], out[:, 1])  # tokens differ: the rows are not collapsed
