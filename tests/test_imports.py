"""`import keras_bert_lite` stays light: heavy optional modules load only when used."""

import subprocess
import sys


def test_import_does_not_load_tensorflow_text_or_tfds():
    # A training process reading TFRecords needs neither (tensorflow_text alone is ~120 MB
    # resident); they load on first use of the text tools / TFDS readers.
    code = (
        "import sys, keras_bert_lite\n"
        "print(sorted(m for m in ('tensorflow_text', 'tensorflow_datasets') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"

