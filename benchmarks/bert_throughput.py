"""Training and inference throughput of keras_bert_lite vs KerasHub vs Hugging Face, one table.

Each measurement runs in its own fresh process (so peak memory is per library and per job) on the
same machine in the same invocation, next to a plain `tf.matmul` ceiling and the model's matmuls
alone. Measurements are repeated `--rounds` times, interleaved, and the fastest run of each is
kept, so that load from other processes on a shared machine hurts every row alike. The ceiling is
the best of many short samples (its own process each round, and once more after every TensorFlow
row): one sample could catch a loaded moment, and a low ceiling would flatter every row's `% ceil`.

    python benchmarks/bert_throughput.py                      # small-like and base, all peers
    python benchmarks/bert_throughput.py --configs=small --steps=10
    # on a GPU: BERT-base and BERT-large, mixed precision and XLA, a GPU-sized batch
    python benchmarks/bert_throughput.py --configs=base,large --batch_size=64 \
        --libraries=ours_xla_bf16,ours_bf16,keras_hub_xla_bf16,hf_bf16

Work measured:
- train: one pre-training step on random ids: encoder forward + MLM logits gathered at 20 masked
  positions (+ NSP for keras_bert_lite; KerasHub's BertMaskedLM and Hugging Face's
  BertForMaskedLM have no NSP head, a [batch, H] x [H, 2] difference) + AdamW update.
- infer: encoder forward only, dropout off.
- features (ours only): `BertFeatureExtractor`'s default features (the last four layers,
  concatenated), dropout off; a line under its table gives its step time over the encoder's alone
  (ours' `infer` step), the two timed in turns in the row's process (see `extractor_over_encoder`):
  the extractor should cost no more than that encoder.
Rows: `ours`/`keras_hub` run the step as a plain `tf.function`, `*_xla*` with `jit_compile=True`;
`*_bf16` rows use bfloat16 matmuls (Keras' `mixed_bfloat16` policy, oneDNN bf16 kernels on CPUs;
for Hugging Face `torch.autocast(device, torch.bfloat16)`); `hf` is PyTorch eager. `matmuls`/
`matmuls_xla` run only the matrix products the FLOP count credits (same shapes, with the
attention's head transposes; for training the forward's and their input and kernel gradients):
a practical floor for the step time of any TensorFlow implementation that runs all the counted
work (ours' training step runs less of it, see `% exec`), so the ratio against them says how much
of ours' step goes to everything but the matmuls. The ratio column compares ours' best of the
same precision (float32: `ours`, `ours_xla`; bf16: `ours_bf16`, `ours_xla_bf16`) with each row.
Under each table a line divides the fastest `matmuls*` row by each peer's fastest float32 row: the
most a float32 step that runs all of those products can lead that peer by on this device.
Devices: TensorFlow rows run on TensorFlow's default device (its first GPU if it sees one, where
float32 matmuls use TF32), Hugging Face rows on CUDA if torch sees it; the table's header names
both. On a GPU `peak MB` and `work MB` are the device allocator's peak (TensorFlow's
`get_memory_info`, torch's `max_memory_allocated`), the ceiling is an [8192, 8192] x [8192, 8192]
matmul (the CPU's [4096, 768] x [768, 3072] takes microseconds there), and a `large` training
table is followed by NVIDIA's published figure for TF2 BERT-large.
Memory: `peak MB` is the process's maximum resident set; `work MB` is that minus the resident set
right after importing the framework and the library (the frameworks' own libraries differ in size
by hundreds of MB, and the resident share of TensorFlow's varies with the pages mapped): the
memory the work itself needs.
FLOPs are counted as: forward = 2 x (transformer-layer parameters) x tokens + attention
4 x S^2 x H x L x B + MLM head 2 x (H^2 + H x V) x B x P; training = 3 x forward. Embedding
look-ups are not counted. GFLOP/s = FLOPs / step time, the same count for every library (model
FLOPs). keras_bert_lite's pre-trainer runs its last transformer layer only at [CLS] and the 20
masked positions (the only outputs its losses read; the peers compute all 128), so it executes
fewer FLOPs than it is credited with: `% exec` divides the FLOPs each row really executes by the
ceiling (the hardware's utilisation), `% ceil` the model FLOPs. bf16 rows are divided by a bf16
`tf.matmul` ceiling measured the same way (AVX512_BF16 runs bf16 products faster than float32
ones, so a float32 ceiling would flatter the bf16 rows).

Requires the `bench` extra: `pip install -e '.[bench]'` (keras-hub, torch, transformers).
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import tqdm  # noqa: E402
from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS


def define_flags():
    """The command-line flags, defined only when the script runs (importing it defines none)."""
    flags.DEFINE_list(
        "configs", ["small", "base"],
        "Configs: small (L4 H256 A4 I1024, batch 32), base (L12 H768 A12 I3072, batch 8), large (L24 H1024 "
        "A16 I4096, batch 8).",
    )
    flags.DEFINE_integer("batch_size", None, "Sequences per step for every config (default: each config's own).")
    flags.DEFINE_list("modes", ["train", "infer"], "Jobs to measure: train, infer, features (ours' rows only).")
    flags.DEFINE_list(
        "libraries",
        ["ours", "ours_xla", "keras_hub", "keras_hub_xla", "hf", "matmuls", "matmuls_xla",
         "ours_bf16", "keras_hub_bf16", "hf_bf16"],
        "Rows to measure: ours, keras_hub, hf, matmuls; suffix _xla: steps compiled with "
        "jit_compile=True (not hf); _bf16, also after _xla: bfloat16 matmuls (Keras mixed_bfloat16 "
        "policy / torch.autocast), compared only with bf16 rows (not matmuls); matmuls: only the "
        "counted matrix products.",
    )
    flags.DEFINE_integer("steps", 20, "Timed steps per measurement (after warm-up).")
    flags.DEFINE_integer("warmup", 3, "Untimed steps (tracing, compilation).")
    flags.DEFINE_integer(
        "rounds", 2, "Each measurement is repeated this many times, rounds interleaved across rows, "
        "and the fastest kept (the machine may be shared)."
    )
    flags.DEFINE_integer(
        "ceiling_windows", 5, "Timed windows of 4 matmuls per ceiling sample (after 2 untimed ones); the "
        "fastest window is the sample."
    )
    flags.register_validator("ceiling_windows", lambda value: value > 0, "--ceiling_windows must be positive.")
    flags.DEFINE_list(
        "ceiling_shape", None, "m,k,n of the ceiling's [m, k] x [k, n] matmul (default: 4096,768,3072 on a CPU, "
        "8192,8192,8192 on a GPU); a small one only checks that the script runs end to end."
    )
    flags.register_validator("ceiling_shape", lambda value: value is None or len(value) == 3,
                             "--ceiling_shape takes three sizes: m,k,n.")
    flags.DEFINE_string("worker", None, "Internal: run one measurement 'library:config:mode' and print JSON.")

SEQ, PREDICTIONS, VOCAB = 128, 20, 30522
CONFIGS = {  # layers, hidden, heads, intermediate, default batch
    "small": (4, 256, 4, 1024, 32),
    "base": (12, 768, 12, 3072, 8),
    "large": (24, 1024, 16, 4096, 8),
}
ROWS = {  # library, jit_compile, bf16
    f"{library}{xla}{bf16}": (library, bool(xla), bool(bf16))
    for library in ("ours", "keras_hub", "hf", "matmuls")
    for xla in ("", "_xla")
    for bf16 in ("", "_bf16")
    if not (library == "hf" and xla) and not (library == "matmuls" and bf16)
}
# NVIDIA's published TF2 BERT-large pre-training throughput: one A100-80GB, mixed precision, seq 128.
NVIDIA_BERT_LARGE_SEQ_PER_S = 485.6


MODES = ("train", "infer", "features")


def libraries(mode: str) -> list[str]:
    """The `--libraries` rows measured in `mode`: `features` has ours' rows only."""
    return [lib for lib in FLAGS.libraries if mode != "features" or ROWS[lib][0] == "ours"]


