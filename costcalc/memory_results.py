"""What ``costcalc memory`` computed for one model, and its JSON form (docs/memory.md).

Bytes and elements are JSON integers. Components that do not apply (gradients for inference, the
KV cache for training) are present with 0 bytes, so every key of the contract always exists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from costcalc.activations import activation_formula, activation_source, exact, terms_dict
from costcalc.engines.dispatch import engine_report
from costcalc.errors import UsageError
from costcalc.gpus import Capacity
from costcalc.loaders import LoadedModel
from costcalc.memory import (
    LOGITS_SOURCE,
    LOSS_DTYPE,
    MASTER_DTYPE,
    OPTIMIZER_SOURCES,
    STEP_DTYPE,
    MemoryReport,
    MemorySetup,
)
from costcalc.option_names import option
from costcalc.results import model_header
from costcalc.spec import ModelSpec
from costcalc.weight_format import describe_format, weight_label

if TYPE_CHECKING:  # parallel plans, serving layouts and stored bytes: imported where used
    from costcalc.engines.vllm_shards import ServingPlan
    from costcalc.parallel import ParallelPlan
    from costcalc.stored_weights import StoredBytes


@dataclass(frozen=True)
class Component:
    """One row of the memory breakdown."""

    key: str
    label: str
    bytes: int
    elements: int | None
    dtype: str | None
    estimate: bool = False


@dataclass(frozen=True)
class MemoryResult:
    """The memory of one model, and whether it fits in ``capacity`` bytes when one is given."""

    model: LoadedModel
    report: MemoryReport
    capacity: int | None = None
    plan: ParallelPlan | None = None
    """A parallel plan: then every figure is one GPU's, of the pipeline stage ``stage``."""
    stage: int = 0
    stages: tuple[MemoryReport, ...] = ()
    """Under a plan, one GPU's report of every pipeline stage, first to last."""
    device: Capacity | None = None
    """Where ``capacity`` comes from: a GPU of the catalogue and its reserve, or a size given."""
    serving: ServingPlan | None = None
    """Inference on many GPUs as vLLM shards the model: then every figure is one GPU's, of
    the pipeline stage ``stage``, and ``stages`` holds one GPU's report of each."""

    @property
    def weights_note(self) -> str | None:
        """Where the weights' format comes from, when the checkpoint names one."""
        from costcalc.stored_weights import weights_note

        return weights_note(self.model, self.report.setup.dtype)

    @property
    def stored(self) -> StoredBytes | None:
        """The checkpoint's own byte count beside the weights', when it is at hand (a whole
        model's figures only, not one GPU's)."""
        from costcalc.stored_weights import stored_bytes

        if self.plan is not None or self.serving is not None:
            return None
        return stored_bytes(self.model, self.report.setup.dtype, self.report.bytes_weights)

    @property
    def stored_sentence(self) -> str | None:
        stored = self.stored
        return None if stored is None else stored.sentence()

    @property
    def headroom(self) -> int | None:
        """capacity - total bytes: positive headroom, negative shortfall; None without capacity."""
        return None if self.capacity is None else self.capacity - self.report.bytes_total

    @property
    def fits(self) -> bool | None:
        headroom = self.headroom
        return None if headroom is None else headroom >= 0

    @property
    def estimated_activations(self) -> bool:
        """Training activations are an estimate: a block kind that was not measured, or tensor
        parallelism (Korthikanti et al. 2022, Table 2)."""
        tp = 1 if self.plan is None else self.plan.tp
        return self.report.setup.train and (tp > 1 or not exact(self.model.spec))

    def components(self) -> list[Component]:
        """The components that hold memory in this setup: weights, then the training state or
        the KV cache."""
        r, setup = self.report, self.report.setup
        if not setup.train:
            llamacpp = r.engine is not None and r.engine.name == "llamacpp"
            rows = [
                Component(
                    "weights",
                    "model buffer" if llamacpp else "weights",
                    r.bytes_weights,
                    r.params_total,
                    weight_label(setup.dtype),
                ),
                Component(
                    "kv_cache",
                    "KV cache" if r.engine is None else f"KV cache, {r.engine.cache_words}",
                    r.bytes_kv_cache,
                    r.elements_kv_cache,
                    r.kv_dtype,
                ),
            ]
            if r.elements_state:
                rows.append(
                    Component(
                        "state", "recurrent state", r.bytes_state, r.elements_state, r.kv_dtype
                    )
                )
            if r.bytes_output:
                rows.append(Component("output", "output buffer", r.bytes_output, None, "f32"))
            return rows
        estimate = self.estimated_activations
        mark = " (ESTIMATE)" if estimate else ""
        gradient_dtype = r.gradient_dtype or setup.dtype
        rows = [
            Component(
                "weights",
                "weights",
                r.bytes_weights,
                r.elements_weights,
                r.weight_dtype or setup.dtype,
            ),
            Component(
                "gradients", "gradients", r.bytes_gradients, r.elements_gradients, gradient_dtype
            ),
        ]
        if r.bytes_master_weights:
            rows.append(
                Component(
                    "master_weights",
                    "master weights",
                    r.bytes_master_weights,
                    r.elements_master_weights,
                    MASTER_DTYPE,
                )
            )
        rows += [
            Component(
                "optimizer",
                f"optimizer ({setup.optimizer})",
                r.bytes_optimizer,
                r.elements_optimizer,
                setup.state_dtype if r.elements_optimizer else None,
            ),
            Component(
                "activations",
                "activations" + mark,
                r.bytes_activations - r.bytes_attention_scores,
                None,
                None,
                estimate=estimate,
            ),
        ]
        if r.bytes_attention_scores:
            rows.append(
                Component(
                    "attention_scores",
                    "attention scores" + mark,
                    r.bytes_attention_scores,
                    None,
                    None,
                    estimate=estimate,
                )
            )
        if r.bytes_gathered:
            rows.append(
                Component(
                    "gathered_layer",
                    "gathered layer (params + grads)",
                    r.bytes_gathered,
                    r.elements_gathered,
                    setup.dtype,
                )
            )
        rows += [
            Component(key, label, size, count, dtype)
            for key, label, size, count, dtype in (
                (
                    "persistent",
                    "small params kept whole",
                    r.bytes_persistent,
                    r.elements_persistent,
                    setup.dtype,
                ),
                (
                    "prefetch",
                    "prefetched params (bound)",
                    r.bytes_prefetch,
                    r.elements_prefetch,
                    setup.dtype,
                ),
                (
                    "reduce_bucket",
                    "reduce bucket" + ("" if r.bucket_held else " (backward)"),
                    r.bytes_bucket,
                    r.elements_bucket,
                    setup.dtype,
                ),
                (
                    "step_gradients",
                    "gradient partition (in the step)",
                    r.bytes_step_buffer,
                    r.elements_step_buffer,
                    setup.dtype if setup.dtype == MASTER_DTYPE else f"{setup.dtype} + fp32",
                ),
            )
            if size
        ]
        rows.append(Component("logits", "logits", r.bytes_logits, r.elements_logits, setup.dtype))
        if r.bytes_logits_fp32:
            rows.append(
                Component(
                    "logits_fp32",
                    "log-probabilities (fp32)",
                    r.bytes_logits_fp32,
                    r.elements_logits,
                    LOSS_DTYPE,
                )
            )
        return rows

    def share(self, component: Component) -> Fraction:
        """The component's part of the total."""
        total = self.report.bytes_total
        return Fraction(component.bytes, total) if total else Fraction(0)

    def to_dict(self) -> dict[str, Any]:
        r, setup, spec = self.report, self.report.setup, self.model.spec
        data: dict[str, Any] = {
            **model_header(self.model),
            "setup": setup_dict(setup, r),
            "parameters": r.params_total,
            "parameter_tensors": r.parameter_tensors,
            "weights": {
                "elements": r.elements_weights,
                "dtype": r.weight_dtype or setup.dtype,
                "description": describe_format(setup.dtype),
                "bytes": r.bytes_weights,
                "stored_format": self.model.weight_format,
                "checkpoint": None if self.stored is None else self.stored.to_dict(),
            },
            "gradients": {
                "elements": r.elements_gradients,
                "dtype": (r.gradient_dtype or setup.dtype) if setup.train else None,
                "bytes": r.bytes_gradients,
            },
            "master_weights": {
                "elements": r.elements_master_weights,
                "dtype": MASTER_DTYPE if setup.mixed_precision else None,
                "bytes": r.bytes_master_weights,
            },
            "optimizer": {
                "name": setup.optimizer if setup.train else None,
                "elements": r.elements_optimizer,
                "moment_elements": r.elements_optimizer_moments,
                "step_elements": r.elements_optimizer_steps,
                "moment_dtype": setup.state_dtype if r.elements_optimizer_moments else None,
                "step_dtype": STEP_DTYPE if r.elements_optimizer_steps else None,
                "bytes": r.bytes_optimizer,
                "source": OPTIMIZER_SOURCES[setup.optimizer] if setup.train else None,
            },
            "activations": {
                "bytes": r.bytes_activations,
                "attention_scores_bytes": r.bytes_attention_scores,
                "estimate": self.estimated_activations,
                "formula": activation_formula(spec, setup.recompute, setup.attention, setup.dtype)
                if setup.train
                else None,
                "source": activation_source(spec) if setup.train else None,
                "terms": terms_dict(
                    spec,
                    setup.batch,
                    r.length if self.plan is None else self.plan.tokens(r.length),
                    setup.recompute,
                    setup.attention,
                    setup.dtype,
                )
                if setup.train and (self.plan is None or self.plan.tp == 1)
                else None,
            },
            "logits": {
                "elements": r.elements_logits,
                "dtype": setup.dtype if setup.train else None,
                "bytes": r.bytes_logits,
                "upcast_dtype": LOSS_DTYPE if r.bytes_logits_fp32 else None,
                "upcast_bytes": r.bytes_logits_fp32,
                "source": LOGITS_SOURCE if setup.train else None,
            },
            "kv_cache": {
                "elements": r.elements_kv_cache,
                "tokens": r.kv_cache_tokens,
                "dtype": None if setup.train else r.kv_dtype,
                "bytes": r.bytes_kv_cache,
            },
            "state": {
                "elements": r.elements_state,
                "dtype": r.kv_dtype if r.elements_state else None,
                "bytes": r.bytes_state,
            },
            "output_buffer": {"bytes": r.bytes_output},
            "engine": engine_dict(r),
            "total": {"bytes": r.bytes_total, "includes_estimate": self.estimated_activations},
            "fits": None,
        }
        if self.serving is not None:
            data["parallel"] = serving_dict(self.serving, self.stage)
        if self.plan is not None:
            data["parallel"] = parallel_dict(spec, self.plan, self.stage, setup)
            if self.plan.tp > 1 or self.plan.pp > 1 or self.plan.cp > 1:
                data["activations"]["formula"] = data["parallel"]["activation_formula"]
            if self.plan.tp > 1:
                from costcalc.parallel import TENSOR_PARALLEL_SOURCE

                data["activations"]["source"] = TENSOR_PARALLEL_SOURCE
            data["gathered_layer"] = {"elements": r.elements_gathered, "bytes": r.bytes_gathered}
            data["deepspeed"] = deepspeed_dict(spec, self.plan, self.stage, r)
        if self.capacity is not None:
            data["fits"] = {
                "capacity_bytes": self.capacity,
                "fits": self.fits,
                "headroom_bytes": max(self.headroom or 0, 0),
                "shortfall_bytes": max(-(self.headroom or 0), 0),
                **(
                    self.device.to_dict()
                    if self.device is not None
                    else Capacity(self.capacity, self.capacity, 0).to_dict()
                ),
            }
        return data


