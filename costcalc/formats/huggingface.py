"""Hugging Face ``config.json`` files, recognised by ``model_type``.

Each family's translator (:mod:`costcalc.formats.families`) reads the keys its ``transformers``
configuration class defines, with that class's defaults, and states which tensors the modeling
code builds. Keys the count does not depend on are ignored; a missing key the count needs is an
error naming it. A multimodal config whose language model sits under ``text_config`` is read for
that text decoder, and says that the rest (the vision tower) is not counted; so is one without a
``text_config`` whose family declares where its text keys sit
(:func:`~costcalc.formats.families.text_location`): at the top level (Qwen2-VL's published
files) or deeper (Qwen2.5-Omni's ``thinker_config.text_config``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from costcalc.errors import Problem, UnsupportedModelError
from costcalc.files import Document
from costcalc.formats.architectures import CLASSES, transformers_model_types
from costcalc.formats.families import (
    PORTS,
    Translator,
    model_types,
    ported,
    text_location,
    text_model_type,
    translator,
)
from costcalc.formats.hf_classes import wrapper_tie
from costcalc.formats.hf_reader import Reader
from costcalc.formats.translation import Translation


def unsupported_help() -> str:
    """The two ways forward for a family costcalc does not read, the folder named as the caller
    gives one (``--config MODEL_FOLDER``, ``load(MODEL_FOLDER)``)."""
    from costcalc.option_names import in_api

    folder = "load(MODEL_FOLDER)" if in_api() else "--config MODEL_FOLDER"
    return (
        "costcalc has no formula for this family; two ways forward: read the exact total from "
        f"the checkpoint's safetensors headers ({folder}), or describe the model in costcalc "
        "YAML (docs/config.md, 'A family costcalc does not read')"
    )


def translate(doc: Document) -> Translation:
    """ModelSpec fields for a Hugging Face config, by its ``model_type``."""
    model_type = doc.data.get("model_type")
    family = translator(model_type) if isinstance(model_type, str) else None
    if family is not None:
        reader = Reader(doc, family=model_type)
        return replace(reader.finish(family(reader)), family=model_type)
    text = doc.data.get("text_config")
    written = text.get("model_type") if isinstance(text, dict) else None
    text_type = text_model_type(model_type, written) if isinstance(text, dict) else written
    decoder = translator(text_type) if isinstance(text_type, str) else None
    if isinstance(text, dict) and isinstance(text_type, str) and decoder is not None:
        reader = Reader(doc, ("text_config",), text_type)
        translation = _text_decoder(reader, decoder, model_type, text_type, "text_config")
        if text_type != written:
            given = "gives no model_type" if written is None else f"model_type {written!r}"
            note = (
                f"its text_config's {given}: read as {text_type!r}, as transformers' "
                f"{model_type} configuration class builds it"
            )
            translation = replace(translation, notes=(*translation.notes, note))
        return translation
    located = text_location(model_type) if isinstance(model_type, str) else None
    decoder = translator(located[1]) if located is not None else None
    if text is None and located is not None and decoder is not None:
        path, located_type = located
        if _mapping_at(doc.data, path):
            where = ".".join(path) or "the top-level keys"
            return _text_decoder(
                Reader(doc, path, located_type), decoder, model_type, located_type, where
            )
    by_class = _by_class(doc, model_type)
    if by_class is not None:
        return by_class
    shown = text_type if model_type is None and isinstance(text_type, str) else model_type
    raise UnsupportedModelError(
        doc.path,
        [
            Problem(
                "model_type",
                f"unsupported model_type {shown!r}{_classes_named(doc, model_type)}"
                f"{_did_you_mean(shown)}; {unsupported_help()}; costcalc reads "
                f"{len(model_types())} families, listed in docs/huggingface.md",
                doc.line_of(("model_type",)),
            )
        ],
    )


def _did_you_mean(model_type: Any) -> str:
    """`` (did you mean 'llama'?)`` for a ``model_type`` close to up to three families read."""
    if not isinstance(model_type, str):
        return ""
    import difflib

    known = model_types()
    lowered = model_type.strip().lower().replace("-", "_")
    close = [lowered] if lowered in known else []
    close += difflib.get_close_matches(lowered, known, n=3, cutoff=0.75)
    close = list(dict.fromkeys(close))[:3]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _text_decoder(
    reader: Reader, decoder: Translator, model_type: Any, text_type: str, where: str
) -> Translation:
    """The text decoder of a multimodal config, read by ``reader`` (at ``where`` in the file)
    with its family's translator ``decoder``, with a note that the rest is not counted."""
    fields = decoder(reader)
    if reader.prefix and isinstance(model_type, str):
        _wrapper_tying(reader, fields, model_type)
        _wrapper_head(reader, fields, model_type)
    translation = reader.finish(fields)
    note = (
        f"{model_type} is multimodal: counted is its text decoder ({text_type}, {where}); "
        "the vision tower and projector are not counted, nor its audio or speech parts if any."
    )
    return replace(translation, notes=(note, *translation.notes), family=text_type)