def flops_per_step(config: str, mode: str, batch: int) -> float:
    layers, hidden, _, intermediate, _ = CONFIGS[config]
    layer_params = 4 * hidden * hidden + 2 * hidden * intermediate
    tokens = batch * SEQ
    forward = 2 * layer_params * layers * tokens + 4 * SEQ * SEQ * hidden * layers * batch
    if mode != "train":
        return forward
    forward += 2 * (hidden * hidden + hidden * VOCAB) * batch * PREDICTIONS
    return 3 * forward


def executed_flops_per_step(library: str, config: str, mode: str, batch: int) -> float:
    """`flops_per_step` less what a library skips: ours' training step runs its last layer's
    queries, attention output and feed-forward at 1 + PREDICTIONS positions, keys and values at all."""
    flops = flops_per_step(config, mode, batch)
    if mode != "train" or ROWS[library][0] != "ours":
        return flops
    _, hidden, _, intermediate, _ = CONFIGS[config]
    skipped_rows = batch * (SEQ - 1 - PREDICTIONS)
    skipped_forward = (
        2 * (2 * hidden * hidden + 2 * hidden * intermediate) * skipped_rows  # query, output, FFN
        + 4 * SEQ * hidden * skipped_rows  # attention scores and context
    )
    return flops - 3 * skipped_forward


