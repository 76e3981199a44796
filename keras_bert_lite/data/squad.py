"""SQuAD v1.1 / v2.0: JSON reading, doc-stride features, the paper's span scoring, EM/F1.

Word pieces keep the byte offsets of the word they come from (`tokenize_with_offsets`), so a
predicted span maps straight back to the original context text.

Example:

    >>> examples = read_squad("train-v1.1.json", is_training=True)
    >>> features = squad_features(examples, preprocessor.tokenizer, max_seq_length=384)
    >>> model.fit(squad_dataset(features, batch_size=32, is_training=True))
    >>> outputs = model.predict(squad_dataset(dev_features, 32, is_training=False))
    >>> answers = predict_answers(dev_examples, dev_features, outputs["start_logits"],
    ...                           outputs["end_logits"]).answers
    >>> squad_evaluate(dev_examples, answers)
    {'exact_match': ..., 'f1': ..., 'total': ...}
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import string

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.bad_input import BadRecords

# BERT's pre-tokenization: whitespace separates words and is dropped; every punctuation mark
# (ASCII symbols and Unicode P*) and every CJK ideograph is a word of its own.
_PUNCTUATION = r"[!-/:-@\[-`{-~\p{P}]"
_CJK = (
    r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]"
)
_KEEP_DELIMITERS = f"{_PUNCTUATION}|{_CJK}"
_DELIMITERS = rf"\s+|{_KEEP_DELIMITERS}"


def tokenize_with_offsets(tokenizer, strings: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
    """Word pieces of each string with the byte span of the word each piece belongs to.

    Words are split as BERT's basic tokenizer does (whitespace, punctuation, CJK), then each
    word is tokenized by `tokenizer`, so ids equal `tokenizer(strings)`. All pieces of a word
    share its span, so a span of pieces maps back to whole words of the original string.

    Args:
        tokenizer: a `keras_bert_lite.text.BertTokenizer` (or any layer mapping tf.string [N] to
            ragged int ids [N, (pieces)]).
        strings: tf.string [batch].

    Returns:
        (ids int32, starts int64, ends int64), each ragged [batch, (pieces)]; `starts`/`ends` are
        UTF-8 byte offsets into the original strings (end exclusive).
    """
    import tensorflow_text as tf_text  # loaded on use (~120 MB resident)

    words, starts, ends = tf_text.regex_split_with_offsets(strings, _DELIMITERS, _KEEP_DELIMITERS)
    pieces = tokenizer(words.flat_values)
    counts = pieces.row_lengths()
    per_row = tf.reduce_sum(words.with_flat_values(counts), axis=1)

    def regroup(values):
        return tf.RaggedTensor.from_row_lengths(values, per_row, validate=False)

    return (
        regroup(tf.cast(pieces.flat_values, tf.int32)),
        regroup(tf.repeat(starts.flat_values, counts)),
        regroup(tf.repeat(ends.flat_values, counts)),
    )


# ----------------------------------------------------------------------------------- reading
@dataclasses.dataclass
class SquadExample:
    """One question about one context.

    Attributes:
        qas_id: the question id.
        question: question text.
        context: the paragraph.
        answers: every reference answer text (empty for an unanswerable v2.0 question).
        answer_start: character offset in `context` of the first answer, -1 if none.
        is_impossible: v2.0 question without an answer in the context.
    """

    qas_id: str
    question: str
    context: str
    answers: list[str]
    answer_start: int
    is_impossible: bool = False


def _line_of(raw: str, qas_id: str) -> int | None:
    position = raw.find(json.dumps(qas_id))
    return None if position < 0 else raw.count("\n", 0, position) + 1


def read_squad(path: str | os.PathLike, is_training: bool, on_error: str = "raise") -> list[SquadExample]:
    """Reads a SQuAD v1.1 or v2.0 JSON file.

    Args:
        path: the JSON file (local or any `tf.io.gfile` path).
        is_training: check that the first answer of every answerable question occurs in its
            context at `answer_start` (it becomes the training label). Evaluation files are
            scored on answer texts only, so offsets are not checked there.
        on_error: "raise" at the first bad question, or "skip" it with a logged warning. Bad
            questions: missing fields, no answer for an answerable training question, an answer
            that does not occur at its offset.

    Returns:
        The examples, in file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: invalid JSON (with its line), a file without `data`, or a bad question
            (file, line and question id) with on_error="raise".
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        try:
            raw = f.read().decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start}).") from None
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}, line {e.lineno}: not valid JSON: {e.msg}.") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(f"{path}: expected a JSON object with a 'data' list (SQuAD format).")
    bad = BadRecords(path, on_error)
    examples = []
    for article in document["data"]:
        for paragraph in article.get("paragraphs", []) if isinstance(article, dict) else []:
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            if not isinstance(context, str):
                bad(None, f"a paragraph of article {article.get('title', '?')!r} has no 'context' string.")
                continue
            for qa in paragraph.get("qas", []):
                example = parse_question(qa, context, is_training, bad, raw)
                if example is not None:
                    examples.append(example)
    if not examples:
        raise ValueError(f"{path}: no usable questions ({len(bad.messages)} bad ones skipped).")
    return examples


