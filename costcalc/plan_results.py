"""What ``costcalc plan`` and :func:`costcalc.api.plan` answer: the checked setup of a plan
(:func:`plan_setup`), and per model a :class:`PlanResult` holding the training time, the
inference roofline with what fits, and the compute-optimal sizing, each as the objects of
:mod:`costcalc.plan` that compute them; ``to_dict()`` is the JSON of docs/plan.md."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from costcalc.engines.vllm import DEFAULT_UTILISATION

if TYPE_CHECKING:
    from costcalc.engines import EngineSetup
    from costcalc.engines.vllm import VllmMemory
    from costcalc.engines.vllm_shards import ServingPlan
    from costcalc.gpus import Gpu
    from costcalc.loaders import LoadedModel
    from costcalc.plan import CacheFit, Compute, DecodeStep, Roofline, TrainingTime
    from costcalc.routing import ExpertRead

TRAINING_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")
"""The dtypes a training run's peak is taken for."""

KV_DTYPES = ("fp32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class PlanSetup:
    """What a plan is asked for, checked: the GPU, the weights' dtype or format, training
    (``tokens`` of ``length`` on ``gpus`` at ``mfu``), a compute ``budget``, and inference
    (``prompt`` + ``generate`` tokens, ``batch`` sequences, ``utilisation`` of the memory less
    ``reserve``, on the GPUs of ``layout`` as vLLM shards the model, the cache's ``kv_dtype``,
    under the ``serving`` engine)."""

    gpu: Gpu | None
    """None: no GPU given, which a compute budget alone needs none of."""
    dtype: str | None
    """The weights' dtype or format given; None: training in bf16, inference as the checkpoint
    stores them (:meth:`~costcalc.loaders.LoadedModel.weights_dtype`)."""
    serving: EngineSetup
    tokens: int | None = None
    length: int = 2048
    gpus: int = 1
    mfu: Fraction = Fraction(2, 5)
    budget: int | None = None
    prompt: int | None = None
    generate: int = 256
    batch: int = 1
    utilisation: Fraction = DEFAULT_UTILISATION
    reserve: int | None = None
    layout: ServingPlan | None = None
    """TP, PP, EP and data-parallel attention (:mod:`costcalc.engines.vllm_shards`); None: one
    GPU."""
    kv_dtype: str | None = None

    @property
    def tp(self) -> int:
        return 1 if self.layout is None else self.layout.tp


def plan_setup(
    gpu: str | None,
    *,
    tokens: int | None = None,
    length: int = 2048,
    gpus: int = 1,
    mfu: str = "0.4",
    dtype: str | None = None,
    budget: int | None = None,
    prompt: int | None = None,
    generate: int = 256,
    batch: int = 1,
    utilisation: str | None = None,
    reserve: int | None = None,
    tp: int = 1,
    pp: int = 1,
    ep: int | None = None,
    dp_attention: int = 1,
    kv_dtype: str | None = None,
    engine: str | None = None,
    cache_type_k: str | None = None,
    cache_type_v: str | None = None,
    swa_full: bool = False,
    block_size: int | None = None,
    max_num_batched_tokens: int | None = None,
) -> PlanSetup:
    """A checked :class:`PlanSetup`; a UsageError or RangeError names what is wrong."""
    from costcalc.compute import check_count
    from costcalc.engines.dispatch import engine_setup
    from costcalc.engines.vllm_shards import serving_plan
    from costcalc.errors import UsageError, check_choice
    from costcalc.gpus import find_gpu
    from costcalc.plan import parse_fraction
    from costcalc.units import DTYPES
    from costcalc.weight_format import check_weight_dtype

    device = None if gpu is None else find_gpu(gpu)
    dtype = None if dtype is None else check_weight_dtype(dtype)
    counts = {"gpus": gpus, "length": length, "batch": batch, "generate": generate, "tp": tp}
    counts |= {"pp": pp, "dp_attention": dp_attention}
    for name, value in {**counts, "prompt": prompt, "tokens": tokens, "budget": budget}.items():
        if value is not None:
            check_count(name, value)
    share = parse_fraction(mfu, "MFU")
    memory_share = (
        DEFAULT_UTILISATION
        if utilisation is None
        else parse_fraction(utilisation, "memory utilisation")
    )
    if tokens is None and budget is None and prompt is None:
        raise UsageError(
            "nothing to plan: give training tokens (--tokens), a compute budget (--budget) or "
            "a prompt (--prompt)"
        )
    if device is None and (tokens is not None or prompt is not None):
        raise UsageError(
            "training time and inference rooflines are a GPU's: give one of `costcalc gpus` "
            "(--gpu NAME)"
        )
    layout = serving_plan(None, tp, pp, ep, dp_attention)
    if layout.gpus > 1 and prompt is None:
        raise UsageError(
            "tensor, pipeline, expert and data-parallel attention (--tp, --pp, --ep, "
            "--dp-attention) shard the inference rooflines: give a prompt (--prompt)"
        )
    serving = engine_setup(
        engine,
        cache_type_k,
        cache_type_v,
        swa_full,
        block_size,
        max_num_batched_tokens,
        device_memory=None if device is None else device.memory_bytes,
    )
    if serving.name == "llamacpp" and (prompt is None or layout.gpus > 1):
        raise UsageError(
            "the llamacpp engine sizes inference on one GPU: give a prompt (--prompt) and no "
            "tensor parallelism (--tp), pipeline stages (--pp), expert parallelism (--ep) or "
            "data-parallel attention (--dp-attention)"
        )
    if serving.name == "vllm" and prompt is None:
        raise UsageError("the vllm engine sizes inference: give a prompt (--prompt)")
    if kv_dtype is not None:
        check_choice(kv_dtype, KV_DTYPES, "KV-cache dtype")
    if tokens is not None and dtype is not None and dtype not in TRAINING_DTYPES:
        kind = "a storage dtype" if dtype in DTYPES else "a stored weight format"
        raise UsageError(
            f"training tokens: training computes at the peak of {', '.join(TRAINING_DTYPES)}, "
            f"and {dtype} is {kind} (its decoding: a prompt, --prompt)"
        )
    return PlanSetup(
        gpu=device,
        dtype=dtype,
        serving=serving,
        tokens=tokens,
        length=length,
        gpus=gpus,
        mfu=share,
        budget=budget,
        prompt=prompt,
        generate=generate,
        batch=batch,
        utilisation=memory_share,
        reserve=reserve,
        layout=layout,
        kv_dtype=kv_dtype,
    )


@dataclass(frozen=True)
class TrainingPlan:
    """Training FLOPs for ``tokens`` in sequences of ``length`` (exact MACs x 2, and 6N beside
    them) and the wall time they take."""

    tokens: int
    length: int
    flops: int
    flops_6n: int
    time: TrainingTime

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "length": self.length,
            "flops": self.flops,
            "flops_6n": self.flops_6n,
            "gpus": self.time.gpus,
            "peak_flops_per_gpu": self.time.peak,
            "mfu": float(self.time.mfu),
            "seconds": float(self.time.seconds),
            "gpu_hours": float(self.time.gpu_hours),
        }


