import pytest

from cute_dsa import GLM_5_3, SparseMLAConfig


def test_glm_defaults():
    c = GLM_5_3.validate(block_size=64)
    assert c.kv_lora_rank == 512 and c.qk_rope_head_dim == 0 and c.num_kv_heads == 1
    assert c.scale == pytest.approx(512 ** -0.5)
    assert SparseMLAConfig(index_topk=2048, index_kpool=129).selection_width == 2176


@pytest.mark.parametrize(
    "kw,pattern",
    [
        (dict(kv_lora_rank=576), r"kv_lora_rank=576: expected 512"),
        (dict(qk_rope_head_dim=64), r"qk_rope_head_dim=64: expected 0"),
        (dict(num_kv_heads=2), r"num_kv_heads=2: expected 1"),
        (dict(num_heads=0), r"num_heads=0: expected >= 1"),
        (dict(index_topk=0), r"index_topk=0: expected >= 1"),
        (dict(index_kpool=0), r"index_kpool=0: expected >= 1"),
        (dict(softmax_scale=-2.0), r"softmax_scale=-2.0: expected a finite float > 0"),
    ],
)
def test_refusals(kw, pattern):
    with pytest.raises(ValueError, match=pattern):
        SparseMLAConfig(**kw).validate()


def test_block_size_vs_kpool():
    with pytest.raises(ValueError, match=r"block_size=64: expected a multiple of index_kpool=48"):
        SparseMLAConfig(index_kpool=48).validate(block_size=64)
    SparseMLAConfig(index_kpool=32, softmax_scale=256 ** -0.5).validate(block_size=64)
