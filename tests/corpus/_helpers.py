"""Picklable helpers for corpus builds in Ray workers (imported there as ``tests.corpus._helpers``:
the tests put the repository on the workers' PYTHONPATH)."""

from __future__ import annotations

import hashlib

import numpy as np

ANSWER = "Sure:\n* The text tells a story.\n* Someone does something.\n"


def tiny_garlic_lm():
    """``(model, tokenizer)``: the tiny random 2-layer Llama with SmolLM2's tokenizer."""
    from tests._tiny_models import smollm2_tokenizer, tiny_llama

    tok = smollm2_tokenizer()
    return tiny_llama(len(tok), seed=3), tok


class BulletForcer:
    """Logits processor making any model write :data:`ANSWER` then stop (EOS)."""

    def __init__(self, answer: str = ANSWER):
        self.answer = answer
        self._script = None

    def __call__(self, generated, logits):
        import torch

        if self._script is None:
            from tests._tiny_models import smollm2_tokenizer

            tok = smollm2_tokenizer()
            self._script = (
                tok(self.answer, add_special_tokens=False)["input_ids"],
                tok.eos_token_id,
            )
        script, eos = self._script
        out = torch.full_like(logits, -1e9)
        out[script[len(generated)] if len(generated) < len(script) else eos] = 0.0
        return out


def hash_embed(texts) -> np.ndarray:
    """A deterministic 32-d bag-of-words embedding (no model)."""
    out = np.zeros((len(texts), 32), np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 32] += 1.0
    return out
