"""Reading SQuAD v1.1 / v2.0 JSON files into `SquadExample`s, with every bad field reported.

Bad questions are named by file, line and question id. Lines are found by one pass over the
file's JSON tokens (`_json_lines`), made only when the first bad record is reported, so reading
stays linear in the file size however many questions are bad.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re

from tqdm import tqdm

from keras_bert_lite.config import read_bytes
from keras_bert_lite.data.bad_input import BadRecords


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


# A JSON string literal, or one of the structural characters; numbers, true/false/null are skipped.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def _json_lines(raw: str) -> dict[tuple, int]:
    """1-based lines of the objects and keys of a JSON text, by path, e.g. `("data", 0, "paragraphs", 2)`.

    Built from a single scan of the JSON tokens (valid JSON only: the text has been parsed before), so
    that a bad record's line costs one pass over the file in all, not one per bad record.
    """
    lines: dict[tuple, int] = {}
    stack: list[list] = []  # [kind "{" or "[", path, current key or index, last string seen]
    line, scanned = 1, 0
    for match in _JSON_TOKENS.finditer(raw):
        token, position = match.group(), match.start()
        line += raw.count("\n", scanned, position)
        scanned = position
        if token in "{[":
            path = () if not stack else (*stack[-1][1], stack[-1][2])
            stack.append([token, path, 0 if token == "[" else None, None])
            lines.setdefault(path, line)
        elif token in "}]":
            stack.pop()
        elif token == ":":
            top = stack[-1]
            top[2] = json.loads(top[3])
            lines[(*top[1], top[2])] = line
        elif token == ",":
            if stack[-1][0] == "[":
                stack[-1][2] += 1
        else:
            stack[-1][3] = token
    return lines


def read_squad(
    path: str | os.PathLike, is_training: bool, on_error: str = "raise", progress: bool = False
) -> list[SquadExample]:
    """Reads a SQuAD v1.1 or v2.0 JSON file.

    Args:
        path: the JSON file (local or any `tf.io.gfile` path).
        is_training: check that the first answer of every answerable question occurs in its
            context at `answer_start` (it becomes the training label). Evaluation files are
            scored on answer texts only, so offsets are not checked there.
        on_error: "raise" at the first bad record, or "skip" it with a logged warning. Bad records:
            articles, paragraphs, questions or answers of the wrong type or missing a field, an
            `is_impossible` that is not true/false, an empty answer text, a repeated question id,
            text that is not valid Unicode (unpaired surrogates), and for training an answerable
            question without an answer or with its first answer not at its offset.
        progress: show a progress bar over the articles.

    Returns:
        The examples, in file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not UTF-8, invalid JSON (with its line), nested too deeply, a file without a
            `data` list, no usable question, or a bad record (file, line and question id) with
            on_error="raise".
    """
    path, data = read_bytes(path, "SQuAD file")
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start}).") from None
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}, line {e.lineno}: not valid JSON: {e.msg}.") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to be a SQuAD file.") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(f"{path}: expected a JSON object with a 'data' list (SQuAD format).")
    bad = BadRecords(path, on_error)
    json_lines = functools.cache(lambda: _json_lines(raw))  # the file is scanned at its first bad record

    def line(at: tuple) -> int | None:
        """The line of the object at path `at` (of its "id" key, for questions)."""
        return json_lines().get((*at, "id")) or json_lines().get(at)

    examples: list[SquadExample] = []
    first_path: dict[str, tuple] = {}  # question id -> where it occurs first
    for index, article in enumerate(tqdm(document["data"], "Reading", unit="article", disable=not progress)):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            bad(line(("data", index)), f"article {index} is not an object with a 'paragraphs' list.")
            continue
        for paragraph_index, paragraph in enumerate(article["paragraphs"]):
            at = ("data", index, "paragraphs", paragraph_index)
            name = f"paragraph {paragraph_index} of article {article.get('title', index)!r}"
            if not isinstance(paragraph, dict):
                bad(line(at), f"{name} is not an object.")
                continue
            context, questions = paragraph.get("context"), paragraph.get("qas")
            problem = _text_problem(context, "'context'")
            if problem is None and not isinstance(questions, list):
                problem = f"its 'qas' is {_kind(questions)}, not a list"
            if problem:
                bad(line(at), f"{name}: {problem}.")
                continue
            for question_index, qa in enumerate(questions):
                question_at = (*at, "qas", question_index)
                example, problem = _parse_question(qa, context, is_training)
                if problem is None and example.qas_id in first_path:
                    problem = (
                        f"question {example.qas_id!r}: the id repeats the question at line "
                        f"{line(first_path[example.qas_id])} (predictions are keyed by id)"
                    )
                if problem:
                    bad(line(question_at), f"{problem}.")
                    continue
                first_path[example.qas_id] = question_at
                examples.append(example)
    if not examples:
        raise ValueError(f"{path}: no usable questions ({len(bad.messages)} bad records skipped).")
    return examples


def parse_question(qa: dict, context: str, is_training: bool, bad: BadRecords) -> SquadExample | None:
    """One SQuAD `qas` entry as a `SquadExample`, or None after reporting it to `bad` (without a line).

    Args:
        qa: {"id", "question", "answers": [{"text", "answer_start"}], optional "is_impossible"}.
        context: its paragraph.
        is_training: check the first answer's offset (see `read_squad`).
        bad: where problems are reported.
    """
    example, problem = _parse_question(qa, context, is_training)
    if problem:
        bad(None, f"{problem}.")
    return example


def _parse_question(qa, context: str, is_training: bool) -> tuple[SquadExample | None, str | None]:
    """(the example, None), or (None, what is wrong with the entry)."""
    if not isinstance(qa, dict):
        return None, f"a question entry is {_kind(qa)}, not an object"
    qas_id = qa.get("id")
    if not isinstance(qas_id, str):
        return None, f"question entry {str(qa)[:80]!r} has no 'id' string (its 'id' is {_kind(qas_id)})"
    name = f"question {qas_id!r}"
    problem = _text_problem(qas_id, "its 'id'") or _text_problem(qa.get("question"), "its 'question'")
    if problem:
        return None, f"{name}: {problem}"
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
        return None, f"{name}: 'is_impossible' must be true or false, got {_kind(is_impossible)}"
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        return None, f"{name}: its 'answers' is {_kind(answers)}, not a list"
    for number, answer in enumerate(answers):
        problem = _answer_problem(answer, number, check_text=not is_impossible)
        if problem:
            return None, f"{name}: {problem}"
    answer_start = -1
    if answers and not is_impossible:
        text, answer_start = answers[0]["text"], answers[0]["answer_start"]
        found = context[answer_start : answer_start + len(text)] if answer_start >= 0 else ""
        if is_training and found != text:
            return None, (
                f"{name}: answer {text!r} does not occur at character {answer_start} of its context "
                f"(found {found!r})"
            )
    elif is_training and not is_impossible:
        return None, f"{name} has no answer and is not marked is_impossible"
    example = SquadExample(
        qas_id=qas_id,
        question=qa["question"],
        context=context,
        answers=[] if is_impossible else [a["text"] for a in answers],
        answer_start=answer_start,
        is_impossible=is_impossible,
    )
    return example, None


def _answer_problem(answer, number: int, check_text: bool) -> str | None:
    """What is wrong with the `number`-th answer object, or None."""
    if not isinstance(answer, dict):
        return f"answer {number} is {_kind(answer)}, not an object"
    start = answer.get("answer_start")
    if type(start) is not int:  # noqa: E721 - true/false are ints to isinstance
        return f"answer {number}'s 'answer_start' is {_kind(start)}, not an integer"
    problem = _text_problem(answer.get("text"), f"answer {number}'s 'text'")
    if problem:
        return problem
    if check_text and not answer["text"].strip():
        return (
            f"answer {number} has an empty 'text' (at character {start}); an unanswerable question "
            "is marked \"is_impossible\": true"
        )
    return None


def _text_problem(value, what: str) -> str | None:
    """Why `value` cannot be used as text (not a string, or not encodable as UTF-8), or None."""
    if not isinstance(value, str):
        return f"{what} is {_kind(value)}, not a string"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"{what} holds an unpaired surrogate (\\u{ord(value[e.start]):04x}) at character {e.start}"
    return None


def _kind(value) -> str:
    """A JSON value described for an error message."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true or false
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"
