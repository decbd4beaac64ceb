"""The ``rope_key_norm`` block key: a norm over MLA's shared rotary key part (Dots 3 Note,
transformers 5.24 ``models/dots3_note/modeling_dots3_note.py``: ``k_rope_only_layernorm``)."""

from __future__ import annotations

from costcalc.macs import pair_width
from costcalc.memory import kv_width
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors
from tests.test_indexer import MLA


def test_rope_key_norm_adds_one_weight_of_the_rope_width() -> None:
    plain = ModelSpec.model_validate({**MLA, "norm": "rmsnorm"})
    spec = ModelSpec.model_validate({**MLA, "norm": "rmsnorm", "rope_key_norm": True})
    added = {t.name: t.shape for t in mixer_tensors(spec)}.items() - {
        t.name: t.shape for t in mixer_tensors(plain)
    }.items()
    assert dict(added) == {"attn.k_rope_norm.weight": (4,)}
    # a norm: no MACs per pair, nothing more cached
    assert pair_width(spec) == pair_width(plain)
    assert kv_width(spec) == kv_width(plain)


def test_rope_key_norm_belongs_to_mla_blocks() -> None:
    data = {k: v for k, v in MLA.items() if "lora" not in k and "head_dim" not in k}
    data.update(mixer="attention", rope_key_norm=True)
    problems = structural_problems(ModelSpec.model_construct(**data))
    assert ("rope_key_norm", "applies to mla blocks; this block's mixer is attention") in problems
