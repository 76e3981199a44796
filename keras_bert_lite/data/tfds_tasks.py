"""GLUE, SQuAD and CoNLL-2003 loaded by TensorFlow Datasets name, as the file readers' types.

TFDS downloads and prepares the data on first use (`data_dir` to choose where). The loaders
return the same in-memory types as the file readers, so the rest of the pipeline is shared.

Example:

    >>> train = load_glue_from_tfds("mrpc", "train")
    >>> ds = classification_dataset(train, preprocessor, 32, is_training=True, num_classes=2)
"""

from __future__ import annotations

import numpy as np

from keras_bert_lite.data.bad_input import BadRecords
from keras_bert_lite.data.glue.reader import ClassificationData
from keras_bert_lite.data.glue.tasks import GlueTask, get_glue_task
from keras_bert_lite.data.ner.conll import TaggedSentence
from keras_bert_lite.data.squad import SquadExample, parse_question

# TFDS feature names of GLUE texts, where they are not the task's TSV header names (`text_columns`).
_GLUE_TEXT_FEATURES = {
    "cola": ("sentence",),
    "mrpc": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"),
    "mnli_mismatched": ("premise", "hypothesis"),
}


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def load_glue_from_tfds(task: GlueTask | str, split: str, data_dir: str | None = None) -> ClassificationData:
    """A GLUE task from TFDS (`glue/<task>`).

    Args:
        task: the task or its name (mnli_mismatched reads `glue/mnli`; pass its split names,
            e.g. "validation_mismatched").
        split: TFDS split, e.g. "train", "validation", "test", "validation_matched".
        data_dir: TFDS data folder.

    Returns:
        `ClassificationData` with our label ids (TFDS ids are remapped by label name where they
        differ, as for MNLI); labels None for test splits (TFDS marks them -1).
    """
    import tensorflow_datasets as tfds  # imported on use: it is slow and large to load

    task = get_glue_task(task) if isinstance(task, str) else task
    name = "glue/mnli" if task.name.startswith("mnli") else f"glue/{task.name}"
    dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True)
    names = getattr(info.features["label"], "names", None)
    mapping = None  # TFDS class id -> our class id, matched by name when TFDS names our labels
    if not task.is_regression and names is not None and set(task.labels) <= set(names):
        mapping = {names.index(label): i for i, label in enumerate(task.labels)}
    text_features = _GLUE_TEXT_FEATURES.get(task.name, task.text_columns)
    texts = [[] for _ in text_features]
    labels, ids = [], []
    for example in tfds.as_numpy(dataset):
        for column, feature in zip(texts, text_features):
            column.append(_text(example[feature]))
        label = example["label"]
        labels.append(float(label) if task.is_regression else int(mapping[int(label)] if mapping and label >= 0 else label))
        ids.append(str(example.get("idx", len(ids))))
    unlabelled = not task.is_regression and bool(labels) and all(label < 0 for label in labels)
    return ClassificationData(
        text_a=texts[0],
        text_b=texts[1] if len(texts) > 1 else None,
        labels=None if unlabelled else np.asarray(labels, "float32" if task.is_regression else "int32"),
        ids=ids,
    )


def load_squad_from_tfds(
    name: str = "squad/v1.1",
    split: str = "train",
    is_training: bool = True,
    data_dir: str | None = None,
    on_error: str = "raise",
) -> list[SquadExample]:
    """SQuAD from TFDS ("squad/v1.1" or "squad/v2.0"), checked like `read_squad`.

    Bad records are reported as `tfds:<name>/<split>` with the question id.
    """
    import tensorflow_datasets as tfds  # imported on use: it is slow and large to load

    dataset = tfds.load(name, split=split, data_dir=data_dir)
    bad = BadRecords(f"tfds:{name}/{split}", on_error)
    examples = []
    for record in tfds.as_numpy(dataset):
        answers = record["answers"]
        qa = {
            "id": _text(record["id"]),
            "question": _text(record["question"]),
            "is_impossible": bool(record.get("is_impossible", False)),
            "answers": [
                {"text": _text(text), "answer_start": int(start)}
                for text, start in zip(answers["text"], answers["answer_start"])
            ],
        }
        example = parse_question(qa, _text(record["context"]), is_training, bad)
        if example is not None:
            examples.append(example)
    return examples


def load_conll_from_tfds(
    name: str = "conll2003", split: str = "train", data_dir: str | None = None, on_error: str = "raise"
) -> tuple[list[TaggedSentence], list[str]]:
    """CoNLL-2003 from TFDS: the sentences (tags as strings) and the tag set in TFDS order.

    A record whose `tokens` and `ner` lengths differ is reported (record number as the line).
    """
    import tensorflow_datasets as tfds  # imported on use: it is slow and large to load

    dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True)
    tags = list(info.features["ner"].feature.names)
    bad = BadRecords(f"tfds:{name}/{split}", on_error)
    sentences = []
    for number, record in enumerate(tfds.as_numpy(dataset), start=1):
        words, ids = [_text(w) for w in record["tokens"]], [int(i) for i in record["ner"]]
        if len(words) != len(ids):
            bad(number, f"{len(words)} tokens but {len(ids)} NER tags.")
            continue
        if words:
            sentences.append(TaggedSentence(words, [tags[i] for i in ids], number))
    return sentences, tags
