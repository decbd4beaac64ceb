"""LoRA: the parameters an adapter adds and trains, counted as peft 0.21 counts them.

LoRA on a linear layer W (out x in) adds A (r x in) and B (out x r): r (in + out) parameters;
DoRA adds a magnitude vector of ``out`` elements per adapted linear. On a table (V x E,
``lora.Embedding``) it adds r (V + E), and DoRA E. A stacked parameter of X
experts (X x a x b) targeted through ``target_parameters`` gets A (X r x b) and B (a x X r):
X r (a + b); a router's 2-D weight (out x in) gets r (in + out) (peft's ``lora.ParamWrapper``).
Bias modes (peft's ``bias``): ``none`` trains no bias; ``all`` every existing parameter whose name
ends in ``.bias``; ``lora_only`` the biases of the adapted modules. A module in
``modules_to_save`` gets a trainable copy next to the frozen original (``ModulesToSaveWrapper``),
so it adds its parameters to the total once more, even when the original is tied.

``trainable`` and ``total`` are what ``PeftModel.get_nb_trainable_parameters()`` reports: total =
the base model + adapters + saved copies.

Targets are the family's own module names, matched as peft matches them: a target hits a module
whose name is the target or ends in ``.target`` (GPT-2's ``c_proj`` hits both the attention and
the MLP output projection). ``all-linear`` is every linear layer but the output head. In the MoE
families whose transformers 4 checkpoints peft converts (Mixtral, Qwen2-MoE and the families
transformers converts alike), the transformers 4 names of the experts and the router (Mixtral's
``w1``, ``w3``, ``w2``, ``gate``; Qwen2-MoE's ``gate_proj``, ``up_proj``, ``down_proj``, ``gate``)
target the stacked experts and the router weight instead of any linear layer, the fused
gate-and-up experts at rank 2r, as ``peft.utils.transformers_weight_conversion`` rewrites them;
``all-linear`` includes them there. The converted router name is the parameter ``gate.weight``:
it hits a linear router named ``gate`` too (AFMoE's), and nothing where the router is Hunyuan-MoE's
``gate.wg`` (``all-linear`` adapts that as a linear layer). In the
Mamba-based model types peft refuses any module named ``out_proj`` or ``conv1d``, so
``all-linear`` fails there too. A block reused at several depths is a module at each use in
transformers (Zamba, Zamba 2; its weights tied), so peft adapts it once per use
(:func:`module_tensors`); where it is one module per weight set run at each use (HRM-Text),
once per set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from costcalc.errors import RangeError, UsageError, check_choice
from costcalc.formats.families import model_types, peft_names
from costcalc.formats.peft_names import DOWN, GATE_UP, LLAMA, ROUTER, FamilyNames
from costcalc.option_names import option
from costcalc.params import total_params
from costcalc.render import ratio_dict
from costcalc.scalars import MAX_SIZE
from costcalc.spec import ModelSpec
from costcalc.tensors import (
    Shape,
    Tensor,
    adapters_in_layers,
    block_tensors,
    model_tensors,
    parameter_tensors,
    weight_sets,
)

BIAS_MODES: tuple[str, ...] = ("none", "all", "lora_only")
ALL_LINEAR = "all-linear"
PEFT_VERSION = "0.21"

PEFT_PARAMETERS = {GATE_UP: "gate_up_proj", DOWN: "down_proj", ROUTER: "gate.weight"}
"""The ``target_parameters`` peft converts transformers 4 MoE names to (the family's
``converted``): any weight whose path ends in one (a linear router named ``gate`` too; none
where the router is ``gate.wg``)."""


# --------------------------------------------------------------------------- sites


Kind = Literal["linear", "parameter", "head", "embedding"]


@dataclass(frozen=True)
class Site:
    """A tensor LoRA can adapt (or a module peft can save), under its family's name.

    ``path`` is the module path (a parameter's: module path + parameter name), ``shape`` the
    weight's (out, in), or (X, a, b) for stacked experts, ``copies`` how many layers hold it.
    """

    path: str
    kind: Kind
    shape: Shape
    copies: int
    generic: str

    @property
    def name(self) -> str:
        """The breakdown's name: a module's last part; a parameter's module and name."""
        parts = self.path.split(".")
        return ".".join(parts[-2:]) if self.kind == "parameter" else parts[-1]


def _kind(tensor: Tensor, names: FamilyNames) -> Kind | None:
    """What a weight is to LoRA: a linear layer, the output head, a bare parameter (stacked
    experts, a router that is no ``nn.Linear``), a table (``lora.Embedding``, r (V + E); the
    part marks it, ``all-linear`` leaves it out); None for the rest."""
    if tensor.name == "lm_head.weight":
        return "head"
    if tensor.table:
        return "embedding"
    if tensor.use == "experts":
        return "parameter" if names.stacked_experts else None
    if tensor.use == "router":
        return "linear" if names.router_linear else "parameter"
    return "linear" if tensor.use == "matmul" and tensor.name.endswith(".weight") else None


def sites(spec: ModelSpec, names: FamilyNames) -> list[Site]:
    """Every weight LoRA can adapt or peft can save, with the family's names; a tied LM head is
    a module of its own to peft (sharing the token table's weight), so it is listed too."""
    found = []
    tensors = module_tensors(spec, names.module_per_set)
    for tensor in tensors:
        kind = _kind(tensor, names)
        if kind is None:
            continue
        module = tensor.name.removesuffix(".weight")
        if tensor.use == "router":
            path = names.path(module) + (".weight" if kind == "parameter" else "")
        elif kind == "parameter":
            path = names.path(tensor.name)
        else:
            path = names.path(module)
        found.append(Site(path, kind, tensor.shape, tensor.copies, module))
    if spec.tie_embeddings:
        table = next(t for t in tensors if t.name == "embed_tokens.weight")
        found.append(Site(names.path("lm_head"), "head", table.shape, 1, "lm_head"))
    return found


def module_tensors(spec: ModelSpec, per_set: bool = False) -> list[Tensor]:
    """Every parameter tensor, repeated once per module that holds it, as peft wraps modules.
    transformers builds a reused block anew at each use with its weights tied (Zamba 2), so a
    weight set's tensor is in every layer's module, and each layer's module holds all the
    adapters of its set: over the kind, u_1^2 + ... + u_s^2 adapters, u_i the layers running set
    i (:func:`~costcalc.tensors.adapters_in_layers`). With ``per_set`` the block is one module
    per weight set, run at each use (HRM-Text): a set's tensor is held once per set."""
    tensors = model_tensors(spec)
    for stack in spec.stacks:
        n, sets = stack.n_layers, weight_sets(stack)
        held = {"layer": n, "set": sets if per_set else n, "use": adapters_in_layers(stack)}
        tensors += [t.times(held[t.scope]) for t in block_tensors(stack)]
    return tensors


def _hits(path: str, target: str) -> bool:
    """peft's match: the name is the target or ends in ``.target``."""
    return path == target or path.endswith(f".{target}")


# --------------------------------------------------------------------------- the count


@dataclass(frozen=True)
class LoraConfig:
    """What to adapt, as peft's ``LoraConfig`` says it."""

    rank: int
    targets: tuple[str, ...]
    target_parameters: tuple[str, ...] = ()
    bias: str = "none"
    modules_to_save: tuple[str, ...] = ()
    dora: bool = False


@dataclass(frozen=True)
class AdaptedModule:
    """One target name's share: modules adapted (all layers), rank, parameters added."""

    name: str
    modules: int
    rank: int
    added: int
    dora: int
    shapes: tuple[Shape, ...]
    """The distinct shapes of the modules the name hits, in model order."""


@dataclass(frozen=True)
class LoraReport:
    """A model with LoRA adapters: the breakdown and peft's trainable and total."""

    config: LoraConfig
    base_total: int
    modules: tuple[AdaptedModule, ...]
    saved: tuple[tuple[str, int], ...]
    bias_elements: int
    adapter_tensors: int
    bias_tensors: int
    saved_tensors: int
    converted: tuple[str, ...] = ()
    """Targets peft read as transformers 4 MoE names (experts and router, not linear layers)."""
    adapter_shapes: tuple[tuple[Shape, int], ...] = ()
    """Each adapter tensor's shape and how many modules hold it (:func:`adapter_shapes`)."""
    saved_shapes: tuple[tuple[Shape, int], ...] = ()
    """The tensors of the ``modules_to_save`` copies: shape, copies."""

    @property
    def adapter_params(self) -> int:
        """LoRA A and B (and DoRA magnitudes) of every adapted module."""
        return sum(m.added for m in self.modules)

    @property
    def saved_params(self) -> int:
        """The trainable copies of ``modules_to_save``."""
        return sum(n for _, n in self.saved)

    @property
    def trainable(self) -> int:
        """Adapters + saved copies + the biases the bias mode trains."""
        return self.adapter_params + self.saved_params + self.bias_elements

    @property
    def total(self) -> int:
        """The base model + adapters + saved copies."""
        return self.base_total + self.adapter_params + self.saved_params

    @property
    def share(self) -> Fraction:
        """trainable / total."""
        return Fraction(self.trainable, self.total)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: peft's trainable and total, the config and the breakdown."""
        c = self.config
        return {
            "lora": {
                "rank": c.rank,
                "targets": list(c.targets),
                "target_parameters": list(c.target_parameters),
                "bias": c.bias,
                "modules_to_save": list(c.modules_to_save),
                "dora": c.dora,
            },
            "trainable": self.trainable,
            "total": self.total,
            "trainable_share": ratio_dict(self.share),
            "base_total": self.base_total,
            "adapter_parameters": self.adapter_params,
            "trainable_biases": self.bias_elements,
            "modules": {
                m.name: {
                    "modules": m.modules,
                    "shapes": [list(shape) for shape in m.shapes],
                    "rank": m.rank,
                    "added": m.added,
                    "dora_magnitudes": m.dora,
                }
                for m in self.modules
            },
            "modules_to_save": dict(self.saved),
            "converted_targets": list(self.converted),
        }


def lora_config(
    rank: int,
    targets: Sequence[str],
    target_parameters: Sequence[str] = (),
    bias: str = "none",
    modules_to_save: Sequence[str] = (),
    dora: bool = False,
) -> LoraConfig:
    """A checked :class:`LoraConfig`."""
    if rank < 1:
        raise UsageError(f"{option('--rank')} must be a positive whole number, not {rank}")
    if rank > MAX_SIZE:
        raise RangeError("rank", rank, f"expected at most {MAX_SIZE:,} (a rank is a size)")
    check_choice(bias, BIAS_MODES, "bias mode")
    if not targets and not target_parameters:
        targets = option("--targets", ["q_proj", "v_proj"])
        raise UsageError(f"name what to adapt: {targets} (or all-linear)")
    if ALL_LINEAR in targets and len(targets) > 1:
        raise UsageError("all-linear stands alone: it already names every linear layer")
    for name in (*targets, *target_parameters, *modules_to_save):
        if any(part.isdigit() for part in name.split(".")) or not name:
            raise UsageError(
                f"target {name!r}: costcalc adapts every layer alike; name a module "
                "(q_proj, self_attn.o_proj), not one layer's"
            )
    return LoraConfig(
        rank, tuple(targets), tuple(target_parameters), bias, tuple(modules_to_save), dora
    )


def family_names(family: str | None) -> FamilyNames:
    """The names of ``family`` (Llama's for costcalc's own models), as its family module
    declares them (:mod:`costcalc.formats.families`), or an error."""
    if family is None:
        return LLAMA
    names = peft_names(family)
    if names is None:
        raise UsageError(
            f"costcalc does not know the module names of the {family} family, so cannot match "
            "LoRA targets; known: " + ", ".join(model_types())
        )
    return names


def _resolve(
    config: LoraConfig, names: FamilyNames, found: list[Site]
) -> tuple[set[str], dict[str, int], tuple[str, ...]]:
    """Module targets, parameter targets (with their rank) and the targets peft converted, after
    ``all-linear`` and peft's conversion of transformers 4 MoE names."""
    linear = [s for s in found if s.kind == "linear"]
    parameters = dict.fromkeys(config.target_parameters, config.rank)
    if config.targets == (ALL_LINEAR,):
        if not names.converted:
            return {s.path for s in linear}, parameters, ()
        targets = {s.path.split(".")[-1] for s in linear} | set(names.converted)
    else:
        targets = set(config.targets)
    remaining = set()
    converted = []
    for target in sorted(targets):
        old = next((o for o in names.converted if _hits(target, o)), None)
        if old is None:
            remaining.add(target)
            continue
        converted.append(target)
        generic, together = names.converted[old]
        missing = [name for name in together if not any(_hits(t, name) for t in targets)]
        if missing:
            raise UsageError(
                f"target {target!r} names experts fused with {', '.join(missing)} in "
                f"transformers 5 ({GATE_UP.split('.', 1)[1]}); peft {PEFT_VERSION} needs them "
                "targeted together"
            )
        parameters[PEFT_PARAMETERS[generic]] = config.rank * len(together)
    return remaining, parameters, tuple(converted)


def _param_key(path: str) -> str:
    return ".".join(path.split(".")[-2:])


def _weight_path(site: Site) -> str:
    """The path of a site's weight, as ``target_parameters`` match it (a linear layer's too)."""
    return site.path if site.kind == "parameter" else f"{site.path}.weight"


def _magnitudes(site: Site) -> int:
    """DoRA's magnitude vector: out for a linear layer, the width E of a (V, E) table."""
    return site.shape[1] if site.kind == "embedding" else site.shape[0]


def _added(site: Site, rank: int, dora: bool) -> int:
    """Parameters LoRA adds to one copy: r (in + out) (+ DoRA's magnitudes), r (V + E) for a
    table; X r (a + b) for X stacked experts."""
    if len(site.shape) == 3:
        experts, a, b = site.shape
        return experts * rank * (a + b)
    out, inp = site.shape
    return rank * (inp + out) + (_magnitudes(site) if dora else 0)


def lora_report(spec: ModelSpec, family: str | None, config: LoraConfig) -> LoraReport:
    """What ``config`` adds to and trains in ``spec``, as peft counts it."""
    names = family_names(family)
    found = sites(spec, names)
    module_targets, parameter_targets, converted = _resolve(config, names, found)
    # index of each adapted site in ``found`` -> its rank: a site hit by two targets is one
    ranks: dict[int, int] = {}
    by_weight: set[int] = set()  # sites adapted through target_parameters (ParamWrapper)
    all_linear = config.targets == (ALL_LINEAR,)
    for target in sorted(module_targets):
        hit = [
            i
            for i, s in enumerate(found)
            if s.kind in ("linear", "head", "embedding")
            and _hits(s.path, target)
            and not (all_linear and s.kind == "head")
        ]
        if not hit:
            raise UsageError(_unmatched(target, found, "linear"))
        ranks.update(dict.fromkeys(hit, config.rank))
    for target, rank in sorted(parameter_targets.items()):
        hit = [i for i, s in enumerate(found) if _hits(_weight_path(s), target)]
        if not hit and target in config.target_parameters:
            raise UsageError(_unmatched(target, found, "parameter"))
        if config.dora:
            raise UsageError(
                f"DoRA does not adapt {target}: peft {PEFT_VERSION} has no DoRA for stacked "
                "experts or bare weights (lora.ParamWrapper)"
            )
        ranks.update({i: max(rank, ranks.get(i, 0)) for i in hit})
        by_weight.update(i for i in hit if found[i].kind != "parameter")
    if not ranks:
        raise UsageError(
            f"nothing to adapt: peft {PEFT_VERSION} converts {', '.join(converted)} (transformers "
            "4 MoE names) to weights this model does not have; name its own modules"
        )
    chosen: dict[str, list[tuple[Site, int]]] = {}
    for i, rank in ranks.items():
        name = _param_key(_weight_path(found[i])) if i in by_weight else found[i].name
        chosen.setdefault(name, []).append((found[i], rank))
    _check_refused(family, names, chosen)
    modules = tuple(_adapted(name, hits, config.dora) for name, hits in sorted(chosen.items()))
    adapted = {s.generic for hits in chosen.values() for s, _ in hits}
    tensors = parameter_tensors(spec)
    biases = [
        t
        for t in tensors
        if _trained_bias(t, config.bias, adapted)
        and t.name.removesuffix(".bias") not in names.loose_biases
    ]
    saved = tuple((name, _saved(name, found, tensors)) for name in config.modules_to_save)
    return LoraReport(
        config=config,
        base_total=total_params(spec),
        modules=modules,
        saved=saved,
        bias_elements=sum(t.elements for t in biases),
        adapter_tensors=sum(
            s.copies * (2 + (config.dora and s.kind != "parameter"))
            for hits in chosen.values()
            for s, _ in hits
        ),
        bias_tensors=sum(t.copies for t in biases),
        saved_tensors=sum(
            t.copies
            for name in config.modules_to_save
            for t in _saved_tensors(name, found, tensors)
        ),
        converted=converted,
        adapter_shapes=tuple(
            (shape, s.copies)
            for hits in chosen.values()
            for s, r in hits
            for shape in adapter_shapes(s, r, config.dora)
        ),
        saved_shapes=tuple(
            (t.shape, t.copies)
            for name in config.modules_to_save
            for t in _saved_tensors(name, found, tensors)
        ),
    )


def _check_refused(
    family: str | None, names: FamilyNames, chosen: dict[str, list[tuple[Site, int]]]
) -> None:
    """peft's refusal of some module names in some model types (``out_proj`` and ``conv1d`` in
    the Mamba-based ones)."""
    refused = sorted(
        s.path
        for hits in chosen.values()
        for s, _ in hits
        if s.path.split(".")[-1] in names.refused
    )
    if refused:
        raise UsageError(
            f"peft {PEFT_VERSION} refuses LoRA on {', '.join(refused)} in {family} models (no "
            f"module named {' or '.join(names.refused)} in Mamba-based models); name the other "
            "layers (all-linear includes them)"
        )


def adapter_shapes(site: Site, rank: int, dora: bool) -> list[Shape]:
    """The tensors peft adds to one copy of ``site``: a linear layer (out, in) or a router
    weight gets ``lora_A`` (r, in) and ``lora_B`` (out, r), and with DoRA a magnitude (out,);
    a table (V, E) ``lora_embedding_A`` (r, V) and ``lora_embedding_B`` (E, r), DoRA (E,);
    stacked experts (X, a, b) A (X r, b) and B (a, X r)."""
    if len(site.shape) == 3:
        experts, a, b = site.shape
        return [(experts * rank, b), (a, experts * rank)]
    out, inp = site.shape
    if site.kind == "embedding":
        return [(rank, out), (inp, rank)] + ([(inp,)] if dora else [])
    return [(rank, inp), (out, rank)] + ([(out,)] if dora and site.kind != "parameter" else [])


def _adapted(name: str, hits: list[tuple[Site, int]], dora: bool) -> AdaptedModule:
    rank = hits[0][1]
    return AdaptedModule(
        name=name,
        modules=sum(s.copies for s, _ in hits),
        rank=rank,
        added=sum(s.copies * _added(s, r, dora) for s, r in hits),
        dora=sum(s.copies * _magnitudes(s) for s, _ in hits if dora and len(s.shape) == 2),
        shapes=tuple(dict.fromkeys(s.shape for s, _ in hits)),
    )


def _trained_bias(tensor: Tensor, mode: str, adapted: set[str]) -> bool:
    """Whether a base tensor is a bias the mode trains: every ``.bias`` for ``all``; those of
    adapted modules for ``lora_only``."""
    if not tensor.name.endswith(".bias") or mode == "none":
        return False
    return mode == "all" or tensor.name.removesuffix(".bias") in adapted


def _saved_tensors(name: str, found: list[Site], tensors: Iterable[Tensor]) -> list[Tensor]:
    """The tensors of the module ``name``, a table (token, position, per-layer, product-key
    experts') or the LM head, tied or not: its weight and bias."""
    site = next((s for s in found if s.kind in ("head", "embedding") and s.path == name), None)
    if site is None:
        known = sorted(s.path for s in found if s.kind in ("head", "embedding"))
        raise UsageError(
            f"{option('--modules-to-save', name)}: costcalc counts saved copies of the tables "
            f"and the LM head; this model's: {', '.join(known)}"
        )
    weight = Tensor(f"{site.generic}.weight", site.shape, "model")
    bias = [t for t in tensors if t.name == f"{site.generic}.bias"]
    return [weight, *bias]


def _saved(name: str, found: list[Site], tensors: Iterable[Tensor]) -> int:
    """Parameters of the trainable copy of ``name``."""
    return sum(t.elements for t in _saved_tensors(name, found, list(tensors)))


def _unmatched(target: str, found: list[Site], kind: str) -> str:
    """Which names exist, when a target matches none."""
    if kind == "linear":
        known = sorted({s.path for s in found if s.kind != "parameter"})
        return (
            f"target {target!r} matches no linear layer or table of this model; its: "
            + ", ".join(known)
            + " (or all-linear; stacked experts and bare router weights go in "
            + f"{option('--target-parameters')})"
        )
    known = sorted({_param_key(s.path) for s in found if s.kind == "parameter"})
    return f"target parameter {target!r} matches no stacked or bare weight of this model" + (
        f"; its: {', '.join(known)}" if known else " (it has none)"
    )
