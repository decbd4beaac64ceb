"""What ``costcalc lora`` computed for one model, and the checked inputs shared by the CLI and
the Python API (docs/lora.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costcalc.errors import UsageError
from costcalc.loaders import LoadedModel
from costcalc.lora import LoraConfig, LoraReport, family_names, lora_report
from costcalc.lora_memory import (
    LoraMemory,
    LoraTraining,
    default_adapter_dtype,
    lora_memory,
    lora_training,
    memory_dict,
)
from costcalc.lora_parallel import lora_rank_memory
from costcalc.memory import DEFAULT_ATTENTION
from costcalc.option_names import option
from costcalc.parallel import ParallelPlan, optional_plan
from costcalc.results import model_header


@dataclass(frozen=True)
class LoraResult:
    """One model's LoRA count and, with training, its memory (one GPU's under a plan), judged
    against ``capacity`` bytes when one is given."""

    model: LoadedModel
    report: LoraReport
    memory: LoraMemory | None = None
    capacity: int | None = None

    @property
    def headroom(self) -> int | None:
        """capacity - total bytes; None without training memory or a capacity."""
        if self.memory is None or self.capacity is None:
            return None
        return self.capacity - self.memory.bytes_total

    @property
    def fits(self) -> bool | None:
        headroom = self.headroom
        return None if headroom is None else headroom >= 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            **model_header(self.model),
            "family": self.model.family,
            **self.report.to_dict(),
        }
        data["memory"] = None if self.memory is None else memory_dict(self.memory)
        headroom = self.headroom
        if headroom is not None:
            data["memory"]["fits"] = {
                "capacity_bytes": self.capacity,
                "fits": headroom >= 0,
                "headroom_bytes": max(headroom, 0),
                "shortfall_bytes": max(-headroom, 0),
            }
        return data


def lora_inputs(
    train: bool, given: dict[str, Any]
) -> tuple[LoraTraining | None, ParallelPlan | None]:
    """The checked training setup and parallel plan of ``given`` (option name -> value, the
    CLI's names): any of them without ``train`` is a UsageError naming them as the caller
    writes them."""
    if not train:
        named = ", ".join(option(name) for name, value in given.items() if value is not None)
        if named:
            raise UsageError(f"{named} applies to training memory; add {option('--train')}")
        return None, None
    g = given
    plan = optional_plan(
        g["--gpus"], g["--zero"], g["--fsdp"], g["--node-gpus"], None, None, False, None, None, None
    )
    base = g["--base-dtype"] or "bf16"
    training = lora_training(
        base,
        g["--double-quant"],
        g["--adapter-dtype"] or default_adapter_dtype(base, plan),
        g["--optimizer"] or "adamw",
        g["--batch"] or 1,
        g["--length"],
        g["--recompute"] or "none",
        g["--attention"] or DEFAULT_ATTENTION,
    )
    return training, plan


def lora_result(
    model: LoadedModel,
    config: LoraConfig,
    training: LoraTraining | None = None,
    plan: ParallelPlan | None = None,
    capacity: int | None = None,
) -> LoraResult:
    """``config``'s adapters on ``model`` and, with ``training``, their training memory (one
    GPU's under ``plan``)."""
    report = lora_report(model.spec, model.family, config)
    if training is None:
        return LoraResult(model, report, None, capacity)
    names = family_names(model.family)
    memory = lora_memory(model.spec, names, report, training)
    if plan is not None:
        memory = lora_rank_memory(model.spec, names, report, memory, plan)
    return LoraResult(model, report, memory, capacity)