@dataclass(frozen=True)
class InferencePlan:
    """The roofline at ``batch`` (an ESTIMATE), what fits beside the weights, and decode by
    batch up to the largest that fits; ``vllm`` what vLLM would report, under --engine vllm."""

    serving: EngineSetup
    layout: ServingPlan
    batch: int
    prompt: int
    context: int
    dtype: str
    kv_dtype: str
    kernels: Compute
    roofline: Roofline
    fit: CacheFit
    utilisation: Fraction
    memory_bytes: int
    steps: tuple[DecodeStep, ...]
    vllm: VllmMemory | None = None

    @property
    def tp(self) -> int:
        return self.layout.tp

    @property
    def cache_dtype(self) -> str:
        """The cache's dtype: llama.cpp's K and V cache types (``q8_0 / f16`` when they
        differ)."""
        if self.serving.name != "llamacpp":
            return self.kv_dtype
        k, v = self.serving.cache_type_k or "f16", self.serving.cache_type_v or "f16"
        return k if k == v else f"{k} / {v}"

    def to_dict(self) -> dict[str, Any]:
        from costcalc.render import ratio_dict
        from costcalc.weight_format import describe_format

        r, fit, prefill = self.roofline, self.fit, self.roofline.prefill_seconds
        fit_data: dict[str, Any] = {
            "memory_utilisation": ratio_dict(self.utilisation),
            "memory_bytes": self.memory_bytes,
            "reserve_bytes": fit.reserve,
            "budget_bytes": fit.budget,
            "weight_bytes": fit.weights,
            "cache_bytes_free": fit.free,
            "kv_dtype": self.cache_dtype,
            "context": self.context,
            "largest_batch": fit.largest_batch,
            "batch": self.batch,
            "largest_context": fit.largest_context,
            "positions": fit.positions,
        }
        if self.vllm is not None:
            fit_data["vllm"] = self.vllm.to_dict()
        return {
            "estimate": True,
            "engine": self.serving.name,
            "tensor_parallel": self.tp,
            "parallel": layout_dict(self.layout, fit.stage) if self.layout.gpus > 1 else None,
            "batch": self.batch,
            "prompt": self.prompt,
            "context": self.context,
            "weights": {
                "dtype": self.dtype,
                "description": describe_format(self.dtype),
                "compute_dtype": self.kernels.dtype,
                "peak_flops_per_gpu": self.kernels.peak,
                "kernels": self.kernels.kernels,
                "peak_missing": self.kernels.missing,
            },
            "prefill_flops": r.prefill_flops,
            "prefill_seconds": None if prefill is None else float(prefill),
            "decode_step_bytes": r.decode.step_bytes,
            "decode_all_experts_step_bytes": r.decode.all_experts_bytes,
            "decode_bound": r.decode.bound,
            "decode_collective_bytes_per_gpu": r.decode.collective_bytes,
            "decode_collective_seconds": float(r.decode.collective_seconds),
            "decode_tokens_per_second_per_sequence": float(r.decode.tokens_per_second_per_sequence),
            "decode_tokens_per_second": float(r.decode.tokens_per_second),
            "experts_read": [experts_dict(e) for e in r.decode.experts],
            "fit": fit_data,
            "decode_by_batch": [step_dict(step) for step in self.steps],
        }