def parse_question(
    qa: dict, context: str, is_training: bool, bad: BadRecords, raw: str = ""
) -> SquadExample | None:
    """One SQuAD `qas` entry as a `SquadExample`, or None after reporting it to `bad`.

    Args:
        qa: {"id", "question", "answers": [{"text", "answer_start"}], optional "is_impossible"}.
        context: its paragraph.
        is_training: check the first answer's offset (see `read_squad`).
        bad: where problems are reported.
        raw: the file's text, to name the line of a bad question (optional).
    """
    qas_id = qa.get("id") if isinstance(qa, dict) else None
    if not isinstance(qas_id, str) or not isinstance(qa.get("question"), str):
        bad(None, f"question entry {str(qa)[:80]!r} lacks an 'id' or 'question' string.")
        return None
    line = _line_of(raw, qas_id)
    is_impossible = bool(qa.get("is_impossible", False))
    answers = qa.get("answers", [])
    if not isinstance(answers, list) or not all(
        isinstance(a, dict) and isinstance(a.get("text"), str) and isinstance(a.get("answer_start"), int)
        for a in answers
    ):
        bad(line, f"question {qas_id!r}: each answer needs a 'text' string and an 'answer_start' integer.")
        return None
    answer_start = -1
    if answers and not is_impossible:
        text, answer_start = answers[0]["text"], answers[0]["answer_start"]
        found = context[answer_start : answer_start + len(text)] if answer_start >= 0 else ""
        if is_training and found != text:
            bad(
                line,
                f"question {qas_id!r}: answer {text!r} does not occur at character {answer_start} of "
                f"its context (found {found!r}).",
            )
            return None
    elif is_training and not is_impossible:
        bad(line, f"question {qas_id!r} has no answer and is not marked is_impossible.")
        return None
    return SquadExample(
        qas_id=qas_id,
        question=qa["question"],
        context=context,
        answers=[] if is_impossible else [a["text"] for a in answers],
        answer_start=answer_start,
        is_impossible=is_impossible,
    )


# ---------------------------------------------------------------------------------- features
@dataclasses.dataclass
class SquadFeatures:
    """Model inputs for windows over the contexts, and what maps them back to text.

    Attributes (N windows, S = max_seq_length):
        input_word_ids, input_mask, input_type_ids: int32 [N, S], `[CLS] question [SEP] window
            [SEP]`, padded.
        start_positions, end_positions: int32 [N], the answer's first/last token in the window,
            0 ([CLS]) if the window does not contain it or the question is unanswerable.
        example_index: int32 [N], the window's example.
        token_starts, token_ends: int32 [N, S], byte span in the context of the word of each
            window token, -1 for tokens outside the context.
        max_context: bool [N, S], whether this window gives the token its most context (the
            window in which a token's prediction counts).
    """

    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    token_starts: np.ndarray
    token_ends: np.ndarray
    max_context: np.ndarray

    def __len__(self) -> int:
        return len(self.example_index)

    def model_inputs(self) -> dict[str, np.ndarray]:
        return {
            "input_word_ids": self.input_word_ids,
            "input_mask": self.input_mask,
            "input_type_ids": self.input_type_ids,
        }


