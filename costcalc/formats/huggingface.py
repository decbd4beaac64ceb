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
from costcalc.formats.families import Translator, model_types, text_location, translator
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
    text_type = text.get("model_type") if isinstance(text, dict) else None
    decoder = translator(text_type) if isinstance(text_type, str) else None
    if isinstance(text, dict) and isinstance(text_type, str) and decoder is not None:
        reader = Reader(doc, ("text_config",), text_type)
        return _text_decoder(reader, decoder, model_type, text_type, "text_config")
    located = text_location(model_type) if isinstance(model_type, str) else None
    decoder = translator(located[1]) if located is not None else None
    if text is None and located is not None and decoder is not None:
        path, located_type = located
        if _mapping_at(doc.data, path):
            where = ".".join(path) or "the top-level keys"
            return _text_decoder(
                Reader(doc, path, located_type), decoder, model_type, located_type, where
            )
    shown = text_type if model_type is None and isinstance(text_type, str) else model_type
    raise UnsupportedModelError(
        doc.path,
        [
            Problem(
                "model_type",
                f"unsupported model_type {shown!r}{_did_you_mean(shown)}; {unsupported_help()}; "
                f"costcalc reads {len(model_types())} families, listed in docs/huggingface.md",
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
    translation = reader.finish(fields)
    note = (
        f"{model_type} is multimodal: counted is its text decoder ({text_type}, {where}); "
        "the vision tower and projector are not counted, nor its audio or speech parts if any."
    )
    return replace(translation, notes=(note, *translation.notes), family=text_type)


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


def _mapping_at(data: Any, path: tuple[str, ...]) -> bool:
    """The file has a mapping at key path ``path``."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return isinstance(data, dict)
