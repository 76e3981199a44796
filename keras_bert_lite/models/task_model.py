"""`TextTaskModel`, the base of the task models on raw text (on the pattern of KerasHub's `Task`).
A model's `call` is the plain functional graph on token ids; everything not about text goes to
Keras as given.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from keras_bert_lite.models import text_inputs
from keras_bert_lite.models.checkpoint_folder import from_checkpoint
from keras_bert_lite.models.rebuild import EncoderTaskModel
from keras_bert_lite.models.text_inputs import holds_no_examples, holds_text
from keras_bert_lite.optimization import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, AdamW
from keras_bert_lite.text.preprocessor import BertPreprocessor


def default_optimizer(learning_rate: float = 5e-5) -> keras.optimizers.Optimizer:
    """The optimizer of `compile(optimizer="auto")`: BERT's AdamW at a constant learning rate
    (5e-5 unless a task model asks for another).

    `keras.optimizers.AdamW` with BERT's settings (weight decay 0.01 except on LayerNorm weights
    and biases, epsilon 1e-6, gradients clipped at global norm 1.0) and a constant learning rate
    of 5e-5, as KerasHub's tasks use: no schedule to size, so any number of `fit` calls train at
    the same rate. For BERT's linear warmup and decay to 0 over a known number of steps, compile
    with `keras_bert_lite.create_optimizer(init_lr, num_train_steps, num_warmup_steps)`.
    """
    # The paper's fine-tuning rates are 5e-5 to 2e-5; 5e-5 is also Hugging Face's and KerasHub's default.
    optimizer = AdamW(learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=list(DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY))  # LayerNorm, biases
    return optimizer


class TextTaskModel(EncoderTaskModel):
    """An `EncoderTaskModel` that works on raw text with the `BertPreprocessor` it carries (kept
    in its config, so a `.keras` file holds the vocabulary).

    - `from_checkpoint(path, seq_length, ...)` builds the model on a pre-trained encoder and its
      preprocessor from a Google, Hugging Face or our own folder.
    - `fit`, `evaluate` and `predict` take raw text wherever Keras takes `x`, told by its dtype
      (`keras_bert_lite.models.text_inputs.holds_text`; numbers and dicts of ids go to Keras as
      they are), and turn it into batches with the one text hook, `text_batches(x, y,
      sample_weight, batch_size, shuffle)`, which task models override with that signature for
      text of their own form (question-context pairs, word lists, ...). By default it maps
      `preprocess_samples` over `text_dataset` batches of texts or text pairs (a
      `tf.data.Dataset` of text is read as it is). docs/adding-a-task.md shows a new task.
    - `compile()` defaults to the task's loss and metrics and `default_optimizer()`; `fit` and
      `evaluate` compile that way when the model is not compiled.
    """

    def attach(self, encoder, preprocessor: BertPreprocessor | None) -> None:
        """Keeps `encoder` and `preprocessor` (checked to fit it); called by subclass constructors."""
        if preprocessor is not None:
            if not isinstance(preprocessor, BertPreprocessor):
                raise TypeError(f"{self.name}: preprocessor must be a BertPreprocessor, got {type(preprocessor).__name__}.")
            config = encoder.config
            if preprocessor.tokenizer.vocab_size > config.vocab_size:
                raise ValueError(f"{self.name}: the preprocessor's vocabulary has {preprocessor.tokenizer.vocab_size} "
                                 f"tokens, more than the encoder's vocab_size {config.vocab_size}.")
            if preprocessor.seq_length > config.max_position_embeddings:
                raise ValueError(f"{self.name}: the preprocessor's seq_length {preprocessor.seq_length} exceeds the "
                                 f"encoder's max_position_embeddings {config.max_position_embeddings}.")
        self.encoder = encoder
        self.preprocessor = preprocessor

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, seq_length: int = 128, *, lower_case: bool | None = None,
                        vocab_file: str | os.PathLike | None = None, **kwargs) -> TextTaskModel:
        """This model on the pre-trained encoder at `path`, with a preprocessor for its vocabulary.

        Args:
            path, seq_length, lower_case, vocab_file: as for (and raising as)
                `keras_bert_lite.models.checkpoint_folder.from_checkpoint`: a folder of any kind.
            **kwargs: the model's own arguments (`num_classes`, `label_names`, ...).
        """
        encoder, preprocessor = from_checkpoint(path, seq_length, lower_case, vocab_file)
        return cls(encoder, preprocessor=preprocessor, **kwargs)

    def constructor_config(self) -> dict:
        return {**super().constructor_config(), "preprocessor": self.preprocessor}

    def require_preprocessor(self) -> BertPreprocessor:
        if self.preprocessor is None:
            raise ValueError(
                f"{self.name} has no preprocessor, so it takes token ids only: build it with "
                f"{type(self).__name__}.from_checkpoint(...) or pass preprocessor=BertPreprocessor(...)."
            )
        return self.preprocessor

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """One batch of raw text to model inputs, with its labels: what the default `text_batches`
        maps over `tf.data` batches of text.

        Args:
            x: tf.string [batch] texts, or a pair of them (sentence pairs).
            y, sample_weight: the batch's labels and weights, or None; passed through.

        Returns:
            `features`, `(features, y)` or `(features, y, sample_weight)` as Keras reads them,
            with features the preprocessor's dict of int32 [batch, seq_length] inputs.
        """
        return keras.utils.pack_x_y_sample_weight(self.require_preprocessor()(x), y, sample_weight)

    def text_batches(self, x, y=None, sample_weight=None, batch_size: int = 32,
                     shuffle: bool = False) -> tf.data.Dataset:
        """The one text hook: raw text (and its labels) as a `tf.data.Dataset` of batches that
        Keras reads, `features`, `(features, y)` or `(features, y, sample_weight)`.

        `fit` (with `shuffle=True` unless told otherwise), `evaluate` and `predict` call it on
        text in `x` (with `y` and `sample_weight` None for `predict`). This default maps
        `preprocess_samples` over the batches of texts or text pairs of
        `keras_bert_lite.models.text_inputs.text_dataset`, checking class ids against the
        model's `num_classes` when it has one.
        """
        self.require_preprocessor()
        batches = text_inputs.text_dataset(x, y, sample_weight, batch_size=batch_size, shuffle=shuffle,
                                           num_classes=getattr(self, "num_classes", None))
        return batches.map(self.preprocess_samples, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def default_compile_arguments(self) -> dict:
        """The task's `loss`, `metrics` and `weighted_metrics` for `compile(loss="auto")`."""
        return {}

    def compile(self, optimizer="auto", loss="auto", metrics="auto", learning_rate: float | None = None, **kwargs):
        """`keras.Model.compile` with the task's defaults.

        Args:
            optimizer: "auto" (default): `default_optimizer()`; or any Keras optimizer.
            loss: "auto" (default): the task's loss, on logits or probabilities as the model
                outputs them. Or any Keras loss.
            metrics: "auto" (default): the task's metrics with the "auto" loss, none with another
                loss. Or a list.
            learning_rate: the constant learning rate of `default_optimizer()` (default: its 5e-5),
                e.g. `compile(learning_rate=3e-4)` for a small or randomly initialised encoder.
                Only with `optimizer="auto"`: an optimizer object carries its own rate.
            **kwargs: other `keras.Model.compile` arguments (`jit_compile`, `weighted_metrics`, ...).
        """
        defaults = self.default_compile_arguments()
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = default_optimizer()
            if learning_rate is not None:
                if not learning_rate > 0:
                    raise ValueError(f"{self.name}.compile: learning_rate must be positive, got {learning_rate}.")
                optimizer.learning_rate = learning_rate
        elif learning_rate is not None:
            raise ValueError(f"{self.name}.compile: learning_rate applies to the default optimizer; set the rate "
                             f"of the optimizer passed ({type(optimizer).__name__}) instead.")
        default_loss = isinstance(loss, str) and loss == "auto"
        if default_loss:
            loss = defaults.get("loss")
        if isinstance(metrics, str) and metrics == "auto":
            # The task's metrics go with the task's loss; with their own loss, people pick their own metrics.
            metrics = defaults.get("metrics") if default_loss else None
            if default_loss:
                kwargs.setdefault("weighted_metrics", defaults.get("weighted_metrics"))
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config: dict) -> None:
        # Keras does not compile a loaded model whose class overrides `compile`; this one takes
        # Keras' own arguments, so a file saved with `include_optimizer=True` resumes with its state.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)  # so that the saved optimizer state loads

    def fit(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.fit`, also on raw text, compiling with the defaults (see `compile`) if needed.

        Text in `x` (with labels `y` and `sample_weight`) becomes `text_batches` of `batch_size`
        (default 32) examples, shuffled on every epoch unless `shuffle=False`, as Keras does with
        arrays; `validation_data` may be text too: `(x_val, y_val)` or a dataset.

        Args:
            x, y, batch_size: as for `keras.Model.fit`, or text (see the class docstring).
            **kwargs: `keras.Model.fit` arguments.
        """
        if holds_text(x):
            if kwargs.get("validation_split"):
                raise ValueError(f"{self.name}.fit: validation_split splits arrays, not text; pass validation_data.")
            x = self.text_batches(x, y, kwargs.pop("sample_weight", None), batch_size or 32,
                                  kwargs.pop("shuffle", True))
            y = None
        if kwargs.get("validation_data") is not None:
            kwargs["validation_data"] = self._validation_batches(
                kwargs["validation_data"], kwargs.get("validation_batch_size") or batch_size or 32
            )
        if isinstance(x, tf.data.Dataset):
            batch_size = None
            kwargs.setdefault("shuffle", False)  # read in its own order; Keras warns that it ignores shuffle=True
        if not self.compiled:
            self.compile()
        return super().fit(x, y, batch_size, **kwargs)

    def _validation_batches(self, validation_data, batch_size: int):
        if holds_text(validation_data) and isinstance(validation_data, tf.data.Dataset):
            return self.text_batches(validation_data, batch_size=batch_size)
        if isinstance(validation_data, (tuple, list)) and 2 <= len(validation_data) <= 3:
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
            if holds_text(x):
                return self.text_batches(x, y, sample_weight, batch_size)
        return validation_data

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.evaluate`, also on raw text (as `fit`), compiling with the defaults if needed."""
        if holds_text(x):
            x = self.text_batches(x, y, kwargs.pop("sample_weight", None), batch_size or 32)
            y = batch_size = None
        if not self.compiled:
            self.compile()
        return super().evaluate(x, y, batch_size, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`, also on raw text (as `fit`): what calling the model returns.

        An empty batch (`[]`, a pair of empty lists, arrays with 0 rows) gives outputs with 0 rows
        and the usual other dimensions, as the exported model serves it; `x=None` is an error.
        """
        if x is None:
            raise ValueError(f"{self.name}.predict: x is None; pass texts, or a dict of token ids.")
        if holds_no_examples(x):
            features = x if isinstance(x, dict) else self.require_preprocessor()(tf.constant([], tf.string))
            return keras.tree.map_structure(keras.ops.convert_to_numpy, self(features, training=False))
        if holds_text(x):
            x, batch_size = self.text_batches(x, batch_size=batch_size or 32), None
        return super().predict(x, batch_size, **kwargs)