@dataclass(frozen=True)
class PlanResult:
    """One model's plan on ``gpu``: ``training``, ``inference`` and ``compute_optimal``
    (N_opt, D_opt for the budget), each None where not asked for."""

    model: LoadedModel
    gpu: Gpu | None
    dtype: str
    training: TrainingPlan | None = None
    inference: InferencePlan | None = None
    budget: int | None = None

    @property
    def compute_optimal(self) -> tuple[int, int] | None:
        from costcalc.plan import compute_optimal

        return None if self.budget is None else compute_optimal(self.budget)

    @property
    def budget_share(self) -> tuple[int, int] | None:
        """The model's own parameters N and the tokens C / (6 N) the budget trains it on
        (rounded down)."""
        from costcalc.params import total_params

        if self.budget is None:
            return None
        n = total_params(self.model.spec)
        return n, self.budget // (6 * n)

    def to_dict(self) -> dict[str, Any]:
        from costcalc.plan import CHINCHILLA_RULE
        from costcalc.results import model_header

        gpu = None if self.gpu is None else self.gpu.key
        data: dict[str, Any] = {**model_header(self.model), "gpu": gpu}
        data["dtype"] = self.dtype
        if self.training is not None:
            data["training"] = self.training.to_dict()
        if self.inference is not None:
            data["inference"] = self.inference.to_dict()
        optimal, share = self.compute_optimal, self.budget_share
        if optimal is not None and share is not None:
            data["compute_optimal"] = {
                "budget_flops": self.budget,
                "parameters": optimal[0],
                "tokens": optimal[1],
                "rule": CHINCHILLA_RULE,
                "model_parameters": share[0],
                "model_tokens": share[1],
            }
        return data


def _device(setup: PlanSetup) -> Gpu:
    """The GPU a training time or an inference roofline is taken on."""
    from costcalc.errors import UsageError

    if setup.gpu is None:
        raise UsageError("training time and inference rooflines are a GPU's: give one (gpu=)")
    return setup.gpu


def plan_result(model: LoadedModel, setup: PlanSetup) -> PlanResult:
    """``model``'s plan as ``setup`` asks for it: training in the dtype given (bf16 by
    default), inference with the weights in the dtype given or as the checkpoint stores them."""
    from costcalc.compute import check_positions
    from costcalc.loaders import DEFAULT_WEIGHTS
    from costcalc.plan import TrainingTime, kaplan_flops, training_flops

    training = None
    dtype = setup.dtype or DEFAULT_WEIGHTS
    if setup.tokens is not None:
        spec = model.spec
        check_positions(spec, "length", setup.length, setup.length)
        exact = training_flops(spec, setup.tokens, setup.length)
        time = TrainingTime(exact, setup.gpus, _device(setup).peak(dtype), setup.mfu)
        training = TrainingPlan(
            setup.tokens, setup.length, exact, kaplan_flops(spec, setup.tokens), time
        )
    inference = None
    if setup.prompt is not None:
        dtype = model.weights_dtype(setup.dtype)
        inference = _inference(model, setup, setup.prompt, dtype)
    return PlanResult(model, setup.gpu, dtype, training, inference, setup.budget)