def random_batch(batch: int):
    import numpy as np

    rng = np.random.default_rng(0)
    return {
        "ids": rng.integers(1000, VOCAB, (batch, SEQ)).astype("int32"),
        "mask": np.ones((batch, SEQ), "int32"),
        "types": np.zeros((batch, SEQ), "int32"),
        "positions": np.sort(rng.integers(1, SEQ, (batch, PREDICTIONS)), axis=1).astype("int32"),
        "labels": rng.integers(1000, VOCAB, (batch, PREDICTIONS)).astype("int32"),
        "nsp": rng.integers(0, 2, (batch, 1)).astype("int32"),
    }


def _time(step, steps: int, warmup: int) -> float:
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def tf_step(library: str, config: str, mode: str, batch: int, xla: bool, bf16: bool = False):
    """Returns a no-argument callable running one step with TensorFlow (ours or KerasHub)."""
    import keras
    import tensorflow as tf

    if bf16:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    layers, hidden, heads, intermediate, _ = CONFIGS[config]
    data = random_batch(batch)
    if library == "ours":
        import keras_bert_lite as kbl

        bert_config = kbl.BertConfig(
            vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=intermediate,
        )
        encoder = kbl.BertEncoder(bert_config)
        inputs = {"input_word_ids": data["ids"], "input_mask": data["mask"], "input_type_ids": data["types"]}
        if mode == "infer":
            return tf.function(lambda: encoder(inputs, training=False)["sequence_output"], jit_compile=xla)
        if mode == "features":
            extractor = kbl.BertFeatureExtractor(encoder)
            return tf.function(lambda: extractor(inputs, training=False), jit_compile=xla)
        model = kbl.BertPretrainer(encoder)
        features = {**inputs, "masked_lm_positions": data["positions"]}
        labels = {"masked_lm_ids": data["labels"], "masked_lm_weights": tf.ones(data["labels"].shape),
                  "next_sentence_labels": data["nsp"]}

        def loss_fn():
            return kbl.pretraining_losses(labels, model(features, training=True))[0]

        adamw = kbl.AdamW  # keras.optimizers.AdamW under our registered name
    else:
        import keras_hub

        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=VOCAB, num_layers=layers, num_heads=heads, hidden_dim=hidden,
            intermediate_dim=intermediate, max_sequence_length=512,
        )
        inputs = {"token_ids": data["ids"], "padding_mask": data["mask"], "segment_ids": data["types"]}
        if mode == "infer":
            return tf.function(lambda: backbone(inputs, training=False)["sequence_output"], jit_compile=xla)
        model = keras_hub.models.BertMaskedLM(backbone)
        features = {**inputs, "mask_positions": data["positions"]}
        loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        def loss_fn():
            return loss_object(data["labels"], model(features, training=True))

        adamw = keras.optimizers.AdamW

    optimizer = adamw(1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=xla)
    def train_step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return lambda: train_step().numpy()