def _tokenize_all(tokenizer, texts: list[str], chunk: int = 512):
    """Ids and byte spans (as Python lists) of every text, tokenized in graph-sized chunks."""
    ids, starts, ends = [], [], []
    for i in range(0, len(texts), chunk):
        batch = tokenize_with_offsets(tokenizer, tf.constant(texts[i : i + chunk], tf.string))
        ids += batch[0].to_list()
        starts += batch[1].to_list()
        ends += batch[2].to_list()
    return ids, starts, ends


def _doc_spans(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) windows over the context tokens, `doc_stride` apart, as in the paper."""
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)


def _max_context(spans: list[tuple[int, int]], span_index: int, position: int) -> bool:
    """Whether window `span_index` gives token `position` the most context (ties: shorter side)."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        if not start <= position < start + length:
            continue
        score = min(position - start, start + length - 1 - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index == span_index


def squad_features(
    examples: list[SquadExample],
    tokenizer,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
) -> SquadFeatures:
    """Windows `[CLS] question [SEP] context window [SEP]` over every example.

    Args:
        examples: from `read_squad`.
        tokenizer: the model's `BertTokenizer` (ids for [CLS], [SEP], [PAD] come from it).
        max_seq_length: tokens per window (384 in the paper).
        doc_stride: tokens between the starts of consecutive windows (128).
        max_query_length: questions are cut to this many tokens (64).

    Every window is kept (as in the paper); one that does not contain the whole answer, or
    belongs to an unanswerable question, is labelled with position 0 ([CLS]).

    Returns:
        `SquadFeatures`.
    """
    if max_seq_length < max_query_length + 4:
        raise ValueError(
            f"max_seq_length ({max_seq_length}) must exceed max_query_length ({max_query_length}) + 3."
        )
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}.")
    contexts = list(dict.fromkeys(e.context for e in examples))
    context_index = {c: i for i, c in enumerate(contexts)}
    context_ids, context_starts, context_ends = _tokenize_all(tokenizer, contexts)
    question_ids = _tokenize_all(tokenizer, [e.question for e in examples])[0]
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id

    rows = collections.defaultdict(list)
    for example_index, example in enumerate(examples):
        c = context_index[example.context]
        doc_ids, doc_starts, doc_ends = context_ids[c], context_starts[c], context_ends[c]
        query = question_ids[example_index][:max_query_length]
        answer_tokens = None
        if not example.is_impossible and example.answer_start >= 0 and example.answers:
            answer_tokens = _answer_tokens(example, doc_starts, doc_ends)
        max_tokens = max_seq_length - len(query) - 3
        spans = _doc_spans(len(doc_ids), max_tokens, doc_stride)
        for span_index, (start, length) in enumerate(spans):
            offset = len(query) + 2
            ids = [cls_id, *query, sep_id, *doc_ids[start : start + length], sep_id]
            types = [0] * offset + [1] * (length + 1)
            token_starts = [-1] * offset + doc_starts[start : start + length] + [-1]
            token_ends = [-1] * offset + doc_ends[start : start + length] + [-1]
            max_context = [False] * offset + [
                _max_context(spans, span_index, start + i) for i in range(length)
            ] + [False]
            start_position = end_position = 0
            if answer_tokens is not None:
                first, last = answer_tokens
                if start <= first and last < start + length:
                    start_position, end_position = first - start + offset, last - start + offset
            pad = max_seq_length - len(ids)
            rows["input_word_ids"].append(ids + [pad_id] * pad)
            rows["input_mask"].append([1] * len(ids) + [0] * pad)
            rows["input_type_ids"].append(types + [0] * pad)
            rows["token_starts"].append(token_starts + [-1] * pad)
            rows["token_ends"].append(token_ends + [-1] * pad)
            rows["max_context"].append(max_context + [False] * pad)
            rows["start_positions"].append(start_position)
            rows["end_positions"].append(end_position)
            rows["example_index"].append(example_index)
    return SquadFeatures(
        **{name: np.asarray(values, "bool" if name == "max_context" else "int32") for name, values in rows.items()}
    )