def _by_class(doc: Document, model_type: Any) -> Translation | None:
    """A config whose ``model_type`` transformers does not know (its own code builds it), read
    as the first class its ``architectures`` names whose family costcalc reads (Kimi-K2's
    ``kimi_k2`` files name ``DeepseekV3ForCausalLM``), with a note; None when it names none.
    A ``model_type`` transformers knows is built as that type, whatever ``architectures`` says;
    one without ``auto_map`` (no code of its own) is built by nothing."""
    listed = doc.data.get("architectures")
    if not isinstance(listed, list) or not _remote(doc, model_type):
        return None
    for name in listed:
        if not isinstance(name, str):
            continue
        remote = ported(name)
        if remote is not None:  # the note is the port's own
            reader = Reader(doc, family=PORTS[name])
            return replace(reader.finish(remote(reader)), family=PORTS[name])
        family = CLASSES.get(name)
        decoder = translator(family) if family is not None else None
        if family is not None and decoder is not None:
            reader = Reader(doc, family=family)
            translation = reader.finish(decoder(reader))
            note = (
                f"model_type {model_type!r} is not one transformers knows (the model's own code "
                f"builds it); read as {name}, the class its architectures names (model_type "
                f"{family}), as transformers builds that class from these keys."
            )
            return replace(translation, notes=(*translation.notes, note), family=family)
    return None


def _remote(doc: Document, model_type: Any) -> bool:
    """The config is of a ``model_type`` transformers does not know, built by the model's own
    code (its ``auto_map``, which ``trust_remote_code`` runs)."""
    return (
        isinstance(model_type, str)
        and model_type not in transformers_model_types()
        and isinstance(doc.data.get("auto_map"), dict)
    )


def _classes_named(doc: Document, model_type: Any) -> str:
    """For an error: the classes the ``architectures`` of a model_type transformers does not
    know names, none of them one costcalc reads."""
    listed = doc.data.get("architectures")
    names = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
    if not names or not _remote(doc, model_type):
        return ""
    shown = ", ".join(repr(name[:60]) for name in names[:4])
    return f" (its architectures names {shown}, none of them a class costcalc reads)"


def _wrapper_tying(reader: Reader, fields: dict[str, Any], model_type: str) -> None:
    """Tying as the multimodal wrapper ``model_type`` decides it: its conditional-generation
    model ties the LM head when the wrapper's built config says ``tie_word_embeddings``, which
    its class derives from the wrapper's key and the text config's (:func:`wrapper_tie`)."""
    key = "tie_word_embeddings"
    outer, inner = reader.doc.data.get(key, ...), reader.data.get(key, ...)
    if any(value is not ... and not isinstance(value, bool) for value in (outer, inner)):
        return  # not a switch: the text decoder's reading reports it
    tied = wrapper_tie(model_type, None if outer is ... else outer, None if inner is ... else inner)
    if tied is not None:
        fields["tie_embeddings"] = tied
        if outer is not ...:
            reader.key_names["tie_embeddings"] = key


WRAPPER_HEADS: dict[str, tuple[int, int]] = {"ovis2": (151643, 1536)}
"""Multimodal classes whose untied LM head the wrapper's own keys size, not the text config's:
``model_type`` -> the defaults of its ``vocab_size`` and ``hidden_size``.
Ovis2ForConditionalGeneration builds ``nn.Linear(config.hidden_size, config.vocab_size)`` of
``Ovis2Config`` (transformers/models/ovis2/modeling_ovis2.py; tied, it is the token table)."""


def _wrapper_head(reader: Reader, fields: dict[str, Any], model_type: str) -> None:
    """An untied LM head sized by the wrapper's keys (:data:`WRAPPER_HEADS`): its rows are the
    wrapper's ``vocab_size``; a width other than the text decoder's is refused (transformers
    builds that head, but its forward cannot apply it to the decoder's hidden states)."""
    sizes = WRAPPER_HEADS.get(model_type)
    if sizes is None or fields.get("tie_embeddings") is not False:
        return
    data = reader.doc.data
    rows, width = data.get("vocab_size", sizes[0]), data.get("hidden_size", sizes[1])
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (rows, width)):
        return  # the text decoder's own reading reports a bad size
    if width != fields.get("d_model"):
        problem = Problem(
            "hidden_size",
            f"not supported: {model_type}'s untied LM head is {width} wide (the top-level "
            f"hidden_size{'' if 'hidden_size' in data else ', by default'}), its text decoder "
            f"{fields.get('d_model')}: transformers builds that head, but its forward cannot "
            "apply it",
            reader.doc.line_of(("hidden_size",)) if "hidden_size" in data else None,
        )
        reader.problems.append(problem)
        return
    if rows != fields.get("vocab_size"):
        fields["head_rows"] = rows
        if "vocab_size" in data:
            reader.key_names["head_rows"] = "vocab_size"


def _mapping_at(data: Any, path: tuple[str, ...]) -> bool:
    """The file has a mapping at key path ``path``."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return isinstance(data, dict)