def _inference(model: LoadedModel, setup: PlanSetup, prompt: int, dtype: str) -> InferencePlan:
    """The roofline at the batch, what fits at the memory utilisation, and decode by batch,
    with the weights in ``dtype``."""
    from costcalc.compute import check_positions
    from costcalc.engines.vllm_shards import ServingPlan
    from costcalc.plan import Serving, cache_fit, compute, decode_batches, decode_step, roofline

    spec, gpu, serving = model.spec, _device(setup), setup.serving
    layout = ServingPlan() if setup.layout is None else setup.layout
    context = prompt + setup.generate
    check_positions(spec, "length", context, context)
    kv_dtype = setup.kv_dtype or (dtype if dtype in ("fp32", "bf16", "fp16") else "bf16")
    kernels = compute(dtype, gpu)
    r = roofline(spec, gpu, dtype, kv_dtype, setup.batch, prompt, context, layout, serving)
    fit = cache_fit(
        spec,
        gpu,
        setup.utilisation,
        dtype,
        kv_dtype,
        setup.batch,
        context,
        layout,
        setup.reserve,
        serving,
    )
    top = setup.batch if fit.largest_batch is None else fit.largest_batch
    steps = tuple(
        decode_step(spec, gpu, dtype, kv_dtype, b, context, layout, serving)
        for b in decode_batches(top)
    )
    vllm = None
    if serving.name == "vllm":
        from costcalc.engines.vllm import BLOCK_SIZE, default_batched_tokens, vllm_memory

        vllm = vllm_memory(
            spec,
            dtype,
            context,
            setup.batch,
            kv_dtype,
            serving.block_size or BLOCK_SIZE,
            serving.max_num_batched_tokens or default_batched_tokens(gpu.memory_bytes),
            fit.free,
            stacks=Serving(spec, dtype, kv_dtype, serving, layout, fit.stage).stacks,
            pipeline_stages=layout.pp,
        )
    return InferencePlan(
        serving=serving,
        layout=layout,
        batch=setup.batch,
        prompt=prompt,
        context=context,
        dtype=dtype,
        kv_dtype=kv_dtype,
        kernels=kernels,
        roofline=r,
        fit=fit,
        utilisation=setup.utilisation,
        memory_bytes=gpu.memory_bytes,
        steps=steps,
        vllm=vllm,
    )


def layout_dict(layout: ServingPlan, stage: int) -> dict[str, Any]:
    """A serving layout in JSON: figures are one GPU's; ``fit_pipeline_stage`` the stage
    (0-based) whose GPUs hold the fewest sequences."""
    from costcalc.engines.vllm_shards import VERSION

    return {
        "gpus": layout.gpus,
        "layout": VERSION,
        "tensor_parallel": layout.tp,
        "pipeline_parallel": layout.pp,
        "data_parallel_attention": layout.dp,
        "expert_parallel": layout.moe_ranks if layout.ep else 1,
        "fit_pipeline_stage": stage,
        "collectives_estimate": True,
    }


def experts_dict(read: ExpertRead) -> dict[str, Any]:
    from costcalc.routing import ROUTING_ASSUMPTION

    return {
        "layers": read.layers,
        "experts": read.experts,
        "routed_per_token": read.routed,
        "batch": read.batch,
        "expected_experts_per_layer": float(read.expected_experts),
        "count": read.exact_count,
        "expert_bytes": read.bytes,
        "expert_bytes_read": read.bytes_read,
        "estimate": not read.exact_count,
        "assumption": ROUTING_ASSUMPTION,
    }


def step_dict(step: DecodeStep) -> dict[str, Any]:
    compute = step.compute_seconds
    return {
        "batch": step.batch,
        "step_bytes": step.step_bytes,
        "weight_bytes_read": step.weight_bytes,
        "cache_bytes": step.cache_bytes,
        "all_experts_step_bytes": step.all_experts_bytes,
        "expected_experts_per_layer": [float(e.expected_experts) for e in step.experts],
        "step_flops": step.step_flops,
        "memory_seconds": float(step.memory_seconds),
        "compute_seconds": None if compute is None else float(compute),
        "bound": step.bound,
        "collective_bytes_per_gpu": step.collective_bytes,
        "collective_seconds": float(step.collective_seconds),
        "tokens_per_second_per_sequence": float(step.tokens_per_second_per_sequence),
        "tokens_per_second": float(step.tokens_per_second),
    }
