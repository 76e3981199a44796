"""Reference runner: Google's original `create_pretraining_data.py`, unmodified, plus its pairs.

Run as a script with the original tool's flags and two more. It first runs the original tool's
own `main` exactly as `python -m bert.create_pretraining_data` does (same flags, same TFRecords).
Then it repeats the original pair generation for the same seed twice, writing one JSON line per
example, {"input_ids": [...], "segment_ids": [...], "is_random_next": bool}, of the tokens before
masking:

- --pairs_output: with `create_masked_lm_predictions` replaced by a function that draws nothing
  from the random stream (the pair algorithm alone);
- --drawn_pairs_output: with the original `create_masked_lm_predictions` called as the tool calls
  it (its random draws made, interleaved with the pairs' draws), its masks then dropped.

It is a separate process because the original module defines absl flags at import.
"""

import json
import random

from absl import app, flags
from bert import create_pretraining_data as original
from bert import tokenization

FLAGS = flags.FLAGS
flags.DEFINE_string("pairs_output", None, "JSON lines: the pairs with masking drawing nothing.")
flags.DEFINE_string("drawn_pairs_output", None, "JSON lines: the pairs with masking's draws made, masks dropped.")


def _write_pairs(path: str, tokenizer, mask) -> None:
    """The original `create_training_instances` for FLAGS' seed, with `mask` as its masking."""
    real_mask = original.create_masked_lm_predictions
    original.create_masked_lm_predictions = mask
    try:
        instances = original.create_training_instances(
            FLAGS.input_file.split(","),
            tokenizer,
            FLAGS.max_seq_length,
            FLAGS.dupe_factor,
            FLAGS.short_seq_prob,
            FLAGS.masked_lm_prob,
            FLAGS.max_predictions_per_seq,
            random.Random(FLAGS.random_seed),
        )
    finally:
        original.create_masked_lm_predictions = real_mask
    with open(path, "w", encoding="utf-8") as f:
        for instance in instances:
            record = {
                "input_ids": tokenizer.convert_tokens_to_ids(instance.tokens),
                "segment_ids": list(instance.segment_ids),
                "is_random_next": instance.is_random_next,
            }
            f.write(json.dumps(record) + "\n")


def main(argv):
    original.main(argv)
    tokenizer = tokenization.FullTokenizer(vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    real_mask = original.create_masked_lm_predictions

    def draws_and_drops(tokens, *args):
        real_mask(tokens, *args)  # it copies `tokens`; only the random stream advances
        return tokens, [], []

    _write_pairs(FLAGS.pairs_output, tokenizer, lambda tokens, *_: (tokens, [], []))
    _write_pairs(FLAGS.drawn_pairs_output, tokenizer, draws_and_drops)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file", "pairs_output", "drawn_pairs_output"])
    app.run(main)