def matmuls_step(config: str, mode: str, batch: int, xla: bool):
    """Returns a no-argument `tf.function` that runs only the matrix products `flops_per_step`
    counts: per layer the fused query/key/value product, attention scores and context, attention
    output and both feed-forward products on all tokens; for training also the MLM transform and
    decoder at the masked rows, then the input and kernel gradients of all of them (the tape's
    backward). No biases, activations, normalizations or softmax. It returns a list of float32
    tensors: the [tokens, H] output (infer) or the gradients (train). Each layer's last kernel is
    scaled once, before timing, so that the values stay near 1 (no denormals, no overflow)."""
    import tensorflow as tf

    layers, hidden, heads, intermediate, _ = CONFIGS[config]
    tokens, size = batch * SEQ, hidden // heads

    def kernel(fan_in, fan_out):
        return tf.Variable(tf.random.normal((fan_in, fan_out), stddev=fan_in**-0.5))

    def layer(x, qkv, attention_output, inner, outer):
        projected = tf.reshape(tf.matmul(x, qkv), (batch, SEQ, 3, heads, size))
        query, key, value = tf.unstack(tf.transpose(projected, (2, 0, 3, 1, 4)))
        context = tf.matmul(tf.matmul(query, key, transpose_b=True), value)
        context = tf.reshape(tf.transpose(context, (0, 2, 1, 3)), (tokens, hidden))
        return tf.matmul(tf.matmul(tf.matmul(context, attention_output), inner), outer)

    # Every sequence the same: attention is cubic in its input, so sequences of different scales
    # would drift apart by orders of magnitude per layer. (The values do not change the speed.)
    inputs = tf.Variable(tf.tile(tf.random.normal((SEQ, hidden)), (batch, 1)))
    kernels, x = [], inputs
    for _ in range(layers):
        kernels.append(
            [kernel(hidden, 3 * hidden), kernel(hidden, hidden), kernel(hidden, intermediate),
             kernel(intermediate, hidden)]
        )
        x = layer(x, *kernels[-1])
        scale = tf.math.reduce_std(x)
        kernels[-1][-1].assign(kernels[-1][-1] / scale)
        x = x / scale
    head = [kernel(hidden, hidden), tf.Variable(tf.random.normal((VOCAB, hidden), stddev=hidden**-0.5))]

    def forward():
        x = inputs
        for layer_kernels in kernels:
            x = layer(x, *layer_kernels)
        if mode == "infer":
            return x
        rows = tf.reshape(tf.reshape(x, (batch, SEQ, hidden))[:, :PREDICTIONS], (-1, hidden))
        return tf.matmul(tf.matmul(rows, head[0]), head[1], transpose_b=True)

    variables = [inputs, *head] + [k for layer_kernels in kernels for k in layer_kernels]
    upstream = tf.random.normal((batch * PREDICTIONS, VOCAB))

    @tf.function(jit_compile=xla)
    def step():
        if mode == "infer":
            return [forward()]
        with tf.GradientTape() as tape:
            outputs = forward()
        return tape.gradient(outputs, variables, output_gradients=upstream)

    return step


def torch_step(config: str, mode: str, batch: int, bf16: bool = False):
    """Returns a no-argument callable running one step of Hugging Face BertForMaskedLM on torch
    (CUDA if torch sees it, else the CPU); it returns once the device has finished the step."""
    import torch
    import transformers

    torch.set_num_threads(os.cpu_count() or 1)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    synchronize = torch.cuda.synchronize if device == "cuda" else lambda: None
    layers, hidden, heads, intermediate, _ = CONFIGS[config]
    data = {k: torch.from_numpy(v).long().to(device) for k, v in random_batch(batch).items()}
    hf_config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=intermediate, hidden_act="gelu_new",
    )
    model = transformers.BertForMaskedLM(hf_config).to(device)
    if mode == "infer":
        model.eval()

        def infer():
            with torch.inference_mode(), torch.autocast(device, torch.bfloat16, enabled=bf16):
                model.bert(input_ids=data["ids"], attention_mask=data["mask"], token_type_ids=data["types"])
            synchronize()

        return infer
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)

    def train():
        with torch.autocast(device, torch.bfloat16, enabled=bf16):
            hidden_states = model.bert(
                input_ids=data["ids"], attention_mask=data["mask"], token_type_ids=data["types"]
            ).last_hidden_state
            index = data["positions"][..., None].expand(-1, -1, hidden_states.shape[-1])
            logits = model.cls(torch.gather(hidden_states, 1, index)).float()
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), data["labels"].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        synchronize()

    return train


