"""Packaging for keras_bert_lite."""

from setuptools import find_packages, setup

setup(
    name="keras_bert_lite",
    version="0.1.0",
    description="BERT pre-training, fine-tuning, checkpoint interop and serving on Keras 3 + TensorFlow.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["keras_bert_lite", "keras_bert_lite.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        # The text layers set two private Keras members (tests/test_keras_internals.py): tested minor only.
        "keras>=3.15,<3.16",
        "tensorflow-datasets",
        "absl-py",
        "numpy",
        "safetensors",
        "tqdm",
    ],
    extras_require={
        # Test-time references: the original BERT code, Hugging Face, KerasHub, PyTorch (CPU build on disk).
        "test": [
            "pytest",
            "pytest-xdist",
            "hypothesis",
            "ruff",
            "bert-tensorflow==1.0.4",
            "torch==2.13.0",
            "transformers",
            "tokenizers",
            "huggingface_hub",  # the hub tests build its cache layout
            "keras-hub==0.32.*",  # KerasHub presets, read and written (tests/interop/test_keras_hub.py)
            "sentence-transformers==6.2.0",  # the reference of BertSentenceEncoder
            "pydot",  # keras.utils.model_to_dot / plot_model on our nested models
        ],
        # Loading models by Hugging Face Hub name (`from_checkpoint("hf://org/name")`).
        "hub": ["huggingface_hub"],
        # Benchmark peers.
        "bench": ["keras-hub==0.32.*", "torch==2.13.0", "transformers", "tokenizers", "bert-tensorflow==1.0.4",
                  "sentence-transformers==6.2.0"],
    },
)
