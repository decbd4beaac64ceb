"""What a block adds to its residual path: several residual streams (DeepSeek-V4's and HY V4's
hyper-connections, Qwen4-Exp's gated low-rank ones, Gemma 3n's AltUp) and LAuReL's low-rank
branch, with the products the streams cost beyond their weight matrices."""

from __future__ import annotations

from costcalc.anatomy.tensor import Block, Part, Tensor, linear, norm


def hyper_connection_tensors(spec: Block, name: str, part: Part) -> list[Tensor]:
    """One hyper-connection over n = ``residual_streams`` copies of the residual stream
    (DeepSeek-V4's ``DeepseekV4HyperConnection``): ``fn`` (2 + n) n x n D (a matmul of the
    flattened streams giving n collapse, n expand and n x n mixing weights), ``base``
    (2 + n) n, ``scale`` (3); without ``stream_mixing`` (HY V4's ``HYV4HyperConnection``)
    ``fn`` 2 n x n D, ``base`` 2 n, ``scale`` (2); none with one stream."""
    n = spec.residual_streams
    if n == 1:
        return []
    if spec.stream_rank is not None:
        return low_rank_stream_tensors(spec, name, part, inject=True)
    if spec.stream_mixing:
        return _stream_weights(spec, name, part, (2 + n) * n, 3)
    return _stream_weights(spec, name, part, 2 * n, 2)


def low_rank_stream_tensors(spec: Block, name: str, part: Part, inject: bool) -> list[Tensor]:
    """A gated low-rank hyper-connection of rank r = ``stream_rank`` over n streams of D
    (Qwen4-Exp's ``Qwen4ExpTextGatedResidual``): ``hc_norm`` (n D), ``input_mix_weight_down``
    r x n D, ``input_mix_weight_up`` n D x r and, with ``inject``, ``block_inject_weight``
    n x n D."""
    nD, r = spec.residual_streams * spec.d_model, spec.stream_rank or 0
    tensors = [
        *norm(spec, f"{name}.hc_norm", nD, part),
        Tensor(f"{name}.input_mix_weight_down.weight", (r, nD), part, "matmul"),
        Tensor(f"{name}.input_mix_weight_up.weight", (nD, r), part, "matmul"),
    ]
    if inject:
        n = spec.residual_streams
        tensors.append(Tensor(f"{name}.block_inject_weight.weight", (n, nD), part, "matmul"))
    return tensors


def stream_collapse_tensors(spec: Block) -> list[Tensor]:
    """The last collapse of n ``residual_streams`` into one before the final norm
    (``DeepseekV4HyperHead``): ``hc_fn`` n x n D, ``hc_base`` n, ``hc_scale`` 1; with
    ``stream_rank`` a low-rank one without injection (``hyper_connection_mixer``); none with one
    stream or when it is their mean (``stream_collapse``, GLM-5.3-Flash's)."""
    n = spec.residual_streams
    if n == 1 or spec.stream_collapse == "mean":
        return []
    if spec.stream_rank is not None:
        return low_rank_stream_tensors(spec, "hyper_connection_mixer", "model", inject=False)
    return _stream_weights(spec, "hc_head", "model", n, 1)


def _stream_weights(spec: Block, name: str, part: Part, outputs: int, scales: int) -> list[Tensor]:
    """Weights computed from the flattened streams: a matrix outputs x n D, a bias, scales."""
    n = spec.residual_streams
    return [
        Tensor(f"{name}.fn", (outputs, n * spec.d_model), part, "matmul"),
        Tensor(f"{name}.base", (outputs,), part),
        Tensor(f"{name}.scale", (scales,), part),
    ]


def altup_tensors(spec: Block) -> list[Tensor]:
    """A block's AltUp over n = ``altup_streams`` streams (``Gemma3nTextAltUp``):
    ``modality_router`` n x D, ``prediction_coefs`` n^2 x n, ``correction_coefs`` n x n and
    ``correct_output_scale`` (D); its ``router_norm`` (D) is among the block's norms. None
    without AltUp."""
    n = spec.altup_streams
    if n is None:
        return []
    return [
        Tensor("altup.modality_router.weight", (n, spec.d_model), "mixer", "matmul"),
        Tensor("altup.prediction_coefs.weight", (n * n, n), "mixer", "matmul"),
        Tensor("altup.correction_coefs.weight", (n, n), "mixer", "matmul"),
        Tensor("altup.correct_output_scale", (spec.d_model,), "mixer"),
    ]


def altup_projection_tensors(spec: Block) -> list[Tensor]:
    """AltUp's streams at the model level (``Gemma3nTextModel``): ``altup_projections.i``
    (i < n - 1, D x D each: the embedding into each further stream) and
    ``altup_unembed_projections.i`` (each stream back before the final norm), modules of their
    own in a list; none without AltUp or with one stream."""
    n, D = spec.altup_streams or 1, spec.d_model
    return [
        Tensor(f"altup_{name}projections.{i}.weight", (D, D), "model", "matmul")
        for name in ("", "unembed_")
        for i in range(n - 1)
    ]


def laurel_tensors(spec: Block) -> list[Tensor]:
    """LAuReL's low-rank path (``Gemma3nTextLaurelBlock``): ``linear_left`` D -> r and
    ``linear_right`` r -> D; its ``post_laurel_norm`` (D) is among the block's norms."""
    r = spec.laurel_rank
    if r is None:
        return []
    return [
        *linear("laurel.linear_left", r, spec.d_model, False, "mixer"),
        *linear("laurel.linear_right", spec.d_model, r, False, "mixer"),
    ]


def stream_mixing_macs(spec: Block) -> int:
    """Products one block spends mixing its streams, one token, beyond its weight matrices:
    hyper-connections mix the n ``residual_streams`` twice (n x n by n x D: 2 n^2 D; none
    without ``stream_mixing`` or with ``stream_rank``); AltUp mixes its n ``altup_streams``
    once (n x n by D x n: n^2 D) and runs its router a second time (n D). 0 with one stream and
    no AltUp."""
    n, D, m = spec.residual_streams, spec.d_model, spec.altup_streams
    hyper = 2 * n * n * D if n > 1 and spec.stream_mixing and spec.stream_rank is None else 0
    return hyper + (0 if m is None else m * m * D + m * D)


def residual_measured(spec: Block) -> bool:
    """Whether what the block adds to its residual path was measured for backward
    (:mod:`costcalc.activations`): nothing, one residual stream and no AltUp; several streams
    and AltUp were not."""
    return spec.residual_streams == 1 and spec.altup_streams is None