def deepspeed_dict(
    spec: ModelSpec, plan: ParallelPlan, stage: int, report: MemoryReport
) -> dict[str, Any] | None:
    """DeepSpeed's ZeRO terms of one GPU (:mod:`costcalc.zero`) and its own estimator's figure
    beside costcalc's model states; None for plans that are not DeepSpeed's ZeRO."""
    from costcalc.parallel import largest_module, rank_tensors
    from costcalc.zero import ESTIMATOR_SOURCE, ZERO_SOURCE, deepspeed_estimate

    if not plan.stage or plan.fsdp is not None:
        return None
    tensors = rank_tensors(spec, plan, stage)
    params = sum(t.elements for t in tensors)
    estimate = deepspeed_estimate(params, largest_module(tensors), plan.shard_gpus, plan.stage)
    states = model_state_bytes(report)
    return {
        "source": ZERO_SOURCE,
        "flat_or_partition_elements": report.elements_weights,
        "gradient_partition_step": {
            "elements": report.elements_step_buffer,
            "bytes": report.bytes_step_buffer,
        },
        "reduce_bucket": {
            "elements": report.elements_bucket,
            "bytes": report.bytes_bucket,
            "held": report.bucket_held,
        },
        "persistent_params": {
            "elements": report.elements_persistent,
            "bytes": report.bytes_persistent,
        },
        "prefetch_bound": {"elements": report.elements_prefetch, "bytes": report.bytes_prefetch},
        "model_states_bytes": states,
        "estimator": None
        if estimate is None
        else {
            "function": ESTIMATOR_SOURCE[plan.stage],
            "bytes": estimate,
            "difference_bytes": states - estimate,
        },
    }


