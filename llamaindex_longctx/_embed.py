"""The app's embedding model, LlamaIndex's way: ``embed_model=`` or ``Settings.embed_model``."""

from __future__ import annotations

from longctx.embeddings import Encoder, get_encoder


def app_embed_model(embed_model=None):
    """``embed_model`` when given, else ``Settings.embed_model`` when the app set one, else
    ``None`` (the longctx default encoder, all-MiniLM-L6-v2).

    ``Settings.embed_model`` itself is not read when unset: llama-index-core would then build its
    own default (OpenAI), which needs a key and the network.
    """
    if embed_model is not None:
        return embed_model
    from llama_index.core import Settings

    return getattr(Settings, "_embed_model", None)


def app_encoder(embed_model=None) -> Encoder:
    """:func:`app_embed_model` wrapped as a :class:`longctx.embeddings.Encoder`."""
    return get_encoder(app_embed_model(embed_model))
