"""keras_bert_lite: BERT on Keras 3 and TensorFlow.

    import keras_bert_lite as kbl
    encoder = kbl.BertEncoder(kbl.BertConfig.preset("base"))
    prep = kbl.BertPreprocessor("vocab.txt", seq_length=128)
    outputs = encoder(prep(["the cat sat on the mat"]))

    clf = kbl.BertClassifier.from_checkpoint("all-MiniLM-L6-v2", num_classes=2, seq_length=128)
    clf.fit(["a warm, funny film", "dull"], [1, 0], epochs=3)   # BERT's AdamW, constant 5e-5, by default
    clf.predict(["an instant classic"])                          # logits
"""

from keras_bert_lite import tf_startup  # noqa: F401 - first: it acts before TensorFlow loads
from keras_bert_lite.config import BertConfig
from keras_bert_lite.data import (
    builtin_documents,
    check_pretraining_files,
    create_pretraining_data,
    pretraining_dataset,
    read_documents,
)
from keras_bert_lite.export import export_encoder, export_saved_model
from keras_bert_lite.interop import (
    CheckpointMismatchError,
    LoadReport,
    load_google_checkpoint,
    load_hf_checkpoint,
    load_keras_hub_preset,
    save_google_checkpoint,
    save_hf_checkpoint,
    save_keras_hub_preset,
)
from keras_bert_lite.layers import (
    BertEmbeddings,
    BertPooler,
    ClassificationHead,
    MaskedLMHead,
    NextSentenceHead,
    SentencePooling,
    SpanHead,
    TransformerEncoderBlock,
)
from keras_bert_lite.models import (
    BertClassifier,
    BertEncoder,
    BertFeatureExtractor,
    BertMaskedLM,
    BertPretrainer,
    BertSentenceEncoder,
    BertSpanLabeler,
    BertTokenClassifier,
    pretraining_losses,
    save_model,
    span_loss,
    text_dataset,
)
from keras_bert_lite.models.checkpoint_folder import (
    find_checkpoint,
    from_checkpoint,
    from_google_checkpoint,
    from_hf_checkpoint,
)
from keras_bert_lite.optimization import AdamW, WarmupLinearDecay, create_optimizer
from keras_bert_lite.text import (
    BertPackInputs,
    BertPreprocessor,
    BertTokenizer,
    MaskedLMMasker,
    build_vocab,
    load_vocabulary,
)
from keras_bert_lite.training import (
    PretrainingLoop,
    export_pretrained,
    get_strategy,
    run_pretraining,
)

__version__ = "0.1.0"