def model_state_bytes(report: MemoryReport) -> int:
    """What DeepSpeed's estimator counts, as costcalc counts it: the states every phase holds
    (weights, gradients, masters, optimizer state, a held reduce bucket), plus the step's
    gradient partition, plus under stage 3 the gathered layer (the estimator's 4 x largest
    layer)."""
    return report.bytes_held + report.bytes_step_buffer + report.bytes_gathered


def engine_dict(report: MemoryReport) -> dict[str, Any] | None:
    """What the engine allocates, in JSON (None: transformers, the formula itself)."""
    return None if report.engine is None else report.engine.to_dict()


def setup_dict(setup: MemorySetup, report: MemoryReport) -> dict[str, Any]:
    """The setup as it was resolved for this model (length and KV dtype filled in)."""
    return {
        "mode": "training" if setup.train else "inference",
        "dtype": setup.dtype,
        "optimizer": setup.optimizer if setup.train else None,
        "mixed_precision": setup.mixed_precision,
        "batch": setup.batch,
        "length": report.length,
        "kv_dtype": None if setup.train else report.kv_dtype,
        "recompute": setup.recompute if setup.train else None,
        "attention": setup.attention if setup.train else None,
        "engine": setup.engine.name,
    }


def parallel_dict(
    spec: ModelSpec, plan: ParallelPlan, stage: int, setup: MemorySetup
) -> dict[str, Any]:
    """The parallel plan in JSON: figures are per GPU (of pipeline stage ``pipeline_stage``,
    0-based, the largest) when it is present."""
    from costcalc.parallel import parallel_activation_formula

    return {
        "gpus": plan.gpus,
        "zero_stage": plan.stage,
        "fsdp": plan.fsdp,
        "shard_gpus": plan.shard_gpus,
        "data_parallel": plan.dp,
        "tensor_parallel": plan.tp,
        "pipeline_parallel": plan.pp,
        "sequence_parallel": plan.sp,
        "expert_parallel": plan.ep,
        "context_parallel": plan.cp,
        "micro_batches": plan.micro_batches or plan.pp,
        "pipeline_stage": stage,
        "activation_formula": parallel_activation_formula(
            spec, plan, setup.recompute, setup.attention, setup.dtype
        ),
        "per_gpu": True,
    }


