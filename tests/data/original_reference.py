"""Reference runner: Google's original `create_pretraining_data.py`, unmodified, plus its pairs.

Run as a script with the original tool's flags and one more, --pairs_output. It first runs the
original tool's own `main` exactly as `python -m bert.create_pretraining_data` does (same flags,
same TFRecords). Then it repeats the original pair generation for the same seed with masking
switched off and writes one JSON line per example to --pairs_output:
{"input_ids": [...], "segment_ids": [...], "is_random_next": bool}. It is a separate process
because the original module defines absl flags at import.
"""

import json
import random

from absl import app, flags
from bert import create_pretraining_data as original
from bert import tokenization

FLAGS = flags.FLAGS
flags.DEFINE_string("pairs_output", None, "JSON-lines file for the unmasked reference examples.")


def main(argv):
    original.main(argv)
    original.create_masked_lm_predictions = lambda tokens, *_: (tokens, [], [])
    tokenizer = tokenization.FullTokenizer(vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
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
    with open(FLAGS.pairs_output, "w", encoding="utf-8") as f:
        for instance in instances:
            record = {
                "input_ids": tokenizer.convert_tokens_to_ids(instance.tokens),
                "segment_ids": list(instance.segment_ids),
                "is_random_next": instance.is_random_next,
            }
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file", "pairs_output"])
    app.run(main)
