"""costcalc from Python: load a model, then count its parameters, MACs and memory.

The functions return the result objects the CLI renders (``to_dict()`` gives the JSON of
docs/json.md and docs/memory.md), and raise :class:`~costcalc.errors.CostcalcError` subclasses
with the CLI's messages on bad input. Every function that takes a model also takes anything
:func:`load` takes. ``count_macs`` and ``count_memory`` are not named ``macs`` and
``memory`` (nor ``count_lora`` ``lora``): those are modules of the package, which a function
could not shadow. See docs/api.md.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from costcalc.compute import ComputeResult
    from costcalc.loaders import LoadedModel
    from costcalc.lora_results import LoraResult
    from costcalc.memory_results import MemoryResult
    from costcalc.plan_results import PlanResult
    from costcalc.results import ParamsResult

Source: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any] | LoadedModel"
"""A preset name, a path (config file or model folder), a parsed config, a Hub id
(``ORG/NAME[@REVISION]``, or ``hf://ORG/NAME`` to be explicit) or an already loaded model."""

HUB_PREFIX = "hf://"

F = TypeVar("F", bound=Callable[..., Any])


def _checked(function: F) -> F:
    """``function`` with its arguments checked against their annotations before any work: a
    value of another type is a UsageError, a whole number over MAX_COUNT (100 digits, as the
    command line reads them) a RangeError; their ranges are checked where they are used, by
    messages that name the API's parameters (costcalc.option_names). What each parameter takes
    is read once, here; a call that does not fit the signature raises Python's TypeError, as
    ``inspect.Signature.bind`` words it, before any value is checked."""
    from costcalc.option_names import api_call

    signature = inspect.signature(function)
    parameters = signature.parameters.values()
    positional = tuple(p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD)
    required = frozenset(
        p.name
        for p in parameters
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )
    open_keywords = any(p.kind is p.VAR_KEYWORD for p in parameters)
    known = frozenset(p.name for p in parameters)
    checks = tuple(
        (p.name, _KINDS[p.annotation])
        for p in parameters
        if isinstance(p.annotation, str) and p.annotation in _KINDS
    )  # in the signature's order, so the first wrong argument is the one named

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        given = dict(zip(positional, args, strict=False))  # more args: bind raises
        if (
            len(args) > len(positional)
            or not given.keys().isdisjoint(kwargs)
            or not (open_keywords or known.issuperset(kwargs))
            or not required <= given.keys() | kwargs.keys()
        ):
            signature.bind(*args, **kwargs)  # raises the TypeError of the call
        given |= kwargs
        for name, kinds in checks:
            if name in given:
                _check_argument(function.__name__, name, given[name], kinds)
        with api_call():  # its errors name parameters, not options
            return function(*args, **kwargs)

    return checked  # type: ignore[return-value]


_KINDS: dict[str, tuple[str, ...]] = {
    "int": ("int",),
    "int | None": ("int", "None"),
    "bool": ("bool",),
    "bool | None": ("bool", "None"),
    "str": ("str",),
    "str | None": ("str", "None"),
    "int | str | None": ("int", "str", "None"),
    "Sequence[str]": ("names",),
    "Source": ("source",),
}
"""The annotations of the functions below, as the kinds of value each takes."""

_WORDS = {
    "int": "a whole number",
    "bool": "True or False",
    "str": "a string",
    "None": "None",
    "names": "a list of strings",
    "source": "a preset name, a path, a Hub id, a mapping or a loaded model",
}


def _check_argument(function: str, name: str, value: Any, kinds: tuple[str, ...]) -> None:
    from costcalc.errors import RangeError, UsageError
    from costcalc.loaders import LoadedModel
    from costcalc.units import MAX_COUNT, MAX_DIGITS

    if isinstance(value, bool):
        fits = "bool" in kinds
    elif isinstance(value, int):
        fits = "int" in kinds
        if fits and not 0 <= value <= MAX_COUNT:
            raise RangeError(
                name,
                value,
                f"expected a whole number from 0, of at most {MAX_DIGITS} digits",
                usage=True,
            )
    else:
        fits = (
            ("str" in kinds and isinstance(value, str))
            or ("None" in kinds and value is None)
            or (
                "names" in kinds
                and isinstance(value, list | tuple)
                and all(isinstance(item, str) for item in value)
            )
            or ("source" in kinds and isinstance(value, str | os.PathLike | Mapping | LoadedModel))
        )
    if not fits:
        expected = " or ".join(_WORDS[kind] for kind in kinds)
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise UsageError(
            f"{function}(): {name} is {type(value).__name__} {shown}; expected {expected}"
        )


@_checked
def load(source: Source, *, revision: str | None = None, **overrides: Any) -> LoadedModel:
    """The model ``source`` names, with ``overrides`` (ModelSpec fields: ``d_model=512``,
    ``n_layers=24``) applied and the whole validated once.

    A string is read, in this order, as ``hf://ORG/NAME[@REVISION]``; a path (``~`` expanded)
    that exists, or one that looks like a path (costcalc.files.looks_like_path), which is then no
    such file; a preset name; else a Hub id ``ORG/NAME[@REVISION]`` (``revision`` applies
    when it names none). A mapping is a parsed config in any format costcalc reads.
    """
    return _load(source, revision, overrides)


def _load(
    source: Source, revision: str | None = None, overrides: Mapping[str, Any] | None = None
) -> LoadedModel:
    """:func:`load`'s work, for the functions below, whose arguments are checked already."""
    from costcalc.errors import UsageError
    from costcalc.files import Document, looks_like_path, plain_mapping
    from costcalc.loaders import LoadedModel, load_document, load_file, load_hub, load_preset

    if isinstance(source, LoadedModel):
        if overrides or revision is not None:
            raise UsageError("overrides and revision apply when a model is loaded, not after")
        return source
    if isinstance(source, Mapping):
        model = load_document(Document("<dict>", plain_mapping(source, "<dict>")), overrides)
        return model if model.name != "<dict>" else model._replace(name="model")
    if not isinstance(source, str):
        return load_file(os.fspath(source), overrides)
    if source.startswith(HUB_PREFIX):
        return load_hub(source.removeprefix(HUB_PREFIX), overrides, revision)
    path = os.path.expanduser(source)
    if os.path.exists(path) or looks_like_path(source):
        return load_file(path, overrides)
    if "/" in source:  # no preset name holds one
        return load_hub(source, overrides, revision)
    return load_preset(source, overrides)


@_checked
def count(model: Source) -> ParamsResult:
    """Exact parameter counts and weight bytes in every dtype (``costcalc params``)."""
    from costcalc.results import params_result

    return params_result(_load(model))


@_checked
def count_macs(
    model: Source,
    *,
    batch: int = 1,
    length: int | None = None,
    causal: bool = False,
    recompute: str | None = None,
    attention: str | None = None,
    prompt: int | None = None,
    generate: int | None = None,
) -> ComputeResult:
    """Forward MACs for ``batch`` sequences of ``length`` tokens (with ``recompute`` and the
    ``attention`` kernel, the training step), and/or decoding ``generate`` tokens after a
    ``prompt`` with a KV cache."""
    from costcalc.compute import Workload, compute_result
    from costcalc.errors import UsageError
    from costcalc.macs import check_attention, check_recompute

    if length is None and prompt is None:
        raise UsageError("count_macs() needs length=T, or prompt=P and generate=N")
    if (prompt is None) != (generate is None):
        raise UsageError("prompt= and generate= go together: P prompt tokens, N generated")
    workload = Workload(
        batch=batch,
        length=length,
        causal=causal,
        recompute=check_recompute(recompute or "none"),
        attention=check_attention(attention or "eager"),
        prompt=prompt,
        generated=generate,
    )
    return compute_result(_load(model).spec, workload)


@_checked
def count_memory(
    model: Source,
    *,
    dtype: str | None = None,
    train: bool = False,
    optimizer: str | None = None,
    mixed_precision: bool | None = None,
    batch: int = 1,
    length: int | None = None,
    kv_dtype: str | None = None,
    recompute: str | None = None,
    attention: str | None = None,
    fits: int | str | None = None,
    gpu: str | None = None,
    reserve: int | str | None = None,
    gpus: int | None = None,
    zero: int | None = None,
    fsdp: str | None = None,
    node_gpus: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    sp: bool = False,
    micro_batches: int | None = None,
    ep: int | None = None,
    cp: int | None = None,
    dp_attention: int | None = None,
) -> MemoryResult:
    """Bytes of weights, and of gradients, optimizer state and activations (``train=True``) or
    the KV cache, as ``costcalc memory`` counts them: weights in ``dtype``, by default as the
    checkpoint stores them (``model.weight_format``, from its ``quantization_config``), else
    bf16 (training: bf16); ``fits`` (bytes, or ``"24GiB"``) or
    ``gpu`` (a GPU of ``costcalc gpus``: the memory it reports, less ``reserve``, bytes or
    ``"1GiB"``, by default the GPU's) is the capacity ``.fits`` and ``.headroom`` are judged
    against. ``gpus``, ``zero``, ``fsdp``, ``node_gpus``, ``tp``,
    ``pp``, ``sp``, ``micro_batches``, ``ep`` and ``cp`` are the parallel plan of
    ``memory --train``; without ``train``, ``gpus``, ``tp``, ``pp``, ``ep`` and
    ``dp_attention`` lay the model out as vLLM shards it for serving: then every figure is one
    GPU's (docs/memory.md)."""
    from costcalc.errors import UsageError
    from costcalc.gpus import device_memory, parse_reserve
    from costcalc.memory import memory_setup
    from costcalc.memory_results import memory_result, parallel_plans
    from costcalc.units import parse_bytes

    setup = memory_setup(
        dtype=dtype,
        train=train,
        optimizer=optimizer,
        mixed_precision=mixed_precision,
        batch=batch,
        length=length,
        kv_dtype=kv_dtype,
        recompute=recompute,
        attention=attention,
    )
    if fits is not None and gpu is not None:
        raise UsageError("give the device memory once: fits= or gpu=, not both")
    kept = parse_reserve(reserve) if isinstance(reserve, str) else reserve
    capacity = device_memory(parse_bytes(fits) if isinstance(fits, str) else fits, gpu, kept)
    plan, serving = parallel_plans(
        train, gpus, zero, fsdp, node_gpus, tp, pp, sp, micro_batches, ep, cp, dp_attention
    )
    return memory_result(_load(model), setup, capacity, plan, serving)


@_checked
def count_lora(
    model: Source,
    *,
    targets: Sequence[str],
    rank: int = 8,
    target_parameters: Sequence[str] = (),
    bias: str = "none",
    modules_to_save: Sequence[str] = (),
    dora: bool = False,
    train: bool = False,
    base_dtype: str | None = None,
    double_quant: bool | None = None,
    adapter_dtype: str | None = None,
    optimizer: str | None = None,
    batch: int | None = None,
    length: int | None = None,
    recompute: str | None = None,
    attention: str | None = None,
    fits: int | str | None = None,
    gpu: str | None = None,
    reserve: int | str | None = None,
    gpus: int | None = None,
    zero: int | None = None,
    fsdp: str | None = None,
    node_gpus: int | None = None,
) -> LoraResult:
    """What LoRA adds and trains, as peft counts it (``costcalc lora``), and with ``train=True``
    the memory of training: ``base_dtype`` (``"nf4"`` for QLoRA), ``adapter_dtype``,
    ``optimizer``, ``batch``, ``length``, ``recompute``, ``attention``; ``gpus``, ``zero``,
    ``fsdp`` and ``node_gpus`` make it one GPU's (docs/lora.md); ``fits`` or ``gpu`` (less
    ``reserve``) the capacity ``.fits`` is judged against, as in :func:`count_memory`."""
    from costcalc.errors import UsageError
    from costcalc.gpus import device_capacity, parse_reserve
    from costcalc.lora import lora_config
    from costcalc.lora_results import lora_inputs, lora_result
    from costcalc.units import parse_bytes

    config = lora_config(
        rank, list(targets), list(target_parameters), bias, list(modules_to_save), dora
    )
    given = {
        "--base-dtype": base_dtype,
        "--double-quant": double_quant,
        "--adapter-dtype": adapter_dtype,
        "--optimizer": optimizer,
        "--batch": batch,
        "--length": length,
        "--recompute": recompute,
        "--attention": attention,
        "--fits": fits,
        "--gpu": gpu,
        "--reserve": reserve,
        "--gpus": gpus,
        "--zero": zero,
        "--fsdp": fsdp,
        "--node-gpus": node_gpus,
    }
    training, plan = lora_inputs(train, given)
    if fits is not None and gpu is not None:
        raise UsageError("give the device memory once: fits= or gpu=, not both")
    kept = parse_reserve(reserve) if isinstance(reserve, str) else reserve
    capacity = device_capacity(parse_bytes(fits) if isinstance(fits, str) else fits, gpu, kept)
    return lora_result(_load(model), config, training, plan, capacity)


@_checked
def count_plan(
    model: Source,
    *,
    gpu: str | None = None,
    tokens: int | None = None,
    length: int = 2048,
    gpus: int = 1,
    mfu: str = "0.4",
    dtype: str | None = None,
    budget: int | None = None,
    prompt: int | None = None,
    generate: int = 256,
    batch: int = 1,
    memory_utilisation: str | None = None,
    reserve: int | str | None = None,
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
) -> PlanResult:
    """Time and throughput on ``gpu`` (``costcalc plan``): training FLOPs, wall time and
    GPU-hours for ``tokens`` in sequences of ``length`` on ``gpus`` GPUs at ``mfu`` (``"0.4"``
    or ``"40%"``); with ``budget`` (FLOPs) compute-optimal sizing; with ``prompt``, the
    inference roofline of ``batch`` sequences generating ``generate`` tokens, what fits in
    ``memory_utilisation`` (by default vLLM's) of the GPU's memory less ``reserve``, and decode
    by batch, on the GPUs of ``tp``, ``pp``, ``ep`` and ``dp_attention`` as vLLM shards the
    model, or under ``engine`` (``"llamacpp"``, ``"vllm"``) with its options.
    ``dtype`` is the weights' dtype or format, by default as the checkpoint stores them, else
    bf16 (docs/plan.md)."""
    from costcalc.gpus import parse_reserve
    from costcalc.plan_results import plan_result, plan_setup

    setup = plan_setup(
        gpu,
        tokens=tokens,
        length=length,
        gpus=gpus,
        mfu=mfu,
        dtype=dtype,
        budget=budget,
        prompt=prompt,
        generate=generate,
        batch=batch,
        utilisation=memory_utilisation,
        reserve=parse_reserve(reserve) if isinstance(reserve, str) else reserve,
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=dp_attention,
        kv_dtype=kv_dtype,
        engine=engine,
        cache_type_k=cache_type_k,
        cache_type_v=cache_type_v,
        swa_full=swa_full,
        block_size=block_size,
        max_num_batched_tokens=max_num_batched_tokens,
    )
    return plan_result(_load(model), setup)
