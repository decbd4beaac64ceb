"""An LM head with rows of its own (``head_rows``): Apertus 1.5 prunes its head to the text ids
(transformers 5.24 ``models/apertus1p5``: ``lm_head = nn.Linear(D, output_vocab_size)`` beside an
``embed_tokens`` of ``vocab_size`` rows; the logits are as wide as the head)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from costcalc.macs import lm_head_macs_per_token
from costcalc.memory import logit_elements
from costcalc.parallel import ParallelPlan, padded_vocab, rank_tensors
from costcalc.params import lm_head_params, param_report, total_params, untied_total_params
from costcalc.spec import ModelSpec
from costcalc.tensors import model_tensors
from tests.hf_helpers import spec_of

MODEL = {
    "vocab_size": 1000,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 32,
    "tie_embeddings": False,
}


def test_pruned_head_has_its_own_rows() -> None:
    full = ModelSpec.model_validate(MODEL)
    pruned = ModelSpec.model_validate({**MODEL, "head_rows": 600, "lm_head_bias": True})
    shapes = {t.name: t.shape for t in model_tensors(pruned)}
    assert shapes["embed_tokens.weight"] == (1000, 64)
    assert shapes["lm_head.weight"] == (600, 64)
    assert shapes["lm_head.bias"] == (600,)
    assert lm_head_params(pruned) == 600 * 64 + 600
    assert total_params(full) - total_params(pruned) == 400 * 64 - 600
    assert untied_total_params(pruned) == total_params(pruned)
    # tying would drop the head's own matrix (the table serves, with its 1,000 rows)
    assert param_report(pruned).tying_saving == 600 * 64
    assert param_report(full).tying_saving == 1000 * 64
    assert lm_head_macs_per_token(pruned) == 600 * 64
    assert logit_elements(pruned, 2, 8) == 2 * 8 * 600
    assert logit_elements(full, 2, 8) == 2 * 8 * 1000


def test_head_rows_as_the_table_changes_nothing() -> None:
    full = ModelSpec.model_validate(MODEL)
    same = ModelSpec.model_validate({**MODEL, "head_rows": 1000})
    assert model_tensors(full) == model_tensors(same)
    assert ModelSpec.model_validate({**MODEL, "tie_embeddings": True, "head_rows": 1000})


def test_tied_head_is_the_table() -> None:
    with pytest.raises(ValidationError, match="a tied LM head is the token table"):
        ModelSpec.model_validate({**MODEL, "tie_embeddings": True, "head_rows": 600})


def test_tensor_parallel_pads_head_and_table_apart() -> None:
    pruned = ModelSpec.model_validate({**MODEL, "head_rows": 600})
    plan = ParallelPlan(gpus=2, tp=2)
    assert (padded_vocab(pruned, 2), padded_vocab(pruned, 2, head=True)) == (1024, 768)
    shapes = {t.name: t.shape for t in rank_tensors(pruned, plan, 0)}
    assert shapes["embed_tokens.weight"] == (512, 64)
    assert shapes["lm_head.weight"] == (384, 64)


def test_apertus_1p5_head_rows_from_output_vocab_size(tmp_path: Path) -> None:
    pruned = spec_of(tmp_path, "apertus1p5-defaults")
    assert (pruned.vocab_rows, pruned.output_rows) == (266752, 131272)
    # tied, transformers makes the head the table: output_vocab_size has no effect
    tied = spec_of(tmp_path, "apertus1p5-defaults", tie_word_embeddings=True)
    assert (tied.head_rows, tied.output_rows) == (None, 266752)
