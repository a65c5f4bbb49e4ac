"""One command per task: prepare the data, train fairseq's baselines and our models under one budget,
select each on validation, decode the test sets with beam 5, score, and write the comparison.

    fairseq-wean-compare {simplification,summarization,translation} [DATA_DIR] [--tiny]
    bash examples/compare.sh simplification ../shared/data          # the same
    python -m fairseq_wean.compare simplification ../shared/data    # the same

Systems (equal sizes where the architectures allow: 2 layers, 256 units, 256-d embeddings; one
epoch budget per task, the same for every system): fairseq ``lstm``, fairseq ``transformer``
(small: 2+2 layers, 256, FFN 512, 4 heads), ``wean_lstm``, ``core_copy`` and
``word_attn_gated`` of this plugin, and for simplification the character-level ``transformer`` of
Yu et al., "Sentence Simplification with Character-Level Transformer" (University of Potsdam
project report, 2018). Every fairseq command loads the plugin (``--user-dir fairseq_wean``), the
baselines too, so all runs share its data fixes (no dropped last batch).

Selection: after every epoch fairseq-train decodes the validation sources (beam 5) and scores
them against all their references (SARI for simplification, ROUGE-L for summarization, BLEU for
translation; ``--task translation_with_metrics``), and keeps the checkpoint with the best score
(``--best-checkpoint-metric``), never by the test set. Its test outputs are scored with
``fairseq_wean.scoring.score`` (the scores of ``fairseq-wean-score``), with paired-bootstrap
p-values against fairseq ``lstm`` on the same vocabulary.

Budgets: ``--budget short`` (default; ``--epochs`` epochs with 32-sentence batches, which
model learns fastest) and ``--budget converged`` (``--max-tokens`` batches, each system until
its validation score has not improved for ``--patience`` epochs, at most ``--max-epoch``; the
word-attention ablation with 3 seeds). Every finished system is published under
``docs/results/TASK/SYSTEM-VOCAB/`` (``TESTSET.hyp`` + ``scores.json``) and reused from there.

Time on a 2-core CPU machine (two systems at a time, one thread each; see docs/results/<task>.md):
simplification ~2 h (11 systems x 2 epochs; 2 h 02 min on an idle machine, training 10-32 min
per word or sentencepiece system, 37 min for the character transformer), summarization
~25-35 min (5 x 3 epochs of the 10k Gigaword sample), translation ~1 h (5 x 2 epochs of Multi30k).
``--runs`` runs a part; finished systems are reused. ``--tiny`` (CI): 1-3 min.

Writes to ``--out`` (default ``work_dirs/compare-TASK``): ``results.md`` and ``results.csv``
(the table), ``valid_curve.png`` (validation score per epoch for every system, WEAN's Figure 2),
``report.html`` (the inspection page of the main test set),
``results.json`` (everything, with the exact commands) and ``runs/SYSTEM-VOCAB/`` (training log,
outputs). A finished system is not redone when the command is run again (``--force`` redoes).
An interrupted system goes on from its last epoch when the same command is run again with the same
``--out`` (``runs/SYSTEM-VOCAB/checkpoints/checkpoint_last.pt`` and ``train_state.json``; a
higher ``--max-epoch`` also lets a run that stopped at the old cap go on).

Modules: :mod:`~fairseq_wean.compare.systems` (the systems and tasks: tables),
:mod:`~fairseq_wean.compare.runner` (data preparation, fairseq-train with ``--log-format json``,
decoding jobs, publishing to the results directory, launch order, progress),
:mod:`~fairseq_wean.compare.evaluate` (one system's test decoding, in its own process),
:mod:`~fairseq_wean.compare.report` (scores, tables, seed table, figure, HTML page) and
:mod:`~fairseq_wean.compare.cli` (options, ``results.json``).
"""
