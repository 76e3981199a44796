"""The bases of the models built around a `BertEncoder`: serialization, and working on raw text.

`EncoderTaskModel` is the functional model that calls the encoder as one nested model and
rebuilds itself from its config. `TextTaskModel` adds what people fine-tuning BERT on text
expect from a Keras model: it carries its `BertPreprocessor` (in its config, so a `.keras` file
holds the vocabulary), loads in one call from any checkpoint folder (`from_checkpoint`), takes
strings in `fit`, `evaluate` and `predict`, and compiles itself with BERT's optimizer when
nobody chose one (`keras_bert_lite.models.default_compile`).
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from keras_bert_lite.models.default_compile import (
    DEFAULT_LEARNING_RATE,
    DEFAULT_WARMUP_PROPORTION,
    DefaultOptimizer,
    count_steps_per_epoch,
)
from keras_bert_lite.models.rebuild import RebuiltModel
from keras_bert_lite.models.saving import save_model
from keras_bert_lite.models.text_inputs import is_text_input, text_dataset
from keras_bert_lite.text.preprocessor import BertPreprocessor


class EncoderTaskModel(RebuiltModel):
    """A functional model that calls a `BertEncoder` (held as `self.encoder`) as one nested model.

    Serializes the encoder (nested) plus the constructor arguments named in `CONFIG_ARGS`, read
    back from attributes of the same names, so `.keras` files rebuild the model through its
    constructor (which re-ties any heads to the encoder's layers) and then load the weights.
    `save` leaves the optimizer's state out unless asked (`keras_bert_lite.models.saving`).
    """

    CONFIG_ARGS: tuple[str, ...] = ()

    def constructor_config(self) -> dict:
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder)}
        for name in self.CONFIG_ARGS:
            value = getattr(self, name)
            config[name] = list(value) if isinstance(value, tuple) else value
        return config

    @classmethod
    def from_constructor_config(cls, config: dict) -> EncoderTaskModel:
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    def save(self, filepath, overwrite: bool = True, zipped: bool | None = None, include_optimizer: bool = False,
             **kwargs):
        """`keras.Model.save`, without the optimizer's state unless `include_optimizer=True`.

        Keras 3 writes a compiled model's optimizer (for AdamW, two slots per weight) into every
        `.keras` file; a model file is for inference and sharing, and training checkpoints keep the
        optimizer. `.keras` files are written with `keras_bert_lite.models.saving.save_model`
        (atomically); other formats go to Keras.

        Raises:
            FileExistsError: `overwrite=False` and `filepath` exists.
        """
        path = os.fspath(filepath)
        if not path.endswith(".keras") or zipped is False or kwargs:
            return super().save(filepath, overwrite=overwrite, zipped=zipped, include_optimizer=include_optimizer,
                                **kwargs)
        if not overwrite and tf.io.gfile.exists(path):
            raise FileExistsError(f"{path} exists; pass overwrite=True to replace it.")
        save_model(self, path, include_optimizer=include_optimizer)


class TextTaskModel(EncoderTaskModel):
    """An `EncoderTaskModel` that works on raw text with the `BertPreprocessor` it carries.

    - `from_checkpoint(path, seq_length, ...)` builds the model on a pre-trained encoder and its
      preprocessor from a Google, Hugging Face or our own folder.
    - `fit`, `evaluate` and `predict` take what `keras_bert_lite.models.text_inputs.text_dataset`
      reads (lists, numpy arrays, `tf.data` of strings or string pairs) as well as token ids; a
      `tf.data.Dataset` goes to Keras with `shuffle=False` (it shuffles itself, or not).
    - `compile()` defaults to BERT's AdamW with warmup and linear decay sized by `fit` (see
      `default_compile`), the task's loss on logits and its metrics; `fit`/`evaluate` compile that
      way when the model is not compiled. Any argument given to `compile` replaces its default.
    - Subclasses whose heads do not read the pooler set `TRAINS_POOLER = False`: its weights stay
      in the model (checkpoints and `.keras` files are unchanged) but are not trainable here, so
      training neither warns that they get no gradient nor gives them optimizer slots.
    """

    TRAINS_POOLER = True

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
        self.default_optimizer = None

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, seq_length: int = 128, *, lower_case: bool | None = None,
                        vocab_file: str | os.PathLike | None = None, **kwargs) -> TextTaskModel:
        """This model on the pre-trained encoder at `path`, with a preprocessor for its vocabulary.

        Args:
            path: our output folder (`encoder.keras` + `vocab.txt`) or a `.keras` file holding an
                encoder, a Google release folder (or its `bert_model.ckpt` prefix), or a Hugging
                Face folder (see `keras_bert_lite.models.checkpoint_folder.find_checkpoint`).
            seq_length: tokens per packed input (at most the model's `max_position_embeddings`).
            lower_case: None reads the casing from the folder.
            vocab_file: the vocabulary, when it is not `vocab.txt` beside the weights.
            **kwargs: the model's own arguments (`num_classes`, `label_names`, ...).

        Raises:
            FileNotFoundError, ValueError: see `keras_bert_lite.models.checkpoint_folder.from_checkpoint`.
        """
        from keras_bert_lite.models.checkpoint_folder import from_checkpoint  # checkpoints import the models

        encoder, preprocessor = from_checkpoint(path, seq_length, lower_case, vocab_file)
        return cls(encoder, preprocessor=preprocessor, **kwargs)

    def constructor_config(self) -> dict:
        config = super().constructor_config()
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_constructor_config(cls, config: dict) -> TextTaskModel:
        config = dict(config)
        if isinstance(config.get("preprocessor"), dict):
            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return super().from_constructor_config(config)

    def require_preprocessor(self) -> BertPreprocessor:
        if self.preprocessor is None:
            raise ValueError(
                f"{self.name} has no preprocessor, so it takes token ids only: build it with "
                f"{type(self).__name__}.from_checkpoint(...) or pass preprocessor=BertPreprocessor(...)."
            )
        return self.preprocessor

    def is_text(self, x) -> bool:
        """Whether `x` is raw text for `text_batches` rather than token ids."""
        return is_text_input(x)

    def text_batches(self, x, y=None, sample_weight=None, batch_size: int = 32, shuffle: bool = False):
        """`x` (and labels) as batches of model inputs (see `text_dataset`)."""
        return text_dataset(x, y, sample_weight, preprocessor=self.require_preprocessor(), batch_size=batch_size,
                            shuffle=shuffle)

    def default_compile_arguments(self) -> dict:
        """The task's `loss`, `metrics` and `weighted_metrics` for `compile("auto", ...)`."""
        return {}

    def predict_outputs(self, outputs):
        """What `predict` returns for the model's outputs (e.g. probabilities for logits)."""
        return outputs

    def compile(self, optimizer="auto", loss="auto", metrics="auto", *, learning_rate: float | None = None,
                warmup_proportion: float | None = None, **kwargs):
        """`keras.Model.compile` with BERT's fine-tuning defaults.

        Args:
            optimizer: "auto" (default): BERT's AdamW (`keras_bert_lite.create_optimizer`: weight
                decay 0.01 except LayerNorm and biases, clipping at global norm 1.0) with a linear
                warmup over the first `warmup_proportion` of the steps and a linear decay to 0 at
                the last step of the next `fit` call, which sizes it from its data and epochs. Or
                any Keras optimizer.
            loss: "auto" (default): the task's loss on the model's logits. Or any Keras loss.
            metrics: "auto" (default): the task's metrics (accuracy for classifiers) with the "auto"
                loss, none with another loss. Or a list.
            learning_rate: the peak learning rate of the "auto" optimizer (default 5e-5).
            warmup_proportion: its fraction of warmup steps (default 0.1).
            **kwargs: other `keras.Model.compile` arguments (`jit_compile`, `weighted_metrics`, ...).

        Raises:
            ValueError: `learning_rate` or `warmup_proportion` with an optimizer other than "auto",
                or out of range.
        """
        defaults = self.default_compile_arguments()
        if isinstance(optimizer, str) and optimizer == "auto":
            settings = DefaultOptimizer(
                DEFAULT_LEARNING_RATE if learning_rate is None else learning_rate,
                DEFAULT_WARMUP_PROPORTION if warmup_proportion is None else warmup_proportion,
            )
            optimizer = settings.placeholder()
        elif learning_rate is not None or warmup_proportion is not None:
            raise ValueError(f"{self.name}.compile: learning_rate and warmup_proportion set the 'auto' optimizer; "
                             "give them to your optimizer instead.")
        else:
            settings = None
        default_loss = isinstance(loss, str) and loss == "auto"
        if default_loss:
            loss = defaults.get("loss")
        if isinstance(metrics, str) and metrics == "auto":
            # The task's metrics go with the task's loss; with their own loss, people pick their own metrics.
            metrics = defaults.get("metrics") if default_loss else None
            if default_loss:
                kwargs.setdefault("weighted_metrics", defaults.get("weighted_metrics"))
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        self.default_optimizer = settings

    def get_compile_config(self) -> dict:
        config = super().get_compile_config()
        settings = self.default_optimizer
        if config and settings is not None and settings.num_train_steps is None:
            config = {**config, "optimizer": "auto", "learning_rate": settings.learning_rate,
                      "warmup_proportion": settings.warmup_proportion}
        return config

    def compile_from_config(self, config: dict) -> None:
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built and self.default_optimizer is None:
            self.optimizer.build(self.trainable_variables)  # so that the saved optimizer state loads

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1):
        """`keras.Model.fit`, also on raw text, compiling with the defaults (see `compile`) if needed.

        Text in `x` is batched `batch_size` (default 32) examples at a time and shuffled on every
        epoch when `shuffle` is True, as Keras does with arrays; labels `y` and `sample_weight` go
        with it. `validation_data` may be text too: `(x_val, y_val)` or a dataset.
        """
        if self.is_text(x):
            if validation_split:
                raise ValueError(f"{self.name}.fit: validation_split splits arrays, not text; pass validation_data.")
            x = self.text_batches(x, y, sample_weight, batch_size or 32, shuffle=shuffle)
            y = sample_weight = batch_size = None
        validation_data = self._validation_batches(validation_data, validation_batch_size or batch_size)
        if isinstance(x, tf.data.Dataset):
            shuffle = False  # a dataset is read in its own order; Keras would warn that it ignores shuffle=True
        if not self.compiled:
            self.compile()
        settings = self.default_optimizer
        if settings is not None and epochs > initial_epoch:
            num_steps = (epochs - initial_epoch) * count_steps_per_epoch(x, batch_size, steps_per_epoch, validation_split)
            self.default_optimizer = settings.sized(self.optimizer, num_steps, self.name)
        return super().fit(
            x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data, shuffle, class_weight,
            sample_weight, initial_epoch, steps_per_epoch, validation_steps, validation_batch_size, validation_freq,
        )

    def _validation_batches(self, validation_data, batch_size):
        if validation_data is None:
            return None
        if self.is_text(validation_data):  # a dataset of text
            return self.text_batches(validation_data, batch_size=batch_size or 32)
        if isinstance(validation_data, (tuple, list)) and 2 <= len(validation_data) <= 3:
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
            if self.is_text(x):
                return self.text_batches(x, y, sample_weight, batch_size or 32)
        return validation_data

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        """`keras.Model.evaluate`, also on raw text, compiling with the defaults if needed."""
        if self.is_text(x):
            x = self.text_batches(x, y, sample_weight, batch_size or 32)
            y = sample_weight = batch_size = None
        if not self.compiled:
            self.compile()
        return super().evaluate(x, y, batch_size, verbose, sample_weight, steps, callbacks, return_dict, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """`keras.Model.predict`, also on raw text; returns `predict_outputs` of the model's outputs."""
        if self.is_text(x):
            x = self.text_batches(x, batch_size=batch_size or 32)
            batch_size = None
        return super().predict(x, batch_size, verbose, steps, callbacks)

    def predict_step(self, data):
        return self.predict_outputs(super().predict_step(data))

    def _untrained_ids(self) -> set[int]:
        """Ids of the variables this model holds but does not train (the pooler, if unread)."""
        encoder = getattr(self, "encoder", None)
        if self.TRAINS_POOLER or encoder is None:
            return set()
        return {id(variable) for variable in encoder.pooler.variables}

    @property
    def trainable_weights(self):
        untrained = self._untrained_ids()
        return [v for v in super().trainable_weights if id(v) not in untrained]

    @property
    def trainable_variables(self):
        untrained = self._untrained_ids()
        return [v for v in super().trainable_variables if id(v) not in untrained]

    @property
    def non_trainable_weights(self):
        untrained = self._untrained_ids()
        return super().non_trainable_weights + [v for v in super().trainable_weights if id(v) in untrained]

    @property
    def non_trainable_variables(self):
        untrained = self._untrained_ids()
        return super().non_trainable_variables + [v for v in super().trainable_variables if id(v) in untrained]

