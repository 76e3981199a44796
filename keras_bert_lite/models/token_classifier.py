"""`BertTokenClassifier`: one label per word piece (named-entity recognition, tagging)."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from absl import logging
from keras import ops

from keras_bert_lite.data.ner.conll import TaggedSentence
from keras_bert_lite.data.ner.inputs import ner_dataset, tag_inputs, word_windows
from keras_bert_lite.data.ner.metrics import entity_spans
from keras_bert_lite.models.classifier import ClassificationTaskModel
from keras_bert_lite.models.text_inputs import holds_no_examples, text_column


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertTokenClassifier(ClassificationTaskModel):
    """A `BertEncoder` with dropout and a dense layer on every position of the last layer.

    As in the paper's NER experiment, a word is labelled by the logits at its first word
    piece; the other pieces, [CLS], [SEP] and padding get sample weight 0 in training (see
    `keras_bert_lite.data.ner.ner_dataset`).

    Args and attributes: as `BertClassifier`'s, for tags: `num_classes` tags, dropout on the
    sequence output, `label_names` the tag names (e.g. `CONLL2003_TAGS`): the tags `fit` accepts,
    and what `predict_entities` reads (IOB1 or BIO).

    Inputs: as `BertClassifier`'s; with a preprocessor, `fit`/`evaluate`/`predict` and
    `predict_labels`/`predict_entities` take sentences: a list of word lists, or of strings
    (split into words as the model's tokenizer splits them, at whitespace and punctuation: see
    `split_words`), with `y` one tag list per sentence (names from `label_names`, or ids).

    Outputs:
        Calling the model and `predict`: float32 logits [batch, seq, num_classes] per word piece
        (probabilities with `activation="softmax"`) of the first `seq_length` pieces; words past
        them get weight 0 in `fit` and `evaluate`. `predict_labels`: a tag for every word, and
        `predict_entities`: entity spans with character offsets, over texts of any length (read
        in overlapping windows, see `word_probabilities`).

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
        sentences = self._sentences(x)[0]
        if not sentences:
            raise ValueError(f"{self.name}: x is empty; expected at least one sentence.")
        counts, bounds = self._piece_counts(sentences), np.cumsum([0] + [len(words) for words in sentences])
        cut = sum(int(counts[a:b].sum()) > preprocessor.seq_length - 2 for a, b in zip(bounds[:-1], bounds[1:]))
        if cut:
            logging.warning("%s: %d of %d sentences have more word pieces than seq_length=%d holds; fit and "
                            "evaluate see only their first words (predict_labels and predict_entities read "
                            "all of them in windows).", self.name, cut, len(sentences), preprocessor.seq_length)
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
        """A word list's words, each checked to be a string."""
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

    def split_words(self, texts) -> list[list[str]]:
        """The words of each text as the model reads them: BERT's basic tokenization (split at
        whitespace and punctuation, CJK characters apart), the words `predict_labels` labels.

        Args:
            texts: a string, or a list of strings.
        """
        return [[text[a:b] for a, b in spans] for text, spans in zip(*self._word_spans(texts))]

    def _word_spans(self, texts) -> tuple[list[str], list[list[tuple[int, int]]]]:
        """(texts, the character span of each of their words)."""
        tokenizer = self.require_preprocessor().tokenizer
        texts = [text.decode("utf-8") for text in text_column(texts, "texts").numpy()]
        _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts, tf.string))
        spans = []
        for text, row_starts, row_ends in zip(texts, starts.to_list(), ends.to_list()):
            encoded = text.encode("utf-8")
            # UTF-8 byte offsets to characters (every piece of a word has the word's span).
            chars = (None if len(encoded) == len(text) else
                     np.cumsum([0] + [1 if (byte & 0xC0) != 0x80 else 0 for byte in encoded]))
            words = dict.fromkeys(zip(row_starts, row_ends))
            spans.append([(a, b) if chars is None else (int(chars[a]), int(chars[b])) for a, b in words])
        return texts, spans

    def _sentences(self, x) -> tuple[list[list[str]], list[str | None], list[list[tuple[int, int]] | None]]:
        """Each sentence of `x` (a string, or a list of strings and word lists) as (words, text,
        character spans of the words): strings split by `split_words`, word lists as they are
        (text and spans None)."""
        items = [x] if isinstance(x, (str, bytes)) else list(x)
        strings = [i for i, item in enumerate(items) if isinstance(item, (str, bytes))]
        texts, spans = [None] * len(items), [None] * len(items)
        if strings:
            found = self._word_spans([items[i] for i in strings])
            for i, text, row in zip(strings, *found):
                texts[i], spans[i] = text, row
        sentences = [[text[a:b] for a, b in row] if row is not None else self._words(item, f"x[{i}]")
                     for i, (item, text, row) in enumerate(zip(items, texts, spans))]
        return sentences, texts, spans

    def _piece_counts(self, sentences: list[list[str]]) -> np.ndarray:
        """The number of word pieces of every word of `sentences`, flat; at least 1 (a word
        without pieces is read as [UNK], see `tag_inputs`)."""
        flat = [word for words in sentences for word in words]
        if not flat:
            return np.zeros(0, "int64")
        return np.maximum(self.require_preprocessor().tokenizer(tf.constant(flat, tf.string)).row_lengths().numpy(), 1)

    def word_probabilities(self, sentences: list[list[str]], batch_size: int = 32,
                           doc_stride: int | None = None) -> list[np.ndarray]:
        """Tag probabilities of every word, however long its sentence: float32 [words, num_classes]
        per sentence of words.

        A sentence with more word pieces than the preprocessor's `seq_length` holds is read in
        overlapping windows `doc_stride` pieces apart (default: half a window), each word taken
        from the window where it has the most context (`keras_bert_lite.data.ner.word_windows`);
        a word is labelled at its first piece.
        """
        preprocessor = self.require_preprocessor()
        max_pieces = preprocessor.seq_length - 2
        doc_stride = max(1, max_pieces // 2) if doc_stride is None else doc_stride
        if isinstance(doc_stride, bool) or not isinstance(doc_stride, int) or doc_stride < 1:
            raise ValueError(f"{self.name}: doc_stride must be a positive integer, got {doc_stride!r}.")
        counts = self._piece_counts(sentences)
        windows, offset = [], 0  # (sentence, first word, labelled words mask)
        for n, words in enumerate(sentences):
            for first, end, labels in word_windows(counts[offset : offset + len(words)], max_pieces, doc_stride):
                windows.append((n, words[first:end], first, labels))
            offset += len(words)
        results = [np.zeros((len(words), self.num_classes), "float32") for words in sentences]
        for start in range(0, len(windows), batch_size):
            batch = windows[start : start + batch_size]
            words = tf.RaggedTensor.from_row_lengths(
                tf.constant([word for window in batch for word in window[1]], tf.string),
                tf.constant([len(window[1]) for window in batch], tf.int64))
            features, positions = tag_inputs(words, preprocessor.tokenizer, preprocessor.packer)
            probabilities = ops.convert_to_numpy(self.predict_on_batch(features))
            if self.activation is None:
                probabilities = ops.convert_to_numpy(ops.softmax(probabilities, axis=-1))
            for row, ((n, _, first, labels), word_positions) in enumerate(zip(batch, positions.to_list())):
                chosen = np.flatnonzero(labels)
                results[n][first + chosen] = probabilities[row, np.asarray(word_positions, "int64")[chosen]]
        return results

    def predict_labels(self, x, batch_size: int = 32, doc_stride: int | None = None) -> list[list[str]]:
        """The tag of every word of each text, however long (see `word_probabilities`).

        Args:
            x: a string, a list of strings (split into words by `split_words`), or a list of word
                lists (as `fit` takes them).
            batch_size: windows per model call.
            doc_stride: pieces between the windows of a long text (default: half a window).

        Returns:
            One list of tag names (`tags`) per text, one per word.
        """
        if holds_no_examples(x):
            return []
        sentences = self._sentences(x)[0]
        return [[self.tags[i] for i in np.argmax(p, axis=-1)]
                for p in self.word_probabilities(sentences, batch_size, doc_stride)]

    def predict_entities(self, texts, batch_size: int = 32, doc_stride: int | None = None) -> list[list[dict]]:
        """The entities in each text, with character offsets: every word tagged (long texts in
        windows, see `word_probabilities`), entities read from the tags by CoNLL's rules
        (`keras_bert_lite.data.ner.entity_spans`, IOB1 or BIO).

        Args:
            texts: a string, a list of strings (words by `split_words`), or a list of word lists.
            batch_size: windows per model call.
            doc_stride: pieces between the windows of a long text (default: half a window).

        Returns:
            One list per text of dicts: `entity` (the tag's type, e.g. "PER"), `start` and `end`
            (character offsets in the text, end exclusive; word indices for word lists), `text`
            (the text between them; the words joined by spaces for word lists) and `score` (the
            mean probability of the entity's word tags).

        Raises:
            ValueError: no preprocessor, no `label_names`, or a text that is not a string.
        """
        if self.label_names is None:
            raise ValueError(f"{self.name} has no label_names (e.g. CONLL2003_TAGS): entities are read from tag names.")
        if holds_no_examples(texts):
            return []
        sentences, strings, spans = self._sentences(texts)
        results = []
        for n, probabilities in enumerate(self.word_probabilities(sentences, batch_size, doc_stride)):
            tags, scores, words = np.argmax(probabilities, axis=-1), probabilities.max(axis=-1), sentences[n]
            entities = []
            for kind, first, end in entity_spans([self.label_names[i] for i in tags]):
                if spans[n] is None:
                    start, stop, text = first, end, " ".join(words[first:end])
                else:
                    start, stop = spans[n][first][0], spans[n][end - 1][1]
                    text = strings[n][start:stop]
                entities.append({"entity": kind, "start": start, "end": stop, "text": text,
                                 "score": float(np.mean(scores[first:end]))})
            results.append(entities)
        return results
