"""The rows of fairseq's own options in the plugin's parse-time tables (:mod:`fairseq_wean.patching`): decoding
options that do nothing in the given combination (``add_option_need``) and fairseq-eval-lm's options that
contradict each other (``add_option_check``). Other modules declare the rows of their own options (the task's
validation options, CoRe's, fairseq-train's files, the CPU's precision). Imported by :func:`patching.install_option_ranges`."""
from fairseq_wean.patching import (_decodes, _number, add_option_check, add_option_need,  # noqa: F401
                                   running_command)


add_option_need("diverse_beam_strength", lambda a: _number(a, "diverse_beam_groups", -1) > 0,
                "it weighs the groups of --diverse-beam-groups N, not given")
add_option_need("sampling_topk", lambda a: bool(getattr(a, "sampling", False)) and _number(a, "sampling_topp", -1) <= 0,
                "it restricts --sampling (beam search ignores it), and --sampling-topp, if given, replaces it")
add_option_need("sampling_topp", lambda a: bool(getattr(a, "sampling", False)),
                "it restricts --sampling, not given (beam search ignores it)")
for _dest in ("max_len_a", "max_len_b"):  # the output's length is the source's
    add_option_need(_dest, lambda a: not getattr(a, "match_source_len", False), "--match-source-len sets the length")
add_option_need("lenpen", lambda a: not getattr(a, "unnormalized", False) and _decodes(a),
                "it weighs the normalized score, which --unnormalized (or --score-reference) turns off")
for _dest in ("match_source_len", "unnormalized"):
    add_option_need(_dest, _decodes, "--score-reference scores the references, it decodes nothing")
for _dest in ("iter_decode_eos_penalty", "iter_decode_max_iter", "iter_decode_force_max_iter", "iter_decode_with_beam",
              "iter_decode_with_external_reranker", "print_step", "retain_iter_history"):  # KeyError 'steps' on others
    add_option_need(_dest, lambda a: _iterative_task(getattr(a, "task", None)),
                    "it is read by iterative refinement only (a task such as translation_lev decodes with it)")
add_option_need("constraints", lambda a: False, "fairseq-generate reads no constraints (fairseq-interactive reads "
                "them from each input line, after a tab)", commands=("generate",))
add_option_need("lm_weight", lambda a: bool(getattr(a, "lm_path", None)),
                "it weighs the language model of --lm-path, not given")
add_option_need("retain_dropout_modules", lambda a: bool(getattr(a, "retain_dropout", False)),
                "it names the modules of --retain-dropout, not given")
add_option_need("results_path", lambda a: False,
                "fairseq-validate and fairseq-eval-lm print their results in the log and write no file there",
                commands=("validate", "eval_lm"))
add_option_need("post_process", lambda a: _criterion_reads(a, "post_process"),
                "fairseq-validate scores the binarized references token by token and post-processes no text "
                "(only a criterion with a post_process option, e.g. ctc, reads it)", commands=("validate",))
add_option_need("gen_subset", lambda a: running_command() not in ("interactive", "train"),
                "fairseq-interactive translates standard input and fairseq-train reads --train-subset/"
                "--valid-subset, never --gen-subset", commands=("interactive", "train"))


def _iterative_task(name):
    """Whether the task ``name`` decodes with fairseq's IterativeRefinementGenerator (its build_generator says)."""
    import inspect

    from fairseq.tasks import TASK_REGISTRY

    build = getattr(TASK_REGISTRY.get(name), "build_generator", None)
    return build is not None and "IterativeRefinementGenerator" in inspect.getsource(build)


def _criterion_reads(args, field):
    """Whether the criterion of ``args`` has the dataclass field ``field`` (it then reads the shared option)."""
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY

    config = CRITERION_DATACLASS_REGISTRY.get(getattr(args, "criterion", None))
    return config is not None and field in getattr(config, "__dataclass_fields__", {})


# the --post-process values fairseq-eval-lm implements (others: NotImplementedError after the model is loaded)
EVAL_LM_POST_PROCESS = (None, "subword_nmt", "@@ ")


def eval_lm_option_problem(args, command=None):
    """fairseq-eval-lm's options that contradict each other, or None: --context-window not below
    --tokens-per-sample (fairseq subtracts the window from every sample: a ValueError traceback after the
    model is loaded) and a --post-process it does not implement (a NotImplementedError traceback)."""
    if (command or running_command()) != "eval_lm":
        return None
    window, tokens = getattr(args, "context_window", 0), getattr(args, "tokens_per_sample", None)
    if isinstance(window, int) and isinstance(tokens, int) and window > 0 and window >= tokens:
        return ("--context-window {} must be below --tokens-per-sample {}: fairseq-eval-lm takes the window out of "
                "every sample of --tokens-per-sample tokens".format(window, tokens))
    post = getattr(args, "post_process", None)
    if post not in EVAL_LM_POST_PROCESS:
        return ("--post-process {} is not implemented by fairseq-eval-lm: it joins only subword-nmt pieces "
                "(--post-process subword_nmt or '@@ ')".format(post))
    return None


add_option_check(eval_lm_option_problem)