def parallel_plans(
    train: bool,
    gpus: int | None,
    zero: int | None,
    fsdp: str | None,
    node_gpus: int | None,
    tp: int | None,
    pp: int | None,
    sp: bool,
    micro_batches: int | None,
    ep: int | None,
    cp: int | None,
    dp_attention: int | None,
) -> tuple[ParallelPlan | None, ServingPlan | None]:
    """The training plan the options give (with ``train``), or the serving plan (without),
    or neither; an option of the other mode is a UsageError saying which mode it belongs to."""
    if train:
        from costcalc.parallel import optional_plan

        if dp_attention is not None:
            raise UsageError(
                f"{option('--dp-attention')} lays out serving replicas: drop {option('--train')}"
            )
        return optional_plan(gpus, zero, fsdp, node_gpus, tp, pp, sp, micro_batches, ep, cp), None
    training = {
        "--zero": zero,
        "--fsdp": fsdp,
        "--node-gpus": node_gpus,
        "--sp": sp or None,
        "--micro-batches": micro_batches,
        "--cp": cp,
    }
    given = [option(name) for name, value in training.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)} applies to training; add {option('--train')}")
    if all(value is None for value in (gpus, tp, pp, ep, dp_attention)):
        return None, None
    from costcalc.engines.vllm_shards import serving_plan

    return None, serving_plan(gpus, tp, pp, ep, dp_attention)


