"""Raw text in any everyday container (Python lists, numpy or pandas columns, `tf.data`), with
labels, to checked and batched `tf.data` for Keras models (`text_dataset`, whose batches of text
task models map their `preprocess_samples` over); `holds_text` tells text from model inputs by
dtype. Containers are read without numpy's fixed-width string dtypes (a `<U1088` array is 4 bytes
per character of the longest text, and Keras cannot convert it).

The accepted forms of `x` (N examples):

- single texts: a `str`; a list/tuple of `str`; a 1-D numpy array (or pandas Series) of
  `str`/`bytes`; a 1-D `tf.string` tensor.
- text pairs (sentence-pair tasks): a tuple `(text_a, text_b)` of two such columns; a list of
  N `(text_a, text_b)` rows; a 2-D array [N, 2] (e.g. a two-column DataFrame); a `tf.string`
  tensor [N, 2].
- a `tf.data.Dataset` whose elements are `x`, `(x, y)` or `(x, y, sample_weight)` as in Keras,
  with `x` a `tf.string` scalar (one text) or a pair of them; or `(text_a, text_b)` string pairs.
  Elements may be single examples (batched here) or batches (string vectors, kept as they are).

Example:

    >>> prep = BertPreprocessor("vocab.txt", seq_length=64)
    >>> train = text_dataset(["a warm, funny film", "dull"], [1, 0], preprocessor=prep,
    ...                      batch_size=32, shuffle=True, seed=0)
    >>> pairs = text_dataset((["Is it raining?"], ["No."]), preprocessor=prep)   # features only
"""

from __future__ import annotations

from collections.abc import Mapping

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lite.data.glue import check_labels


def holds_text(x) -> bool:
    """Whether `x` is raw text to preprocess rather than model inputs, by the data's dtype.

    Strings anywhere in `x` make it text: Python `str`/`bytes`, numpy arrays of a string dtype or
    of objects holding strings (pandas columns), `tf.string` tensors, a `tf.data.Dataset` with a
    `tf.string` component. Numbers and dicts of token ids are not text.
    """
    if isinstance(x, tf.data.Dataset):
        return any(spec.dtype == tf.string for spec in tf.nest.flatten(x.element_spec))
    return any(_is_text(leaf) for leaf in tf.nest.flatten(x))


def holds_no_examples(x) -> bool:
    """Whether `x` is an empty batch: an empty list, a pair of empty lists, arrays, tensors or a
    dict of them with 0 rows (not None, a dataset or a single text). Predictions on it are empty."""
    if x is None or isinstance(x, tf.data.Dataset):
        return False
    return all(np.shape(leaf)[:1] == (0,) for leaf in tf.nest.flatten(x))


def _is_text(leaf) -> bool:
    if isinstance(leaf, (str, bytes)):
        return True
    if tf.is_tensor(leaf):
        return leaf.dtype == tf.string
    kind = getattr(getattr(leaf, "dtype", None), "kind", None)
    if kind == "O":
        return any(isinstance(value, (str, bytes)) for value in np.asarray(leaf).ravel())
    return kind is not None and kind in "US"


