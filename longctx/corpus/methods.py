"""One builder per index kind: loads its model once (:meth:`Builder.setup`), then builds and saves
one document's index per call (:meth:`Builder.build`). A Ray actor holds one builder; the
sequential path uses one in-process.

- ``mixpr``: :class:`longctx.MixPRIndex` (Alonso & Millidge, "Mixture-of-PageRanks: Replacing
  Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 3). CPU only, no
  model: Ray runs it as tasks.
- ``diversity``: :class:`longctx.DiversityIndex` (sentence embeddings; Carbonell & Goldstein
  1998 MMR, and farthest-point sampling as in arXiv:2502.09017): one sentence encoder per worker.
- ``garlic``: :func:`longctx.garlic.build_hwdag` (Wang, Xiang, Gui & He, "GARLIC", 2024,
  arXiv:2410.04790, sec. 3.1): one causal LM (and node encoder) per worker.
- ``youra`` has no query-independent model work to persist and is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["METHODS", "Builder", "make_builder", "options_fingerprint"]

METHODS = ("mixpr", "diversity", "garlic")
#: Methods that load a model: Ray runs them in an actor pool.
MODEL_METHODS = ("diversity", "garlic")

_GARLIC_KEYS = {
    "model",
    "device",
    "encoder",
    "chunk_tokens",
    "batch_tokens",
    "max_new_tokens",
    "max_levels",
    "layers",
    "logits_processor",
}
_DIVERSITY_KEYS = {
    "encoder",
    "device",
    "token_counter",
    "unit",
    "sentence_backend",
    "batch_size",
    "max_unit_tokens",
}


def _garlic_keys() -> set[str]:
    import inspect

    from longctx.garlic import build_hwdag

    keys = set(_GARLIC_KEYS)
    if "batch_size" in inspect.signature(build_hwdag).parameters:  # batched generation
        keys.add("batch_size")
    return keys


def check_method(method: str, options: dict) -> None:
    """Refuse an unknown method, an option it does not take or a bad option value, before
    anything is built or recorded: the method's settings are built as its build would
    (MixPR: its :class:`~longctx.mixpr.MixPRConfig`; GARLIC:
    :func:`longctx.garlic.options.check_build_options`; diversity: each setting checked).
    Models and encoders are only loaded by the build.

    Raises
    ------
    ValueError, TypeError
        Naming the method or the option.
    """
    if method == "youra":
        raise ValueError(
            "method='youra' is not a corpus index: YOURA scores each query from the model's "
            "attention over the text at query time and keeps no query-independent model work "
            "to persist; build it per query (longctx.YOURA). Use 'mixpr', 'diversity' or 'garlic'"
        )
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    # only GARLIC's keys import its decoder (and transformers): never for the other methods
    allowed = (
        _garlic_keys() if method == "garlic" else _DIVERSITY_KEYS if method == "diversity" else None
    )
    if allowed is not None:
        bad = sorted(set(options) - allowed)
        if bad:
            raise ValueError(
                f"method {method!r} takes no option(s) {bad} (it takes {sorted(allowed)})"
            )
    if method == "mixpr" and "progress" in options:
        raise ValueError("progress is an argument of build_indexes, not a MixPR option")
    _CHECKS[method](options)


def _check_mixpr(options: dict) -> None:
    """A MixPR corpus's options: ``preset``, ``chunk`` and the :class:`~longctx.mixpr.MixPRConfig`
    fields, the config built (:func:`longctx.corpus.shards.single.check_mixpr_options`)."""
    from longctx.corpus.shards.single import check_mixpr_options

    check_mixpr_options(options)


def _check_diversity(options: dict) -> None:
    """The :meth:`DiversityIndex.from_texts` settings of ``options``, typed and in range."""
    from longctx.checks import check_choice, check_int
    from longctx.diversity.index import UNITS
    from longctx.text import SENTENCE_BACKENDS

    check_choice(options.get("unit", "sentence"), "unit", UNITS)
    check_choice(options.get("sentence_backend", "auto"), "sentence_backend", SENTENCE_BACKENDS)
    check_int(options.get("batch_size", 256), "batch_size", minimum=1)
    check_int(options.get("max_unit_tokens", 128), "max_unit_tokens", minimum=1, allow_none=True)
    counter = options.get("token_counter")
    if counter is not None and not callable(counter):
        raise TypeError(f"token_counter must be callable, got {type(counter).__name__}")


def _check_garlic(options: dict) -> None:
    """The :func:`build_hwdag` settings of ``options`` (:func:`check_build_options`) and the
    model given as a name, a path or a callable returning ``(model, tokenizer)``."""
    from longctx.garlic.options import check_build_options

    kw = {k: v for k, v in options.items() if k not in ("model", "device", "encoder")}
    check_build_options(**kw)
    model = options.get("model")
    if model is not None and not (isinstance(model, (str, os.PathLike)) or callable(model)):
        raise TypeError(
            "model must be a model name or path, or a callable returning (model, tokenizer); "
            f"got {type(model).__name__}"
        )


_CHECKS = {"mixpr": _check_mixpr, "diversity": _check_diversity, "garlic": _check_garlic}


def _describe(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_describe(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _describe(x) for k, x in sorted(v.items())}
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    name = getattr(v, "__qualname__", None) or type(v).__qualname__
    return f"<{getattr(v, '__module__', '?')}.{name}>"


def describe_options(options: dict) -> dict:
    """``options`` as JSON (objects and callables by their qualified name)."""
    return _describe(dict(options))


def options_fingerprint(method: str, options: dict) -> str:
    """sha256 of the method and its described options (stored in the corpus manifest)."""
    blob = json.dumps([method, describe_options(options)], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Builder:
    """Builds one document's index into a local folder; subclasses per method."""

    method = ""

    def __init__(self, options: dict):
        self.options = dict(options)
        self._ready = False

    def setup(self) -> None:
        """Load the model(s) once (idempotent)."""
        if not self._ready:
            self._setup()
            self._ready = True

    def _setup(self) -> None:
        pass

    def build(self, text: str, out_dir: Path) -> dict:
        """Build and save the index of ``text`` into ``out_dir``; returns ``{"tokens": int}``
        (the document's tokens as the index counts them) and method extras."""
        self.setup()
        return self._build(text, Path(out_dir))

    def _build(self, text: str, out_dir: Path) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


