"""`BertTokenClassifier`: one label per word piece (named-entity recognition, tagging)."""

from __future__ import annotations

import re

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_lite.data.ner.conll import TaggedSentence
from keras_bert_lite.data.ner.inputs import ner_dataset, predicted_tags, tag_inputs
from keras_bert_lite.data.ner.metrics import entity_spans
from keras_bert_lite.models.classifier import ClassificationTaskModel
from keras_bert_lite.models.text_inputs import text_column

# Words are split where `tf.strings.split` splits them, as in the exported model: ASCII whitespace.
_WORD = re.compile(r"[^ \t\n\v\f\r]+")


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertTokenClassifier(ClassificationTaskModel):
    """A `BertEncoder` with dropout and a dense layer on every position of the last layer.

    As in the paper's NER experiment, a word is labelled by the logits at its first word
    piece; the other pieces, [CLS], [SEP] and padding get sample weight 0 in training (see
    `keras_bert_lite.data.ner.ner_dataset`).

    Args and attributes: as `BertClassifier`'s, for tags: `num_classes` tags, dropout on the
    sequence output, `label_names` the tag names (e.g. `CONLL2003_TAGS`): the tags `fit` accepts,
    and what `predict_entities` reads (IOB1 or BIO).

    Inputs: as `BertClassifier`'s; with a preprocessor, `fit`/`evaluate`/`predict` take sentences:
    a list of word lists, or of strings (split into words at ASCII whitespace, as the exported
    model does), with `y` one tag list per sentence (names from `label_names`, or ids).

    Outputs:
        Calling the model and `predict`: float32 logits [batch, seq, num_classes] per word piece
        (probabilities with `activation="softmax"`). `predict_entities`: entity spans with
        character offsets.

    Training: the default `compile()` (see `TextTaskModel.compile`) uses
    `SparseCategoricalCrossentropy(reduction="mean_with_sample_weight")` and a weighted accuracy.
    The encoder's pooler, which the head does not read, is not among the model's trainable
    weights (`UNREAD_ENCODER_LAYERS`).

    Example:

        >>> tagger = BertTokenClassifier.from_checkpoint("cased_L-12_H-768_A-12", num_classes=9,
        ...                                              label_names=CONLL2003_TAGS)
        >>> tagger.fit([["EU", "rejects", "German", "call"]], [["B-ORG", "O", "B-MISC", "O"]])
        >>> tagger.predict_entities(["Angela Merkel visited Paris."])
        [[{'entity': 'PER', 'start': 0, 'end': 13, 'text': 'Angela Merkel', 'score': ...}, ...]]
    """

    DEFAULT_NAME = "bert_token_classifier"
    UNREAD_ENCODER_LAYERS = ("pooler",)  # the head reads `sequence_output`

    @staticmethod
    def head_input(encoder, inputs):
        return encoder(inputs)["sequence_output"]

    @property
    def tags(self) -> tuple[str, ...]:
        """The tag names in id order: `label_names`, else "0", "1", ..."""
        return self.label_names or tuple(str(i) for i in range(self.num_classes))

    def text_batches(self, x, y=None, sample_weight=None, batch_size: int = 32, shuffle: bool = False):
        """Sentences (word lists or strings) and their tag lists as `ner_dataset` batches."""
        if sample_weight is not None:
            raise ValueError(f"{self.name}: sentences are weighted per word piece already; sample_weight must be None.")
        if isinstance(x, tf.data.Dataset):
            raise TypeError(f"{self.name} takes sentences as lists (of word lists or strings), not a tf.data.Dataset "
                            "of text; build token-id batches with keras_bert_lite.data.ner_dataset.")
        preprocessor = self.require_preprocessor()
        sentences = [self._words(sentence, f"x[{i}]") for i, sentence in enumerate(x)]
        if not sentences:
            raise ValueError(f"{self.name}: x is empty; expected at least one sentence.")
        if y is None:
            words = tf.ragged.constant(sentences, tf.string)
            dataset = tf.data.Dataset.from_tensor_slices(words).ragged_batch(batch_size)
            return dataset.map(lambda words: tag_inputs(words, preprocessor.tokenizer, preprocessor.packer)[0])
        if len(y) != len(sentences):
            raise ValueError(f"y has {len(y)} tag lists for {len(sentences)} sentences; it needs one per sentence.")
        tagged = [TaggedSentence(words, self._tag_names(tags, len(words), i), i + 1)
                  for i, (words, tags) in enumerate(zip(sentences, y))]
        return ner_dataset(tagged, preprocessor, self.tags, batch_size, is_training=shuffle)

    @staticmethod
    def _words(sentence, name: str) -> list[str]:
        if isinstance(sentence, str):
            return _WORD.findall(sentence)
        return [word.decode("utf-8") for word in text_column(sentence, name).numpy()] if len(sentence) else []

    def _tag_names(self, tags, num_words: int, index: int) -> list[str]:
        tags = list(tags)
        if len(tags) != num_words:
            raise ValueError(f"y[{index}] has {len(tags)} tags for the {num_words} words of x[{index}].")
        names = []
        for j, tag in enumerate(tags):
            if isinstance(tag, str) and tag in self.tags:
                names.append(tag)
            elif isinstance(tag, (int, np.integer)) and not isinstance(tag, bool) and 0 <= tag < self.num_classes:
                names.append(self.tags[tag])
            else:
                raise ValueError(f"y[{index}][{j}] is {tag!r}, not a tag id in [0, {self.num_classes}) nor one of "
                                 f"{list(self.tags)}.")
        return names

    def default_compile_arguments(self) -> dict:
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=self.activation is None,
                                                               reduction="mean_with_sample_weight"),
            "weighted_metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def predict_entities(self, texts, batch_size: int = 32) -> list[list[dict]]:
        """The entities in each text, with character offsets, as the exported model tags words.

        Words are split at ASCII whitespace and tagged at their first word piece; entities are
        read from the tags by CoNLL's rules (`keras_bert_lite.data.ner.entity_spans`, IOB1 or BIO).
        Words past the preprocessor's `seq_length` are not seen by the model and get no entity.

        Args:
            texts: a string, or a list of strings.
            batch_size: texts per model call.

        Returns:
            One list per text of dicts: `entity` (the tag's type, e.g. "PER"), `start` and `end`
            (character offsets in the text, end exclusive), `text` (the text between them) and
            `score` (the mean probability of the entity's word tags).

        Raises:
            ValueError: no preprocessor, no `label_names`, or a text that is not a string.
        """
        if self.label_names is None:
            raise ValueError(f"{self.name} has no label_names (e.g. CONLL2003_TAGS): entities are read from tag names.")
        preprocessor = self.require_preprocessor()
        texts = [text.decode("utf-8") for text in text_column(texts, "texts").numpy()]
        results = []
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            spans = [[match.span() for match in _WORD.finditer(text)] for text in batch]
            words = tf.ragged.constant([[text[a:b] for a, b in row] for text, row in zip(batch, spans)],
                                       tf.string)
            features, positions = tag_inputs(words, preprocessor.tokenizer, preprocessor.packer)
            probabilities = self.predict_on_batch(features)
            if self.activation is None:
                probabilities = ops.convert_to_numpy(ops.softmax(probabilities, axis=-1))
            positions = [np.asarray(row, "int32") for row in positions.to_list()]
            word_tags = predicted_tags(probabilities, positions, self.label_names)
            for n, (text, row) in enumerate(zip(batch, spans)):
                scores = [float(probabilities[n, p].max()) if p >= 0 else 0.0 for p in positions[n]]
                results.append([
                    {"entity": kind, "start": row[first][0], "end": row[end - 1][1],
                     "text": text[row[first][0] : row[end - 1][1]], "score": float(np.mean(scores[first:end]))}
                    for kind, first, end in entity_spans(word_tags[n])
                ])
        return results