def text_dataset(
    x,
    y=None,
    sample_weight=None,
    *,
    preprocessor=None,
    batch_size: int = 32,
    shuffle: bool = False,
    seed: int | None = None,
    num_classes: int | None = None,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """Batched BERT inputs (tokenized in the graph) with labels, from raw text; or the batches of
    text themselves, checked, for a task model's `preprocess_samples` to map over.

    Args:
        x: the texts (single texts or pairs; see the module docstring for every accepted form).
        y: labels, one per example: class ids (ints, cast to int32), values (floats, float32),
            or a dict/tuple of such arrays; or None. Must be None when `x` is a dataset (the
            dataset carries them).
        sample_weight: optional weights, one per example (float32); None for a dataset.
        preprocessor: a `BertPreprocessor` (strings, or a pair of strings, to the three
            int32 [batch, seq_length] inputs), mapped over the batches; None for the text.
        batch_size: examples per batch (datasets of batches keep their own).
        shuffle: shuffle in-memory examples before batching, again on every pass (epoch), with
            `seed`. A dataset is read in its own order, as Keras does.
        seed: shuffle seed; with a fixed seed the order of every epoch repeats run to run.
        num_classes: when given, in-memory labels are checked to be class ids in
            [0, num_classes) (finite values for num_classes=1) before anything runs.
        drop_remainder: drop the last partial batch (static batch shapes, e.g. for TPUs).

    Returns:
        A dataset of `features`, `(features, labels)` or `(features, labels, sample_weights)`;
        features are the preprocessor's dict of int32 [batch, seq_length] tensors, labels and
        weights have a leading batch dimension. Without a preprocessor, tuples `(text,)`,
        `(text, labels)` or `(text, labels, sample_weights)`, text tf.string [batch] or a pair
        of them.

    Raises:
        ValueError: naming the argument and example index of anything unusable: a text that is
            not a string (None, a number, NaN from a pandas gap), pairs of other lengths, string
            labels, a number of labels or weights other than the number of texts, labels outside
            [0, num_classes), an empty `x`, or a dataset whose elements are not text.
        TypeError: `x` is not text at all (e.g. a dict of features).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError("y and sample_weight must be None when x is a tf.data.Dataset (it carries them).")
        dataset = _from_dataset(x, batch_size, drop_remainder)
    else:
        dataset = _in_memory(x, y, sample_weight, batch_size, shuffle, seed, num_classes, drop_remainder)
    if preprocessor is None:
        return dataset
    return dataset.map(
        lambda text, *rest: keras.utils.pack_x_y_sample_weight(preprocessor(text), *rest),
        num_parallel_calls=tf.data.AUTOTUNE,
    ).prefetch(tf.data.AUTOTUNE)


def _in_memory(x, y, sample_weight, batch_size: int, shuffle: bool, seed, num_classes, drop_remainder: bool):
    """Texts, labels and weights held in memory as batches of `(text, *labels)` tuples."""
    texts = _text_columns(x)
    count = int(texts[0].shape[0])
    parts = [texts[0] if len(texts) == 1 else texts]
    if y is not None:
        parts.append(_per_example(y, "y", count, num_classes=num_classes))
    if sample_weight is not None:
        parts.append(_per_example(sample_weight, "sample_weight", count, dtype="float32"))
    dataset = tf.data.Dataset.from_tensor_slices(tuple(parts))
    if shuffle:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size, drop_remainder=drop_remainder)


def _text_columns(x) -> tuple[tf.Tensor, ...]:
    """`x` as one (single texts) or two (pairs) tf.string columns of equal length."""
    if isinstance(x, (str, bytes)):
        x = [x]
    if isinstance(x, tuple) and len(x) == 2 and not any(isinstance(c, (str, bytes)) for c in x):
        columns = tuple(text_column(column, f"x[{i}] (text_{'ab'[i]})") for i, column in enumerate(x))
        if columns[0].shape[0] != columns[1].shape[0]:
            raise ValueError(
                f"x is a (text_a, text_b) pair of columns of different lengths: {columns[0].shape[0]} "
                f"and {columns[1].shape[0]}."
            )
        return columns
    if isinstance(x, Mapping):
        raise TypeError(
            "x is a dict (token-id features?); text_dataset takes raw text: a list, numpy array or "
            "tf.data.Dataset of strings, or of (text_a, text_b) pairs."
        )
    array = np.asarray(x, dtype=object)  # never numpy's fixed-width strings (see the module docstring)
    if array.ndim == 1 and array.size and isinstance(array[0], (list, tuple, np.ndarray)):
        lengths = sorted({len(row) if isinstance(row, (list, tuple, np.ndarray)) else 1 for row in array})
        raise ValueError(f"x: rows of different lengths {lengths}; pairs must have exactly 2 texts.")
    if array.ndim == 2 and array.shape[1] in (1, 2):
        return tuple(text_column(array[:, i], f"x[:, {i}]") for i in range(array.shape[1]))
    if array.ndim != 1:
        raise ValueError(
            f"x has shape {array.shape}; expected N texts [N] or N (text_a, text_b) pairs [N, 2]."
        )
    return (text_column(array, "x"),)


def text_column(values, name: str) -> tf.Tensor:
    """A 1-D tf.string tensor of `values` (a `str` is one text), each checked to be text.

    Raises:
        ValueError: naming `name` and the index, for a value that is not a `str` or `bytes`, a
            nested sequence, or no values at all.
    """
    if isinstance(values, (str, bytes)):
        values = [values]
    array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of texts, got shape {array.shape}.")
    if array.size == 0:
        raise ValueError(f"{name} is empty; expected at least one text.")
    for index, value in enumerate(array):
        if not isinstance(value, (str, bytes)):
            raise ValueError(
                f"{name}[{index}] is {value!r} ({type(value).__name__}), not a string; every text must be "
                "a str or bytes."
            )
    return tf.constant(array)


def _per_example(values, name: str, count: int, dtype: str | None = None, num_classes: int | None = None):
    """Labels or weights as numpy arrays with `count` rows (dicts and tuples elementwise), labels
    checked against `num_classes` when given."""
    if isinstance(values, Mapping):
        return {key: _per_example(v, f"{name}[{key!r}]", count, dtype, num_classes)
                for key, v in values.items()}
    if isinstance(values, tuple) and values and not np.isscalar(values[0]):
        return tuple(_per_example(v, f"{name}[{i}]", count, dtype, num_classes) for i, v in enumerate(values))
    array = np.asarray(values)
    if array.dtype.kind in "USO":  # numpy dtype kinds that may hold text: unicode, bytes, object
        raise ValueError(
            f"{name} holds {array.ravel()[:1].tolist()[0]!r} and the like; labels must be numbers: class ids (int) or "
            "values (float). Map label names to ids first, e.g. [names.index(label) for label in y]."
        )
    if array.ndim == 0 or len(array) != count:
        found = "one value" if array.ndim == 0 else f"{len(array)} entries"
        raise ValueError(f"{name} has {found} for {count} texts; it needs one per text.")
    if dtype is None:
        dtype = "float32" if array.dtype.kind == "f" else "int32"
    array = array.astype(dtype)
    if num_classes is not None:
        try:
            check_labels(array, num_classes)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    return array


def _from_dataset(dataset: tf.data.Dataset, batch_size: int, drop_remainder: bool) -> tf.data.Dataset:
    """A dataset of texts (see the module docstring) as `text_dataset` batches them, batching single examples."""
    spec = dataset.element_spec
    parts = spec if isinstance(spec, tuple) else (spec,)
    if len(parts) == 2 and _is_text_spec(parts):  # an unlabelled (text_a, text_b) pair
        dataset, parts = dataset.map(lambda text_a, text_b: ((text_a, text_b),)), (parts,)
    if not (1 <= len(parts) <= 3 and _is_text_spec(parts[0])):
        raise ValueError(
            f"The dataset's elements are {spec}; expected texts: x, (x, y) or (x, y, sample_weight) "
            "with x a tf.string (one text) or a pair of them, or (text_a, text_b) pairs."
        )
    for label_spec in parts[1:]:
        if any(s.dtype == tf.string for s in tf.nest.flatten(label_spec)):
            raise ValueError(
                f"The dataset's labels/weights {label_spec} hold strings; they must be numbers. For text "
                "pairs with labels, nest the pair: ((text_a, text_b), label)."
            )
    ranks = {s.shape.rank for s in tf.nest.flatten(parts[0])}
    if ranks not in ({0}, {1}):
        raise ValueError(
            f"The dataset's texts have shapes {spec}; expected one string per element (scalars) or "
            "batches of strings (vectors), the same for both texts of a pair."
        )
    if ranks == {0}:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.map(lambda text, *rest: (text, *rest))  # always a tuple, as in-memory batches are


def _is_text_spec(spec) -> bool:
    """A string scalar/vector, or a pair of them."""
    specs = spec if isinstance(spec, tuple) and len(spec) == 2 else (spec,)
    return all(isinstance(s, tf.TensorSpec) and s.dtype == tf.string for s in specs)
