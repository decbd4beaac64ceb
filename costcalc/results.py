"""Result objects: what a command computed, before it is rendered as a table or as JSON.

``to_dict`` is the JSON contract (docs/json.md): counts and bytes are JSON integers; ratios are
exact objects (:func:`costcalc.render.ratio_dict`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from costcalc.loaders import LoadedModel
from costcalc.params import OPTIONAL_PARTS, ParamReport, param_report
from costcalc.render import ratio_dict
from costcalc.units import DTYPES, dtype_bytes

if TYPE_CHECKING:
    from costcalc.checkpoint_report import CheckpointView
    from costcalc.compute import ComputeResult, Workload
    from costcalc.stored_weights import StoredBytes


def model_header(model: LoadedModel, full_model: bool = False) -> dict[str, Any]:
    """The part of every per-model JSON record that says which model it is: ``model`` holds
    the fields that differ from their defaults (every field, resolved, with ``full_model``)."""
    return {
        "name": model.name,
        "origin": model.origin,
        "format": model.format,
        "source": model.source,
        "model": model.spec.resolved() if full_model else model.spec.differing(),
        "weight_format": model.weight_format,
        "notes": list(model.notes),
    }


def config_notes(model: LoadedModel) -> list[str]:
    """How ``model``'s config was read where the file does not say it (``LoadedModel.notes``:
    a value transformers overrides, a convention followed), as every table prints them, each
    after the model's name; a JSON record gives them in :func:`model_header`'s ``notes``."""
    return [f"{model.name}: {note}" for note in model.notes]


class ParamsResult(NamedTuple):
    """Parameter counts and weight bytes of one model, and its compute cost when asked."""

    model: LoadedModel
    parameters: ParamReport
    weight_bytes: dict[str, int]
    compute: ComputeResult | None = None
    checkpoint: CheckpointView | None = None

    def stored(self) -> StoredBytes | None:
        """The checkpoint's byte count beside the weights as it stores them (the format of its
        quantization_config, or the one float dtype of its headers)."""
        from costcalc.stored_weights import stored_bytes

        for dtype, size in self.weight_bytes.items():
            found = stored_bytes(self.model, dtype, size)
            if found is not None:
                return found
        return None

    def stored_notes(self) -> list[str]:
        """Where the stored format comes from, and the checkpoint's bytes beside it."""
        from costcalc.stored_weights import weights_note

        stored, notes = self.stored(), []
        if self.model.weight_format is not None:
            notes.append(weights_note(self.model, self.model.weight_format) or "")
        if stored is not None:
            notes.append(stored.sentence())
        return [note for note in notes if note]

    def to_dict(self, full_model: bool = False) -> dict[str, Any]:
        """The JSON record (docs/json.md): ``model`` as :func:`model_header` gives it, and the
        parameters without the parts this model does not have (:data:`OPTIONAL_PARTS`, a
        stacks' ``shared`` blocks where no stack has them)."""
        parameters: dict[str, Any] = {
            key: value
            for key, value in self.parameters._asdict().items()
            if key not in OPTIONAL_PARTS or value
        }
        shared = any(stack.shared for stack in self.parameters.stacks)
        parameters["stacks"] = [
            {key: value for key, value in stack._asdict().items() if key != "shared" or shared}
            for stack in self.parameters.stacks
        ]
        parameters["tying_saving"] = self.parameters.tying_saving
        parameters["untied_increase"] = ratio_dict(self.parameters.untied_increase)
        parameters["tying_share"] = ratio_dict(self.parameters.tying_share)
        parameters["non_embedding"] = self.parameters.non_embedding
        parameters["non_embedding_kaplan"] = self.parameters.non_embedding_kaplan
        parameters["active_non_embedding"] = self.parameters.active_non_embedding
        stored = self.stored()
        data = {
            **model_header(self.model, full_model),
            "parameters": parameters,
            "bytes": self.weight_bytes,
            "checkpoint_bytes": None if stored is None else stored.to_dict(),
        }
        if self.checkpoint is not None:
            data["checkpoint"] = self.checkpoint.to_dict()
        return data if self.compute is None else {**data, **self.compute.to_dict()}


def params_result(
    model: LoadedModel, workload: Workload | None = None, formats: tuple[str, ...] = ()
) -> ParamsResult:
    """Count the parameters of ``model``, the bytes of its weights in every dtype (raw) and in
    each quantized format of ``formats`` (with their metadata) and, given a workload, its MACs."""
    report = param_report(model.spec)
    weights = {dtype: dtype_bytes(report.total, dtype) for dtype in DTYPES}
    stored = () if model.weight_format is None else (model.weight_format,)
    if formats or stored:
        from costcalc.memory import weight_bytes

        wanted = dict.fromkeys((*formats, *stored))
        weights.update({fmt: weight_bytes(model.spec, fmt) for fmt in wanted if fmt not in weights})
    compute = None
    if workload is not None:
        from costcalc.compute import compute_result

        compute = compute_result(model.spec, workload)
    view = None
    if model.checkpoint is not None:
        from costcalc.checkpoint_report import checkpoint_view

        view = checkpoint_view(model.name, model.checkpoint, model.spec)
    return ParamsResult(
        model=model,
        parameters=report,
        weight_bytes=weights,
        compute=compute,
        checkpoint=view,
    )


def header_only_record(view: CheckpointView) -> dict[str, Any]:
    """The JSON record of a checkpoint costcalc has no formula for."""
    return {
        "name": view.name,
        "origin": view.checkpoint.source,
        "format": "safetensors",
        "checkpoint": view.to_dict(),
    }