def _gpu_name(library: str) -> str | None:
    """The GPU a row's framework runs on by default (torch for `hf`, else TensorFlow), or None."""
    if library == "hf":
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else None
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)


def matmul_ceilings() -> dict:
    """The hardware's practical ceiling: {"float32": GFLOP/s, "bf16": GFLOP/s} of
    `_matmul_gflops` in each precision, on TensorFlow's default device."""
    import tensorflow as tf

    # A GPU multiplies the CPU's shape in microseconds, which would time the call, not the matmul.
    if FLAGS.ceiling_shape:
        shape = tuple(int(size) for size in FLAGS.ceiling_shape)
    else:
        shape = (8192, 8192, 8192) if _gpu_name("tf") else (4096, 768, 3072)
    return {"float32": _matmul_gflops(tf.float32, shape), "bf16": _matmul_gflops(tf.bfloat16, shape)}


def _matmul_gflops(dtype, shape: tuple[int, int, int]) -> float:
    """GFLOP/s of an [m, k] x [k, n] tf.matmul in `dtype` (`shape` = (m, k, n)): after 2 untimed
    matmuls, the best of --ceiling_windows windows of 4 (long enough that the call overhead is
    negligible for the CPU's shape)."""
    import tensorflow as tf

    m, k, n = shape
    a = tf.cast(tf.random.normal((m, k)), dtype)
    b = tf.cast(tf.random.normal((k, n)), dtype)
    step = tf.function(lambda: tf.reduce_sum(tf.cast(tf.matmul(a, b), tf.float32)))
    for _ in range(2):
        step().numpy()
    seconds = min(_time(lambda: step().numpy(), 4, 0) for _ in range(FLAGS.ceiling_windows))
    return 2 * m * k * n / seconds / 1e9


def _resident_mb() -> float:
    """The current resident set of this process, in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _import_library(library: str) -> None:
    """Imports the framework and the library a row needs (so `work MB` excludes them)."""
    if library == "hf":
        import torch  # noqa: F401
        import transformers  # noqa: F401
    else:
        import keras  # noqa: F401
        import tensorflow  # noqa: F401

        if library == "ours":
            import keras_bert_lite  # noqa: F401
        elif library == "keras_hub":
            import keras_hub  # noqa: F401


def _gpu_peak_mb(library: str) -> float:
    """The GPU allocator's peak for this process (torch's for `hf`, else TensorFlow's), in MB."""
    if library == "hf":
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    import tensorflow as tf

    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def run_worker(spec: str) -> dict:
    row, config, mode = spec.split(":")
    if row == "ceiling":
        return {"ceilings": matmul_ceilings()}
    library, xla, bf16 = ROWS[row]
    batch = FLAGS.batch_size or CONFIGS[config][4]
    _import_library(library)
    imported_mb = _resident_mb()
    if library == "hf":
        step = torch_step(config, mode, batch, bf16=bf16)
    elif library == "matmuls":
        products = matmuls_step(config, mode, batch, xla=xla)

        def step():
            return [value.numpy() for value in products()]
    else:
        step = tf_step(library, config, mode, batch, xla=xla, bf16=bf16)
    seconds = _time(step, FLAGS.steps, FLAGS.warmup)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    work_mb = peak_mb - imported_mb
    gpu = _gpu_name(library)
    if gpu:  # on an accelerator, its memory is what the work needs
        peak_mb = work_mb = _gpu_peak_mb(library)
    result = {
        "seq_per_s": batch / seconds,
        "gflops": flops_per_step(config, mode, batch) / seconds / 1e9,
        "executed_gflops": executed_flops_per_step(row, config, mode, batch) / seconds / 1e9,
        "peak_mb": peak_mb,
        "work_mb": work_mb,
        "gpu": gpu,
    }
    if mode == "features":  # after the memory readings, which stay the extractor's alone
        encoder_step = tf_step(library, config, "infer", batch, xla=xla, bf16=bf16)
        result["over_encoder"] = extractor_over_encoder(step, encoder_step, FLAGS.steps, FLAGS.warmup)
    if library != "hf":  # one more ceiling sample, right after a TensorFlow row
        result["ceilings"] = matmul_ceilings()
    return result