class MixPRBuilder(Builder):
    method = "mixpr"

    def _build(self, text, out_dir):
        from longctx.mixpr import MixPRIndex

        index = MixPRIndex.from_texts([text], **self.options)
        index.save(out_dir)
        return {"tokens": int(index.token_counts.sum())}


class DiversityBuilder(Builder):
    method = "diversity"

    def _setup(self):
        from longctx.embeddings import get_encoder

        opts = self.options
        self.encoder = get_encoder(opts.get("encoder"), device=opts.get("device"))

    def _build(self, text, out_dir):
        from longctx.diversity import DiversityIndex

        kw = {k: v for k, v in self.options.items() if k not in ("encoder", "device")}
        kw.setdefault("progress", False)
        index = DiversityIndex.from_texts([text], self.encoder, **kw)
        index.save(out_dir)
        return {"tokens": int(index.token_counts.sum())}


class GarlicBuilder(Builder):
    method = "garlic"

    def _setup(self):
        opts = self.options
        model = opts.get("model")
        if callable(model):
            self.model, self.tokenizer = model()
        else:
            from longctx.models import load_causal_lm

            self.model, self.tokenizer = load_causal_lm(model, device=opts.get("device"))
        enc = opts.get("encoder")
        if enc is False:
            self.encoder = False
        else:
            from longctx.embeddings import get_encoder

            self.encoder = get_encoder(enc, device=opts.get("device"))

    def _build(self, text, out_dir):
        from longctx.garlic import build_hwdag

        kw = {k: v for k, v in self.options.items() if k not in ("model", "device", "encoder")}
        graph = build_hwdag(
            [text],
            self.model,
            self.tokenizer,
            out_dir=out_dir,
            encoder=self.encoder,
            progress=False,
            **kw,
        )
        return {
            "tokens": int(sum(n.n_tokens for n in graph.nodes if n.level == 1)),
            "tokens_generated": int(graph.info.get("tokens_generated_this_run", 0)),
        }


_BUILDERS = {"mixpr": MixPRBuilder, "diversity": DiversityBuilder, "garlic": GarlicBuilder}


def make_builder(method: str, options: dict) -> Builder:
    """The :class:`Builder` of ``method`` with ``options`` (checked by :func:`check_method`)."""
    check_method(method, options)
    return _BUILDERS[method](options)
