"""File formats shared by the models, the console scripts and the ``preprocess/`` recipes.

* :mod:`fairseq_wean.data.markers`: the source-position markers ``<unk-N>`` (copying rare words);
* :mod:`fairseq_wean.data.align_table`: CoRe's alignment table file (one writer, one reader);
* :mod:`fairseq_wean.data.dictionary`: the words of a fairseq dictionary file.

These modules depend only on :mod:`fairseq_wean.errors` and :mod:`fairseq_wean.textio`, never on
``models/`` or ``cli/``, so every layer above can import them.
"""
