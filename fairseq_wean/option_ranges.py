"""The range of every numeric option of fairseq's parsers: the tables that
:func:`fairseq_wean.patching.install_option_ranges` applies to every parser fairseq builds (fairseq-train, -generate,
-interactive, -validate, -eval-lm, with the options that --task, --optimizer, --lr-scheduler and --criterion add):
one line at parse, before any work.

Each row is ``dest: (low, kind, high, above)`` of :func:`fairseq_wean.errors.at_least`; an ``*_ANY_VALUE`` entry is
an option that takes any finite number, with the reason. The hub (``hub.py``) and the task's --eval-bleu-args
(``tasks/validation_options.py``) check the same rows. Model options are the models' own (modules/model_options.py).
tests/test_option_ranges.py and tests/test_optim_options.py enumerate every numeric option of every parser and of
every registered component and require a row here (or a reason).

Imports nothing from the project, so that :mod:`fairseq_wean.patching` may import it.
"""

# fairseq's decoding numbers (and batch sizes): (low, kind, high, above) of errors.at_least, one line at parse (--eval-
# bleu-args, the hub too). The highs: what fairseq computes (int(a x src_len + b), (step + 1) ** lenpen, x / temperature
# in float32) overflowed after loading; --sampling-topk: fixes_decoding.generator_problem. GENERATION_ANY_VALUE: any.
MAX_LEN_A, MAX_LENPEN, MIN_TEMPERATURE = 1000, 10, 1e-4
# --beam: each step scores beam x |V| candidates per sentence (4 GB of float32 at 1024 x 50,000 x 20 sentences);
# --no-repeat-ngram-size: its time grows with n, and an n past the output's length blocks nothing (no_repeat_problem)
MAX_BEAM, MAX_NO_REPEAT_NGRAM = 1024, 256
GENERATION_RANGES = {
    "beam": (1, int, MAX_BEAM, False), "beam_mt": (0, int, MAX_BEAM, False), "nbest": (1, int, None, False),
    "max_len_a": (0, float, MAX_LEN_A, False), "max_len_b": (0, int, None, False),
    "max_len_a_mt": (0, float, MAX_LEN_A, False), "max_len_b_mt": (0, int, None, False), "min_len": (1, int, None, False),
    "lenpen": (0, float, MAX_LENPEN, False), "lenpen_mt": (0, float, MAX_LENPEN, False),
    "prefix_size": (0, int, None, False), "no_repeat_ngram_size": (0, int, MAX_NO_REPEAT_NGRAM, False),
    "sampling_topk": (-1, int, None, False), "sampling_topp": (-1, float, 1, False),
    "temperature": (MIN_TEMPERATURE, float, None, False), "diverse_beam_groups": (-1, int, None, False),
    # search.DiverseBeamSearch subtracts strength x overlap with the other groups: a negative strength rewards the
    # overlap, the groups collapse onto one beam (the opposite of the option); -1 <= --diversity-rate < 0
    # (search.DiverseSiblingsSearch: a bonus for lower-ranked siblings) too: -1 is "off", its default
    "diverse_beam_strength": (0, float, 1000, False), "diversity_rate": (-1, float, 1000, False),  # x float32 ranks
    "unkpen": (-1000, float, 1000, False),  # above 1000 nats either way: "never" / "always" <unk> (-1e308: inf)
    "iter_decode_max_iter": (0, int, None, False), "iter_decode_with_beam": (1, int, None, False),
    "batch_size": (1, int, 2 ** 31 - 1, False), "max_tokens": (1, int, 2 ** 31 - 1, False),  # numpy's C long
    "required_batch_size_multiple": (1, int, 2 ** 31 - 1, False),
}
# the decoding parser's sharding: --num-shards 0 decoded every sentence; --shard-id past --num-shards
# too (checked against each other where the generator is built)
SHARDING_RANGES = {"num_shards": (1, int, None, False), "shard_id": (0, int, None, False)}
GENERATION_ANY_VALUE = {"lm_weight": "a weight of either sign",
                        "iter_decode_eos_penalty": "a penalty of either sign"}