def _answer_tokens(example: SquadExample, starts: list[int], ends: list[int]) -> tuple[int, int] | None:
    """First and last context token overlapping the first answer's byte span, or None."""
    byte_start = len(example.context[: example.answer_start].encode("utf-8"))
    byte_end = byte_start + len(example.answers[0].encode("utf-8"))
    inside = [i for i, (s, e) in enumerate(zip(starts, ends)) if e > byte_start and s < byte_end]
    return (inside[0], inside[-1]) if inside else None


def squad_dataset(
    features: SquadFeatures, batch_size: int, is_training: bool, seed: int | None = None
) -> tf.data.Dataset:
    """`(inputs, labels)` batches: the three model inputs and `start_positions`/`end_positions`.

    Shuffled (with `seed`) when `is_training`; in file order otherwise, so predictions line up
    with `features`.
    """
    labels = {"start_positions": features.start_positions, "end_positions": features.end_positions}
    ds = tf.data.Dataset.from_tensor_slices((features.model_inputs(), labels))
    if is_training:
        ds = ds.shuffle(len(features), seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


# ------------------------------------------------------------------------------- predictions
@dataclasses.dataclass
class SquadPredictions:
    """Answers per question id.

    Attributes:
        answers: qas_id -> predicted answer text ("" = no answer, v2.0).
        nbest: qas_id -> list of {"text", "probability", "start_logit", "end_logit"}, best first.
        null_odds: qas_id -> null score minus best non-null score (v2.0; empty for v1.1).
    """

    answers: dict[str, str]
    nbest: dict[str, list[dict]]
    null_odds: dict[str, float]


def predict_answers(
    examples: list[SquadExample],
    features: SquadFeatures,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2_with_negative: bool = False,
    null_score_diff_threshold: float = 0.0,
) -> SquadPredictions:
    """The paper's answer selection: the span (i, j), j >= i, maximising start_i + end_j.

    Candidates come from the `n_best_size` best start and end positions of every window of an
    example; both ends must be context tokens, the span at most `max_answer_length` tokens, and
    the start token must have its maximal context in that window. The answer text is the
    original context between the start of the first word and the end of the last.

    Args:
        examples, features: as given to the model.
        start_logits, end_logits: float [N, S], the model's outputs for `features`, in order.
        n_best_size: candidates kept per side and in the n-best list (20).
        max_answer_length: longest answer in tokens (30).
        version_2_with_negative: allow "no answer" (score of [CLS] at start and end).
        null_score_diff_threshold: predict "" when null score - best span score exceeds it.

    Returns:
        `SquadPredictions`.
    """
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    if start_logits.shape != features.input_word_ids.shape or end_logits.shape != start_logits.shape:
        raise ValueError(
            f"Logits of shape {start_logits.shape}/{end_logits.shape} do not match the features "
            f"{features.input_word_ids.shape}."
        )
    windows = collections.defaultdict(list)
    for feature_index, example_index in enumerate(features.example_index):
        windows[int(example_index)].append(feature_index)
    answers, nbest, null_odds = {}, {}, {}
    for example_index, example in enumerate(examples):
        context = example.context.encode("utf-8")
        candidates, null_score = [], None
        for f in windows[example_index]:
            starts, ends = start_logits[f], end_logits[f]
            score = float(starts[0] + ends[0])
            if null_score is None or score < null_score:
                null_score, null_logits = score, (float(starts[0]), float(ends[0]))
            top_starts = np.argsort(-starts, kind="stable")[:n_best_size]
            top_ends = np.argsort(-ends, kind="stable")[:n_best_size]
            for i in top_starts:
                if features.token_starts[f, i] < 0 or not features.max_context[f, i]:
                    continue
                for j in top_ends:
                    if features.token_starts[f, j] < 0 or j < i or j - i + 1 > max_answer_length:
                        continue
                    candidates.append((float(starts[i] + ends[j]), float(starts[i]), float(ends[j]), f, i, j))
        candidates.sort(key=lambda c: c[0], reverse=True)
        entries, seen = [], set()
        for score, s_logit, e_logit, f, i, j in candidates:
            text = context[features.token_starts[f, i] : features.token_ends[f, j]].decode("utf-8", "replace")
            if text in seen:
                continue
            seen.add(text)
            entries.append({"text": text, "score": score, "start_logit": s_logit, "end_logit": e_logit})
            if len(entries) >= n_best_size:
                break
        best_non_null = entries[0] if entries else None
        if version_2_with_negative and null_score is not None and "" not in seen:
            entries.append({"text": "", "score": null_score, "start_logit": null_logits[0],
                            "end_logit": null_logits[1]})
            entries.sort(key=lambda e: e["score"], reverse=True)
        if not entries:
            entries = [{"text": "", "score": 0.0, "start_logit": 0.0, "end_logit": 0.0}]
        scores = np.array([e["score"] for e in entries], "float64")
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        nbest[example.qas_id] = [
            {"text": e["text"], "probability": float(p), "start_logit": e["start_logit"],
             "end_logit": e["end_logit"]}
            for e, p in zip(entries, probabilities)
        ]
        if not version_2_with_negative:
            answers[example.qas_id] = best_non_null["text"] if best_non_null else ""
            continue
        if best_non_null is None:
            answers[example.qas_id] = ""
            null_odds[example.qas_id] = 0.0 if null_score is None else float("inf")
            continue
        difference = null_score - best_non_null["score"]
        null_odds[example.qas_id] = difference
        answers[example.qas_id] = "" if difference > null_score_diff_threshold else best_non_null["text"]
    return SquadPredictions(answers, nbest, null_odds)


# ---------------------------------------------------------------------------------- scoring
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION_CHARS = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION_CHARS)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> int:
    """1 if the normalised texts are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(reference))


def f1_score(prediction: str, reference: str) -> float:
    """Token-overlap F1 of the normalised texts (both empty: 1; one empty: 0)."""
    predicted = normalize_answer(prediction).split()
    gold = normalize_answer(reference).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = collections.Counter(predicted) & collections.Counter(gold)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_evaluate(examples: list[SquadExample], predictions: dict[str, str]) -> dict[str, float]:
    """The official SQuAD EM and F1 (percentages), maximised over the reference answers.

    Unanswerable questions (v2.0), and questions whose references all normalise to nothing,
    have the single reference "". A question without a prediction scores 0.

    Returns:
        {"exact_match", "f1", "total"}, plus "HasAns_exact_match", "HasAns_f1",
        "HasAns_total", "NoAns_exact_match", "NoAns_f1", "NoAns_total" when the data has
        unanswerable questions.
    """
    if not examples:
        raise ValueError("squad_evaluate needs at least one example.")
    exact, f1, has_answer = [], [], []
    for example in examples:
        references = [a for a in example.answers if normalize_answer(a)] or [""]
        prediction = predictions.get(example.qas_id)
        has_answer.append(references != [""])
        if prediction is None:
            exact.append(0.0)
            f1.append(0.0)
            continue
        exact.append(max(exact_match(prediction, r) for r in references))
        f1.append(max(f1_score(prediction, r) for r in references))
    exact, f1, has_answer = np.array(exact, "float64"), np.array(f1, "float64"), np.array(has_answer)
    result = {"exact_match": 100.0 * float(exact.mean()), "f1": 100.0 * float(f1.mean()), "total": len(examples)}
    if any(e.is_impossible for e in examples):
        for prefix, subset in (("HasAns", has_answer), ("NoAns", ~has_answer)):
            result[f"{prefix}_total"] = int(subset.sum())
            if subset.any():
                result[f"{prefix}_exact_match"] = 100.0 * float(exact[subset].mean())
                result[f"{prefix}_f1"] = 100.0 * float(f1[subset].mean())
    return result
