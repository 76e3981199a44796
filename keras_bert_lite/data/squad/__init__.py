"""SQuAD v1.1 / v2.0: reading, doc-stride windows, the paper's span scoring, EM/F1, in-graph answering.

Word pieces keep the byte offsets of the word they come from (`BertTokenizer.tokenize_with_offsets`),
so a predicted span maps straight back to the original context text. Windows (`squad_windows`) and
span scoring (`score_spans`) are TensorFlow ops shared by training features, evaluation and the
exported SavedModel.

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

from keras_bert_lite.data.squad.answering import AnswerOptions, answer_questions
from keras_bert_lite.data.squad.features import SquadFeatures, squad_dataset, squad_features
from keras_bert_lite.data.squad.metrics import exact_match, f1_score, normalize_answer, squad_evaluate
from keras_bert_lite.data.squad.predictions import SquadPredictions, predict_answers
from keras_bert_lite.data.squad.reading import SquadExample, parse_question, read_squad
from keras_bert_lite.data.squad.spans import score_spans
from keras_bert_lite.data.squad.windows import squad_windows