# --tokens-per-sample: a block of tokens the language models (transformer_lm, ...) take as their
# --max-target-positions when it is not given: the cap of that option (modules/model_options.MAX_POSITIONS,
# a million tokens) applies to it too; fairseq allocated its positions table (1e9: 32 GB, an allocator traceback)
MAX_TOKENS_PER_SAMPLE = 1 << 20
# fairseq's other numeric options, of every parser fairseq builds (fairseq-train, -generate,
# -interactive, -validate, -eval-lm: dataset, distributed, checkpoint, optimization, the translation
# and language_modeling tasks, adam and the lr schedulers), as (low, kind, high, above). Out of
# range they were tracebacks,
# some after a whole epoch (--validate-interval 0, --update-freq 0: ZeroDivisionError; --seed -5,
# --num-workers -1: ValueError after the model was loaded) or nonsense (--max-source-positions -5).
# Applied to every parser when fairseq parses it (options added with --task/--arch/--optimizer
# included); an option whose type is fairseq's list parser (--lr, --update-freq) keeps it and every
# number of the list is checked. Model options are the models' own (modules/model_options.py).
_SEED = (0, int, 2 ** 32 - 1, False)  # numpy's seed range: outside it, ValueError after the model loaded
FAIRSEQ_RANGES = {
    "seed": _SEED, "fixed_validation_seed": _SEED, "num_workers": (0, int, None, False),
    "data_buffer_size": (0, int, None, False), "log_interval": (1, int, None, False),
    "validate_interval": (1, int, None, False), "validate_interval_updates": (0, int, None, False),
    "validate_after_updates": (0, int, None, False), "save_interval": (1, int, None, False),
    "save_interval_updates": (0, int, None, False), "update_freq": (1, int, None, False),
    "lr": (0, float, None, False), "max_source_positions": (1, int, None, False),
    "max_target_positions": (1, int, None, False), "max_epoch": (0, int, None, False),
    "max_update": (0, int, None, False), "max_valid_steps": (1, int, None, False),
    "stop_time_hours": (0, float, None, False), "clip_norm": (0, float, None, False),
    "weight_decay": (0, float, None, False), "adam_eps": (0, float, None, True),
    "adam_betas": (0, float, 1, False), "warmup_updates": (0, int, None, False),
    "warmup_init_lr": (-1, float, None, False),  # any negative: fairseq's "not given" (-1 its default)
    "lr_shrink": (0, float, 1, True), "lr_threshold": (0, float, None, False), "lr_patience": (0, int, None, False),
    "force_anneal": (0, int, None, False),
    # --use-bmuf's block update: a momentum in [0, 1] as --momentum's, a positive block rate, a sync every N >= 1
    # updates (nan and negatives were taken)
    "block_lr": (0, float, None, True), "block_momentum": (0, float, 1, False),
    "global_sync_iter": (1, int, None, False), "warmup_iterations": (0, int, None, False),
    "buffer_size": (1, int, None, False),  # fairseq-interactive: its default 0 is read as 1; given, at least 1
    "all_gather_list_size": (1, int, None, False), "amp_batch_retries": (0, int, None, False),
    "amp_init_scale": (1, int, None, False), "amp_scale_window": (1, int, None, False),
    "fp16_init_scale": (1, int, None, False), "fp16_scale_window": (1, int, None, False),
    "fp16_scale_tolerance": (0, float, 1, False), "min_loss_scale": (0, float, None, True),
    "threshold_loss_scale": (0, float, None, True), "bucket_cap_mb": (1, int, None, False),
    "checkpoint_shard_count": (1, int, None, False), "curriculum": (0, int, None, False),
    "device_id": (0, int, None, False), "distributed_num_procs": (1, int, None, False),
    "distributed_port": (-1, int, 65535, False),  # -1: none (fairseq's default)
    "distributed_rank": (0, int, None, False), "distributed_world_size": (1, int, None, False),
    "nprocs_per_node": (1, int, None, False), "model_parallel_size": (1, int, None, False),
    "localsgd_frequency": (1, int, None, False), "slowmo_momentum": (0, float, 1, False),
    "pipeline_chunks": (0, int, None, False), "empty_cache_freq": (0, int, None, False),
    "heartbeat_timeout": (-1, int, None, False),  # -1: none
    "ema_decay": (0, float, 1, False), "ema_start_update": (0, int, None, False),
    "ema_update_freq": (1, int, None, False),
    "keep_best_checkpoints": (-1, int, None, False), "keep_interval_updates": (-1, int, None, False),
    "keep_interval_updates_pattern": (-1, int, None, False), "keep_last_epochs": (-1, int, None, False),
    "patience": (-1, int, None, False),  # -1 (any value <= 0): off
    "num_batch_buckets": (0, int, None, False), "required_seq_len_multiple": (1, int, None, False),
    "upsample_primary": (1, int, None, False),  # its default -1 (not typed, so not checked) means 1: compat fix 20
    "eos": (0, int, None, False), "pad": (0, int, None, False), "unk": (0, int, None, False),
    "bos": (0, int, None, False),
    "batch_size_valid": (1, int, None, False), "max_tokens_valid": (1, int, None, False),
    # fairseq-eval-lm and its language_modeling task
    "context_window": (0, int, None, False), "softmax_batch": (1, int, None, False),
    "tokens_per_sample": (1, int, MAX_TOKENS_PER_SAMPLE, False), "output_dictionary_size": (-1, int, None, False),  # -1: all
    # the options every registered --optimizer and --lr-scheduler adds (tests/test_optim_options.py enumerates them):
    # outside, torch's ValueError or fairseq's assert after the batches were built, or nan training and a crash.pt
    "momentum": (0, float, 1, False), "adadelta_rho": (0, float, 1, False), "adadelta_eps": (0, float, None, True),
    "adamax_eps": (0, float, None, True), "lamb_eps": (0, float, None, True), "adamax_betas": (0, float, 1, False),
    "lamb_betas": (0, float, 1, False), "adafactor_eps": (0, float, None, False), "beta1": (0, float, 1, False),
    "clip_threshold": (0, float, None, True), "decay_rate": (-1, float, 0, False),  # Adafactor's 1 - t^decay_rate
    "min_lr": (0, float, None, False), "max_lr": (0, float, None, True), "t_mult": (0, float, None, True),
    "lr_period_updates": (-1, float, None, False),  # cosine: <= 0 is "the period is --max-update" (-1 its default)
    "end_learning_rate": (0, float, None, False), "power": (0, float, None, False),
    "total_num_update": (1, float, None, False), "lr_deacy_period": (1, int, None, False),
    "lr_decay": (0, float, 1, True), "warmup_steps": (0, int, None, False), "hold_steps": (0, int, None, False),
    "decay_steps": (0, int, None, False), "phase_ratio": (0, float, 1, False), "init_lr_scale": (0, float, 1, False),
    "final_lr_scale": (0, float, 1, True),  # tri_stage takes its log
    # and every registered --criterion adds (label_smoothing: tests/test_optim_options.py's ALLOWED says why not)
    **{weight: (0, float, None, False) for weight in (
        "ctc_weight", "pred_masked_weight", "pred_nomask_weight", "loss_weights", "alignment_lambda", "rdrop_alpha",
        "latency_avg_weight", "latency_var_weight", "nsp_loss_weight", "main_and_cross_weights", "bce_pos_weight",
        "general_unit_loss_weight", "edge_unit_loss_weight", "duration_loss_weight")},
    "ignore_prefix_size": (0, int, None, False), "latency_update_after": (0, int, None, False),
    "guided_attention_loss_sigma": (0, float, None, True),
    # and every registered --task adds (tests/test_optim_options.py enumerates them; the str ones: its ALLOWED):
    # proportions and probabilities of the noising and masking tasks (denoising, masked_lm, span_masked_lm, the
    # back-translation tasks), outside [0, 1] a torch/numpy ValueError in the first batches or no noise at all
    **{share: (0, float, 1, False) for share in (
        "mask", "mask_random", "permute", "rotate", "shuffle_instance", "mask_prob", "leave_unmasked_prob",
        "random_token_prob", "noise_density", "word_blanking_prob", "word_dropout_prob", "eos_prob_threshold")},
    "insert": (0, float, None, False),  # its bound by the positions: optim_check.insertion_problem
    # span-poisson masking: Poisson(0) spans are all empty and the dataset loops for ever adding more
    "poisson_lambda": (0, float, None, True), "mask_stdev": (0, float, None, False),
    "mask_multiple_length": (1, int, None, False), "mean_noise_span_length": (1, float, None, False),
    "replace_length": (-1, int, 1, False),  # -1: "N tokens"
    "permute_sentences": (-1, float, 1, False),  # a share of sentences (0.12.3 types it int: kept int there); -1: off
    "max_word_shuffle_distance": (0, float, None, False), "multilang_sampling_alpha": (0, float, None, False),
    "sampling_temperature": (0, float, None, True), "subsample": (0, float, 1, True),
    "bt_beam_size": (1, int, MAX_BEAM, False), "bt_max_len_a": (0, float, MAX_LEN_A, False),
    "bt_max_len_b": (0, float, None, False),
    # sizes, lengths and counts (a token index is >= 0; -1: "none", fairseq's default)
    **{size: (1, int, None, False) for size in (
        "dataset_size", "dict_size", "src_len", "tgt_len", "max_positions", "max_option_length", "max_keep_size",
        "max_sample_size", "max_target_durations", "max_token_duration", "n_frames_per_step", "sample_rate",
        "target_code_size", "virtual_data_size", "virtual_epoch_size", "num_classes", "chunk_init",
        "spec_bwd_max_iter")},
    "min_sample_size": (0, int, None, False), "init_token": (0, int, None, False),
    "separator_token": (0, int, None, False), "eval_tb_nsample": (0, int, None, False),
    "chunk_incr": (0, int, None, False), "chunk_bound": (-1, int, None, False), "label_rate": (-1, float, None, False),
    "ref_fpu": (-1, float, None, False),
}
# a Python literal fairseq evaluates itself: the text is kept
FAIRSEQ_LITERAL = {"adam_betas", "adamax_betas", "lamb_betas", "adafactor_eps", "main_and_cross_weights"}
FAIRSEQ_ANY_VALUE = {"stop_min_lr": "a learning-rate threshold of either sign (-1, its default: off)",
                     **dict.fromkeys(("wer_lm_weight", "wer_word_score", "wer_sil_weight"),
                                     "ctc's language-model weights and scores, of either sign")}
