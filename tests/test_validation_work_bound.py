"""fairseq-train's validation metrics (``--task translation_with_metrics``, ``--eval-*``) are under the bound of one
scoring call (``scoring/bounds.check_input_size``: each metric's work on the whole subset with all its references,
and their seconds together under MAX_CALL_SECONDS), checked when the validation subset is loaded, before training,
in one line naming the limit; each hypothesis is taken as long as its longest source or reference. Before, only
ROUGE-L's per-line cap applied. Every validation metric is enumerated (tasks.translation_with_metrics.METRIC_FLAGS);
the bounds are lowered here so that conftest's 21 validation sentences are over them."""
import pytest

from conftest import USER_DIR
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import bounds
from fairseq_wean.scoring import metrics as M

FLAGS = {"eval_bleu": "--eval-bleu", "eval_sari": "--eval-sari", "eval_rouge": "--eval-rouge"}


def load_valid(data_bin, tmp_path, *flags):
    """The task of ``fairseq-train DATA --task translation_with_metrics FLAGS`` and its validation subset loaded
    (where fairseq-train loads it, before the model is built and any update)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, "--arch", "lstm", "--task", "translation_with_metrics", "--cpu",
        "--save-dir", str(tmp_path / "ck"), *flags])
    task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
    task.load_dataset("valid")
    return task


def test_every_validation_metric_is_enumerated():
    from fairseq_wean.tasks.translation_with_metrics import METRIC_FLAGS

    assert set(METRIC_FLAGS.values()) == set(FLAGS) and set(METRIC_FLAGS) <= set(M.METRICS)


@pytest.mark.parametrize("metric", ["bleu", "sari", "rouge1", "rouge2", "rougeL"])
def test_a_validation_metric_over_its_bound_is_refused_at_load(data_bin, tmp_path, monkeypatch, metric):
    from fairseq_wean.tasks.translation_with_metrics import METRIC_FLAGS

    flag = FLAGS[METRIC_FLAGS[metric]]
    task = load_valid(data_bin, tmp_path, flag)  # under the bounds: loaded
    assert metric in task.validation_metrics()
    monkeypatch.setitem(M.MAX_WORK, metric, 10)  # conftest's 21 sentences are over it
    with pytest.raises(FairseqWeanError) as e:
        load_valid(data_bin, tmp_path, flag)
    message = str(e.value)
    assert message.startswith("validation of subset 'valid' ({}; each output taken as long as its longest source or "
                              "reference): {}: these 21 sentences need about ".format(flag, metric)), message
    assert "more than the 10 this metric takes" in message and "\n" not in message, message
    assert not (tmp_path / "ck").exists()


def captured(monkeypatch, data_bin, tmp_path, *flags):
    """(names, hypotheses' stand-in, references, sources) the load of ``flags`` checks."""
    import fairseq_wean.tasks.translation_with_metrics as T

    calls = []
    monkeypatch.setattr(T, "check_input_size", lambda *a, **k: calls.append(a) or bounds.check_input_size(*a, **k))
    load_valid(data_bin, tmp_path, *flags)
    monkeypatch.undo()
    (call,) = calls
    return call[:4]


def test_the_validation_metrics_together_are_one_call(data_bin, tmp_path, monkeypatch):
    """Every metric under its own bound, their seconds together over the call's (lowered): refused, naming each."""
    flags = list(FLAGS.values())
    names, hyps, refs, sources = captured(monkeypatch, data_bin, tmp_path, *flags)
    assert list(names) == ["bleu", "sari", "rouge1", "rouge2", "rougeL"]
    assert len(hyps) == len(sources) == 21 and len(refs) == 1
    assert all(h in (refs[0][i], sources[i]) and len(h) == max(len(refs[0][i]), len(sources[i]))
               for i, h in enumerate(hyps))
    seconds = [M.SECONDS_AT_BOUND[m] * M.input_work(m, hyps, refs, sources) / M.MAX_WORK[m] for m in names]
    monkeypatch.setattr(bounds, "MAX_CALL_SECONDS", max(seconds) * 1.01)
    with pytest.raises(FairseqWeanError) as e:
        load_valid(data_bin, tmp_path, *flags)
    message = str(e.value)
    assert message.startswith("validation of subset 'valid' (--eval-bleu --eval-sari --eval-rouge; ") and (
        "these 21 sentences need about " in message and "s one call takes" in message), message
    assert all("{} ".format(m) in message.split("with 5 metrics (", 1)[1] for m in names), message


def test_eval_refs_are_counted(data_bin, raw_dir, tmp_path, monkeypatch):
    """With --eval-refs, every reference file is in the work (2 files: twice the pairs), the bound exact."""
    lines = (raw_dir / "valid.tgt").read_text().splitlines()
    paths = []
    for k in range(2):
        paths.append(tmp_path / "ref{}.txt".format(k))
        paths[-1].write_text("".join((line if k == 0 else line + " w11") + "\n" for line in lines))
    flags = ("--eval-sari", "--eval-refs", ",".join(map(str, paths)))
    names, hyps, refs, sources = captured(monkeypatch, data_bin, tmp_path, *flags)
    assert len(refs) == 2 and all(h == max([r[i] for r in refs] + [sources[i]], key=len) for i, h in enumerate(hyps))
    work = M.input_work("sari", hyps, refs, sources)
    monkeypatch.setitem(M.MAX_WORK, "sari", work - 1)
    expected = r"^validation of subset 'valid' \(--eval-sari with --eval-refs; .*sari: these 21 sentences x 2 " \
               r"references need about {:,} ".format(work)
    with pytest.raises(FairseqWeanError, match=expected):
        load_valid(data_bin, tmp_path, *flags)
    monkeypatch.setitem(M.MAX_WORK, "sari", work)
    load_valid(data_bin, tmp_path, *flags)
