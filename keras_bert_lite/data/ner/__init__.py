"""CoNLL-2003 named-entity data: reading (`conll`), word-piece label alignment, datasets and
predictions (`inputs`), entity-level F1 (`metrics`).

Example:

    >>> train = read_conll("eng.train", tags=CONLL2003_TAGS)
    >>> ds = ner_dataset(train, preprocessor, CONLL2003_TAGS, batch_size=32, is_training=True)
    >>> entity_f1([s.tags for s in dev], predicted_tags)["f1"]
"""

from keras_bert_lite.data.ner.conll import CONLL2003_TAGS, TaggedSentence, read_conll
from keras_bert_lite.data.ner.inputs import ner_dataset, predicted_tags, tag_inputs, word_positions
from keras_bert_lite.data.ner.metrics import entity_f1, entity_spans