def serving_dict(plan: ServingPlan, stage: int) -> dict[str, Any]:
    """A serving plan in JSON: figures are one GPU's (of pipeline stage ``pipeline_stage``,
    0-based, the largest), laid out as vLLM shards the model."""
    from costcalc.engines.vllm_shards import VERSION

    return {
        "gpus": plan.gpus,
        "layout": VERSION,
        "data_parallel_attention": plan.dp,
        "tensor_parallel": plan.tp,
        "pipeline_parallel": plan.pp,
        "expert_parallel": plan.moe_ranks if plan.ep else 1,
        "pipeline_stage": stage,
        "per_gpu": True,
    }


def memory_result(
    model: LoadedModel,
    setup: MemorySetup,
    capacity: int | Capacity | None = None,
    plan: ParallelPlan | None = None,
    serving: ServingPlan | None = None,
) -> MemoryResult:
    """The memory of ``model`` under ``setup`` (one GPU's share under ``plan``, or under
    ``serving`` for inference, of the largest pipeline stage), judged against ``capacity``
    bytes (or a device's usable memory) if given. Without ``--dtype``, inference counts the
    weights as the checkpoint stores them (but for llama.cpp, which loads GGUF files, not the
    safetensors checkpoint)."""
    stored = model.weight_format is not None and setup.engine.name != "llamacpp"
    if stored and not setup.dtype_given and not setup.train:
        setup = replace(setup, dtype=model.weights_dtype())
    device = capacity if isinstance(capacity, Capacity) else None
    usable = capacity.bytes if isinstance(capacity, Capacity) else capacity
    if serving is not None:
        from costcalc.engines.vllm_shards import serving_reports

        served = tuple(serving_reports(model.spec, setup, serving))
        top = max(range(serving.pp), key=lambda stage: served[stage].bytes_total)
        return MemoryResult(model, served[top], usable, None, top, served, device, serving)
    report = engine_report(model.spec, setup)
    if plan is None:
        return MemoryResult(model, report, usable, device=device)
    from costcalc.parallel import stage_reports

    stages = tuple(stage_reports(model.spec, report, plan))
    largest = max(range(plan.pp), key=lambda stage: stages[stage].bytes_total)
    return MemoryResult(model, stages[largest], usable, plan, largest, stages, device)


def stacked_parts(report: MemoryReport) -> list[tuple[str, int]]:
    """A training report in four parts that add up to its total: weights, gradients, optimizer
    (the fp32 master weights, the optimizer state, a held reduce bucket), and the larger of what
    the backward holds (activations, scores, logits, gathered and whole small parameters,
    buckets) and what the step holds (DeepSpeed's gradient partition)."""
    held = report.bytes_held - report.bytes_gradients - report.bytes_weights
    return [
        ("weights", report.bytes_weights),
        ("gradients", report.bytes_gradients),
        ("optimizer", held),
        ("activations", report.bytes_total - report.bytes_held),
    ]