def extractor_over_encoder(extractor_step, encoder_step, steps: int, warmup: int) -> float:
    """The extractor's step time over the encoder's alone, the two run in turns (one step each,
    `steps` turns, after `warmup` steps of the encoder; the extractor's are done) in one process,
    each one's fastest step kept: load from elsewhere only ever adds time, so it skews neither,
    whereas the two rows' own times come from separate processes at different moments of a shared
    machine (enough to move their ratio by 20 %)."""
    for _ in range(warmup):
        encoder_step()
    turns = [(_time(extractor_step, 1, 0), _time(encoder_step, 1, 0)) for _ in range(steps)]
    return min(extractor for extractor, _ in turns) / min(encoder for _, encoder in turns)


def measure(spec: str) -> dict:
    argv = [sys.executable, __file__, f"--worker={spec}", f"--steps={FLAGS.steps}", f"--warmup={FLAGS.warmup}",
            f"--ceiling_windows={FLAGS.ceiling_windows}"]
    if FLAGS.ceiling_shape:
        argv.append(f"--ceiling_shape={','.join(FLAGS.ceiling_shape)}")
    if FLAGS.batch_size:
        argv.append(f"--batch_size={FLAGS.batch_size}")
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of(results: list[dict]) -> dict:
    """The fastest of repeated measurements (the peak memory of that same run)."""
    good = [r for r in results if "error" not in r]
    return max(good, key=lambda r: r["gflops"]) if good else results[-1]


def matmuls_lead_line(rows: dict) -> str | None:
    """How much faster the step's matrix products alone (the fastest `matmuls*` row) run than each
    peer's fastest float32 row, from a table's `rows` ({row name: measurement}): the most a float32
    step that runs all of these products can lead that peer by on this device. None without a
    matmuls row or a float32 peer row."""

    def fastest(library: str) -> float:
        return max((r["seq_per_s"] for lib, r in rows.items()
                    if "error" not in r and ROWS[lib][0] == library and not ROWS[lib][2]), default=0)

    products = fastest("matmuls")
    leads = [f"{products / fastest(peer):.2f}x {peer}'s" for peer in ("keras_hub", "hf") if fastest(peer)]
    if not products or not leads:
        return None
    return (f"the matmuls alone ({products:.1f} seq/s) are {' and '.join(leads)} best float32 row: "
            "the most a float32 step running all of them can lead by here")


