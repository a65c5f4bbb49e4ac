"""The compared systems and the tasks: fairseq-train arguments, vocabulary variants, epoch budgets.

Tables only (no code runs here): :mod:`fairseq_wean.compare.runner` turns them into commands.
"""

# ---------------------------------------------------------------------------------------------
# Systems. Sizes: 2 layers, 256 units, 256-d embeddings everywhere.
# Adam 2e-3 and batches of 32 sentences: WEAN used 1e-3 and 64, but for budgets of a few epochs on
# CPU this learns much faster (wean_lstm on simplification: validation loss 4.0 instead of 6.8 after
# about one epoch). Dropout 0.4 as WEAN.
RNN_OPTIM = ["--optimizer", "adam", "--lr", "0.002", "--clip-norm", "5", "--dropout", "0.4"]
TRANSFORMER_OPTIM = ["--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.001",
                     "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "500", "--warmup-init-lr", "1e-07",
                     "--clip-norm", "5", "--dropout", "0.3"]
TRANSFORMER_SMALL = ["--arch", "transformer", "--encoder-layers", "2", "--decoder-layers", "2",
                     "--encoder-embed-dim", "256", "--decoder-embed-dim", "256",
                     "--encoder-ffn-embed-dim", "512", "--decoder-ffn-embed-dim", "512",
                     "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
SYSTEMS = {
    "lstm": ["--arch", "lstm", "--encoder-embed-dim", "256", "--encoder-hidden-size", "256",
             "--encoder-layers", "2", "--decoder-embed-dim", "256", "--decoder-hidden-size", "256",
             "--decoder-layers", "2", "--decoder-out-embed-dim", "256"] + RNN_OPTIM,
    "transformer": TRANSFORMER_SMALL + ["--share-decoder-input-output-embed"] + TRANSFORMER_OPTIM,
    "wean_lstm": ["--arch", "wean_lstm", "--embed-dim", "256", "--encoder-hidden-size", "256",
                  "--encoder-layers", "2", "--decoder-hidden-size", "256", "--decoder-layers", "2"] + RNN_OPTIM,
    "core_copy": ["--arch", "core_copy", "--embed-dim", "256", "--encoder-hidden-size", "256",
                  "--encoder-layers", "2", "--decoder-hidden-size", "256", "--decoder-layers", "2",
                  "--criterion", "core_mode_loss"] + RNN_OPTIM,
    # Wu et al.'s ablation: RNNsearch, + word attention, + contextual gates (one preset each)
    **{arch: ["--arch", arch, "--encoder-embed-dim", "256", "--encoder-hidden-size", "256",
              "--encoder-layers", "2", "--decoder-embed-dim", "256", "--decoder-hidden-size", "256",
              "--decoder-layers", "2"] + RNN_OPTIM
       for arch in ("word_attn_rnnsearch", "word_attn_ungated", "word_attn_gated")},
    # Yu, Rauniyar, Angelova and Schoneville, "Sentence Simplification with Character-Level
    # Transformer" (project report, University of Potsdam, September 2018): 2+2 layers, 256, inner 512, dropout 0.1, label smoothing 0.1, Adam
    # (0.9, 0.98, 1e-9), no embedding sharing; warm-up shortened to our short budget.
    "char_transformer": TRANSFORMER_SMALL + [
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-09", "--lr", "0.001",
        "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "500", "--warmup-init-lr", "1e-07",
        "--clip-norm", "5", "--dropout", "0.1",
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"],
    # `transformer` with a separate output matrix (its decoder's input embeddings not reused as
    # output keys), all else equal: the control of the invented-words question on pieces
    "transformer_untied": TRANSFORMER_SMALL + TRANSFORMER_OPTIM,
}
# The papers' own forms of the departures (issue 41; docs/models/*.md, "Departures"): the same
# system with its paper-exact options on, all else equal.
PAPER_EXACT = {
    # eq. 3 (the GRU reads c_t), eq. 5 (attention from s_t-1), eq. 9 (psi = W_c h_j, no tanh or bias)
    "core_copy_paper": ("core_copy", ["--core-attend-previous-state", "--core-input-feeding", "--core-psi", "affine"]),
    # the paper's readout g(y_i-1, s_i, c^a_i, c^b_i) and RNNsearch's s_0 from the backward encoder
    "word_attn_gated_paper": ("word_attn_gated", ["--word-attn-readout", "raw", "--word-attn-initial-state", "backward"]),
    # section 2.4: the candidate words are the training source side's (TurkCorpus: same language)
    "wean_lstm_paper": ("wean_lstm", ["--wean-candidates", "source"]),
    # its analogue where the source is another language (Multi30k De->En): the target side's words
    "wean_lstm_target": ("wean_lstm", ["--wean-candidates", "target"]),
}
for _name, (_base, _flags) in PAPER_EXACT.items():
    # before the optimizer block, which the converged budget replaces (converged_system_args)
    SYSTEMS[_name] = SYSTEMS[_base][:-len(RNN_OPTIM)] + _flags + RNN_OPTIM
WORD_ATTENTION_ABLATION = ["word_attn_rnnsearch", "word_attn_ungated", "word_attn_gated"]
BASELINE = "lstm"  # p-values are against fairseq lstm on the same vocabulary
METRIC_NAMES = {"sari": "SARI", "sari_legacy": "SARI (legacy)", "bleu": "BLEU", "fkgl": "FKGL", "rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L"}

# ---------------------------------------------------------------------------------------------
# Tasks. runs: (system, vocabulary variant). Epoch budgets are sized for 2 CPU cores (the times in
# the module docstring and docs/data.md); --epochs changes them. Summarization and translation had 10
# and 6 epochs (about 2 h and 2 h 30 min here); 3 and 2 keep each under an hour, and the tables in
# docs/results/<task>.md are these defaults' output.
WORD_SYSTEMS = ["lstm", "transformer", "wean_lstm", "core_copy", "word_attn_gated"]
TASKS = {
    "simplification": {
        "datasets": {"turkcorpus": "preprocess.prepare_simplification"},
        "epochs": 2,
        "runs": [(s, "word-pg" if s == "core_copy" else "word") for s in WORD_SYSTEMS]
        + [(s, "spm") for s in WORD_SYSTEMS] + [("char_transformer", "char")],
        # CI: every vocabulary variant and every recipe path once (the argument lists of the other
        # systems are checked by tests/test_recipes.py without training)
        "tiny_runs": [("lstm", "word"), ("wean_lstm", "word"), ("core_copy", "word-pg"), ("wean_lstm", "spm"),
                      ("char_transformer", "char")],
        "baselines": ["copy"],
    },
    "summarization": {
        "datasets": {"gigaword": "preprocess.prepare_gigaword", "lcsts": "preprocess.prepare_lcsts"},
        "epochs": 3,
        "runs": [(s, "word-pg" if s == "core_copy" else "word") for s in WORD_SYSTEMS],
        "tiny_runs": [("wean_lstm", "word")],
        "baselines": ["lead"],
    },
    "translation": {
        "datasets": {"multi30k": "preprocess.prepare_multi30k", "iwslt14": "preprocess.prepare_iwslt14"},
        "epochs": 2,
        "runs": [(s, "word-pg" if s == "core_copy" else "word") for s in WORD_SYSTEMS],
        "tiny_runs": [("lstm", "word")],
        "baselines": [],
    },
}
# Datasets whose runs all use one vocabulary (BPE'd IWSLT'14; LCSTS is characters, prepared as "word").
DATASET_VOCAB = {"iwslt14": "bpe", "lcsts": "word"}
BATCH = {"word": ["--batch-size", "32", "--max-tokens", "4000"],
         "char": ["--batch-size", "64", "--max-tokens", "12000"]}
# Output length cap 1.2 x source + 10 tokens (fairseq's default, 200 tokens, is too short for
# characters and lets an untrained model babble for 200 steps).
GEN_ARGS = ["--beam", "5", "--batch-size", "64", "--max-len-a", "1.2", "--max-len-b", "10"]




# ---------------------------------------------------------------------------------------------
# The converged budget (``--budget converged``): every system trains with throughput-efficient
# batches (--max-tokens only) until its validation score (beam-5 SARI, ROUGE-L or BLEU, computed
# inside fairseq-train by --task translation_with_metrics) has not improved for PATIENCE epochs
# (fairseq's --patience with --best-checkpoint-metric), at most MAX_EPOCH epochs, and the best
# checkpoint by that score is the system.
#
# Settings are each system's best known ones, fairseq's own recipe where there is one: the RNNs
# use fairseq's LSTM recipe (Adam 1e-3, dropout 0.3, --max-tokens 4000), which gave fairseq
# `lstm` 32.95 BLEU on Multi30k test2016 after 10 epochs; fairseq `lstm` gets the bidirectional
# encoder the plugin's RNNs have (--encoder-bidirectional). The transformers keep their
# inverse-sqrt schedule, with a warm-up of a few epochs of these batches.
CONVERGED_RNN_OPTIM = ["--optimizer", "adam", "--lr", "0.001", "--clip-norm", "5", "--dropout", "0.3"]
CONVERGED_OVERRIDES = {
    # replaces the short budget's RNN_OPTIM (the last 7 items) of these systems
    "lstm": ["--encoder-bidirectional"],
}
CONVERGED_BATCH = {"word": ["--max-tokens", "4000"], "char": ["--max-tokens", "12000"]}
CONVERGED = {
    # each system on the vocabulary with its best validation SARI in the 2-epoch comparison (words for
    # lstm, word_attn_gated and core_copy, whose word-pg and spm tied; pieces for wean_lstm; transformer
    # tied), plus the runs that answer why wean_lstm invents words on pieces: wean_lstm on words, and
    # on the same pieces transformer with tied embeddings (output keys = input embeddings, as WEAN)
    # and with a separate output matrix (transformer_untied)
    "simplification": {"patience": 3, "max_epoch": 30,
                       "runs": [("lstm", "word"), ("transformer", "word"), ("wean_lstm", "spm"),
                                ("core_copy", "word-pg"), ("word_attn_gated", "word"), ("char_transformer", "char"),
                                ("wean_lstm", "word"), ("transformer", "spm"), ("transformer_untied", "spm")],
                       # fairseq lstm on words ties its decoder's input and output embeddings, the recipe
                       # of the simplification anchor (TurkCorpus legacy SARI 33.54 after 8 epochs):
                       # untied, at about 260 updates per epoch, it had validation SARI 21.36 after 4 epochs.
                       # Untied on pieces it did not learn the task either (validation SARI 19.3-21.0 over
                       # 9 epochs, outputs unrelated to their sources; docs/results/history.md), so the
                       # separate-output-matrix control is the untied transformer, which does.
                       "run_overrides": {("lstm", "word"): ["--share-decoder-input-output-embed"]}},
    # core_copy on Gigaword keeps the short budget's settings and batches (RNN_OPTIM, BATCH: Adam 2e-3,
    # dropout 0.4, 32 sentences), chosen on validation: they gave validation R-L 31.35 after 3 epochs,
    # where fairseq's LSTM recipe peaked at 30.38 (epoch 9 of 12, its validation loss lowest at epoch 4)
    "summarization": {"patience": 3, "max_epoch": 30, "short_settings_runs": {("core_copy", "word-pg")}},
    "translation": {"patience": 3, "max_epoch": 30,
                    "runs": [(s, "word-pg" if s == "core_copy" else "word")
                             for s in ["lstm", "transformer", "wean_lstm", "core_copy"] + WORD_ATTENTION_ABLATION],
                    # the word-attention ablation's differences may be below seed noise: 3 seeds each
                    "seeds": {s: [1, 2, 3] for s in WORD_ATTENTION_ABLATION}},
}
# Which score fairseq-train computes for each task's validation metric (translation_with_metrics).
VALID_FLAGS = {"sari": "--eval-sari", "rougeL": "--eval-rouge", "bleu": "--eval-bleu"}


def system_arch(system):
    """The model architecture (``--arch``) a system trains (the name itself for an unknown system)."""
    args = SYSTEMS.get(system, [])
    return args[args.index("--arch") + 1] if "--arch" in args else system


def keeps_short_settings(system, task=None, variant=None):
    """Whether (system, variant) trains under the converged budget with the short budget's settings
    and batches (the task's ``short_settings_runs`` in CONVERGED), only its stopping rule converged."""
    return (system, variant) in CONVERGED.get(task, {}).get("short_settings_runs", ())


def converged_system_args(system, task=None, variant=None):
    """fairseq-train arguments of a system under the converged budget (see CONVERGED): the
    system's settings, the converged optimizer for the RNNs (unless :func:`keeps_short_settings`),
    CONVERGED_OVERRIDES, then the task's ``run_overrides`` of (system, variant)."""
    args = list(SYSTEMS[system])
    if args[-len(RNN_OPTIM):] == RNN_OPTIM and not keeps_short_settings(system, task, variant):
        args = args[:-len(RNN_OPTIM)] + CONVERGED_RNN_OPTIM
    run_overrides = CONVERGED.get(task, {}).get("run_overrides", {}).get((system, variant), [])
    return args + CONVERGED_OVERRIDES.get(system, []) + run_overrides
