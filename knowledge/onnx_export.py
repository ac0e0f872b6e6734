"""The ONNX export of a sentence-transformers model, run as a process of its own by knowledge/embeddings.py:
``python -m knowledge.onnx_export export FOLDER TARGET`` or ``quantize SOURCE TARGET``.

torch is loaded here and only here: the process exits once the file is written, so the web and Celery
workers that asked for it load ONNX Runtime alone. No Django: it reads a model folder, writes a file.
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

ONNX_OPSET = 17


def export_onnx(folder: Path, target: Path) -> None:
    """Export the folder's Transformer with mean pooling to ``target``.

    A BERT model is exported with eager attention, whose graph ONNX Runtime's optimizer recognises, and
    leaves it with its attention, embedding LayerNorm, residual LayerNorms and GELUs fused into one
    operator each (the fused ops are ONNX Runtime's own, which is what runs the file).
    """
    import torch
    from transformers import AutoModel

    class MeanPooled(torch.nn.Module):
        def __init__(self, transformer):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            return (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    transformer = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns about every shape-dependent branch; the dynamic axes cover those it names.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MeanPooled(transformer),
            (sample, sample, torch.zeros_like(sample)),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "embedding": {0: "batch"},
            },
            opset_version=ONNX_OPSET,
            dynamo=False,  # the TorchScript exporter: needs `onnx` but not `onnxscript`
        )
    config = transformer.config
    if config.model_type == "bert":
        from onnxruntime.transformers.optimizer import optimize_model

        optimize_model(
            str(target),
            model_type="bert",
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
        ).save_model_to_file(str(target))


def quantize_onnx(source: Path, target: Path) -> None:
    """Write ``source`` with its MatMul weights quantized to int8 per channel, and activations per call."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantizer logs on the root logger, a line for every tensor of the fused operators it cannot type.
    root = logging.getLogger()

    def quiet(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root.addFilter(quiet)
    try:
        quantize_dynamic(
            source,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            # The fused operators are ONNX Runtime's own, which ONNX's shape inference cannot type.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.removeFilter(quiet)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    step, source, target = argv
    {"export": export_onnx, "quantize": quantize_onnx}[step](Path(source), Path(target))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