def main(argv):
    del argv
    if FLAGS.worker:
        print(json.dumps(run_worker(FLAGS.worker)))
        return
    unknown = sorted(set(FLAGS.libraries) - set(ROWS)) + sorted(set(FLAGS.configs) - set(CONFIGS))
    if unknown:
        raise app.UsageError(f"unknown rows or configs {unknown}; rows: {', '.join(ROWS)}; "
                             f"configs: {', '.join(CONFIGS)}.")
    unknown_modes = sorted(set(FLAGS.modes) - set(MODES))
    if unknown_modes:
        raise app.UsageError(f"unknown modes {unknown_modes}; modes: {', '.join(MODES)}.")
    specs = ["ceiling:-:-"] + [
        f"{lib}:{config}:{mode}" for config in FLAGS.configs for mode in FLAGS.modes for lib in libraries(mode)
    ]
    runs = {spec: [] for spec in specs}
    progress = tqdm.tqdm(total=FLAGS.rounds * len(specs), desc="measurements", file=sys.stderr)
    for _ in range(FLAGS.rounds):
        for spec in specs:
            runs[spec].append(measure(spec))
            progress.update()
    progress.close()
    gpus = {"TensorFlow": set(), "torch": set()}  # the GPUs each framework's rows ran on
    for spec, spec_results in runs.items():
        for r in spec_results:
            if r.get("gpu"):
                gpus["torch" if ROWS[spec.split(":")[0]][0] == "hf" else "TensorFlow"].add(r["gpu"])
    # The ceiling is sampled in its own process each round and after every TensorFlow row, so a
    # moment of load from elsewhere cannot lower it (a low ceiling would flatter every row).
    results = [r for spec_results in runs.values() for r in spec_results]
    ceilings = {}
    for precision in ("float32", "bf16"):
        samples = [r["ceilings"][precision] for r in results if "ceilings" in r]
        ceilings[precision] = max(samples, default=float("nan"))
        print(f"tf.matmul ceiling, {precision}: {ceilings[precision]:.1f} GFLOP/s "
              f"(best of {len(samples)} samples across the run, min {min(samples, default=float('nan')):.1f})")
    cpus = f"{os.cpu_count()} CPUs"
    print(f"TensorFlow on {', '.join(sorted(gpus['TensorFlow'])) or cpus} "
          f"(TF_ENABLE_ONEDNN_OPTS={os.environ['TF_ENABLE_ONEDNN_OPTS']}); "
          f"torch on {', '.join(sorted(gpus['torch'])) or cpus}; load average {os.getloadavg()[0]:.1f}\n")
    header = (f"{'config':6} {'job':5} {'library':18} {'seq/s':>8} {'GFLOP/s':>8} {'% ceil':>7} {'% exec':>7} "
              f"{'peak MB':>8} "
              f"{'work MB':>8}  ours/this (same precision)")
    print(header)
    print("-" * len(header))
    for config in FLAGS.configs:
        for mode in FLAGS.modes:
            rows = {lib: best_of(runs[f"{lib}:{config}:{mode}"]) for lib in libraries(mode)}
            ours = {  # ours' best per precision
                precision: max((r.get("seq_per_s", 0) for lib, r in rows.items() if lib in libs), default=0)
                for precision, libs in (("float32", ("ours", "ours_xla")), ("bf16", ("ours_bf16", "ours_xla_bf16")))
            }
            for lib, r in rows.items():
                if "error" in r:
                    print(f"{config:6} {mode:5} {lib:18} error: {r['error'][:80]}")
                    continue
                precision = "bf16" if ROWS[lib][2] else "float32"
                pct, pct_executed = (100 * r[key] / ceilings[precision] for key in ("gflops", "executed_gflops"))
                best = ours[precision]
                ratio = f"{best / r['seq_per_s']:.2f}x" if best else "-"
                print(f"{config:6} {mode:5} {lib:18} {r['seq_per_s']:8.1f} {r['gflops']:8.1f} {pct:6.1f}% {pct_executed:6.1f}% "
                      f"{r['peak_mb']:8.0f} {r['work_mb']:8.0f}  {ratio}")
            lead = matmuls_lead_line(rows)
            if lead:
                print(lead)
            if mode == "features":
                for lib in rows:
                    ratios = [r["over_encoder"] for r in runs[f"{lib}:{config}:features"] if "over_encoder" in r]
                    if ratios:
                        print(f"{lib}: BertFeatureExtractor takes {statistics.median(ratios):.2f}x the encoder's "
                              f"time alone (fastest step of each, in turns in one process; median of "
                              f"{len(ratios)} rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
            if config == "large" and mode == "train" and gpus["TensorFlow"] and ours["bf16"]:
                print(f"NVIDIA's published TF2 BERT-large pre-training, one A100-80GB, mixed precision, seq 128: "
                      f"{NVIDIA_BERT_LARGE_SEQ_PER_S} seq/s; ours' best bf16 row here: {ours['bf16']:.1f} seq/s "
                      f"({ours['bf16'] / NVIDIA_BERT_LARGE_SEQ_PER_S:.2f}x)")
            sys.stdout.flush()

if __name__ == "__main__":
    define_flags()
    app.run(main)
