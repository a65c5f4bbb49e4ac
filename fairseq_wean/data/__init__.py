"""File formats shared by the models, the console scripts and the ``preprocess/`` recipes.

* :mod:`fairseq_wean.data.markers`: the source-position markers ``<unk-N>`` (copying rare words);
* :mod:`fairseq_wean.data.align_table`: CoRe's alignment table file (one writer, one reader);
* :mod:`fairseq_wean.data.dictionary`: the words of a fairseq dictionary file, and ``check_entries``, the
  one check of the content of every keyed file (dictionaries, alignment tables, fastBPE codes);
* :mod:`fairseq_wean.data.folder_files`: the files fairseq reads by name from a data or model folder, and
  the one rule for them (a regular file of that folder, checked before anything is read).

These modules depend only on :mod:`fairseq_wean.errors` and :mod:`fairseq_wean.textio`, never on
``models/`` or ``cli/``, so every layer above can import them.
"""
