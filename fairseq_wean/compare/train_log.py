"""fairseq-train's ``--log-format json`` logs as the comparison runner and ``bench`` read them,
whether a run resumes (its saved command against the new one), and the files of a run folder
(:func:`check_run_folder`)."""
import json
import os

from fairseq_wean.errors import FairseqWeanError


def read_train_log_line(line):
    """``(tag, record)`` of one line of fairseq-train ``--log-format json`` (``tag``: ``train_inner``,
    ``train``, ``valid``, ``valid1``...; ``record``: the JSON object, values as fairseq formats
    them, strings), else None.

    fairseq logs each record as ``DATE | INFO | TAG | {...}``; end-of-epoch records prefix every
    key with the tag (``train_loss``, ``valid_loss``), ``train_inner`` records do not.
    """
    parts = line.rstrip("\n").split(" | ", 3)
    if len(parts) != 4 or not parts[3].startswith("{"):
        return None
    try:
        record = json.loads(parts[3])
    except ValueError:
        return None
    return (parts[2], record) if isinstance(record, dict) else None


def _open(path, folder):
    """``path`` as UTF-8 text (undecodable bytes replaced); with ``folder``, a file found there, read only
    as itself (:func:`fairseq_wean.textio.open_in_folder`: a link, pipe or device is one line)."""
    if folder is None:
        return open(path, encoding="utf-8", errors="replace")
    import io

    from fairseq_wean.textio import open_in_folder

    return io.TextIOWrapper(open_in_folder(path, "rb", folder, os.path.basename(path)), encoding="utf-8",
                            errors="replace")


def read_train_log(path, folder=None):
    """``{tag: [record, ...]}`` of a fairseq-train ``--log-format json`` log, in log order.
    ``folder``: the log was found there (a comparison's --out): read only as itself
    (:func:`fairseq_wean.textio.open_in_folder`)."""
    records = {}
    with _open(path, folder) as f:
        for line in f:
            parsed = read_train_log_line(line)
            if parsed:
                records.setdefault(parsed[0], []).append(parsed[1])
    return records


def split_max_epoch(cmd):
    """``(cmd without its --max-epoch N, N)`` of a fairseq-train command (N None if absent)."""
    cmd = list(cmd)
    if "--max-epoch" not in cmd:
        return cmd, None
    i = cmd.index("--max-epoch")
    return cmd[:i] + cmd[i + 2:], int(cmd[i + 1])


def same_run(cmd_a, cmd_b):
    """Whether two fairseq-train commands train the same run: equal but for ``--max-epoch``, so a
    run resumes under a raised (or lowered) cap."""
    return split_max_epoch(cmd_a)[0] == split_max_epoch(cmd_b)[0]


def resumable(run_dir, cmd, folder=None):
    """The saved state (``{"command": [...], "seconds": s, "finished": bool}``) of an earlier
    invocation of the same command (:func:`same_run`) whose checkpoints are there
    (``checkpoint_last.pt`` to go on training; ``checkpoint_best.pt`` when it finished), else None.
    ``folder``: the comparison's --out; the state is read only as itself (a link, pipe or device
    there is refused in one line, :func:`fairseq_wean.textio.open_in_folder`)."""
    state_path = os.path.join(run_dir, "train_state.json")
    if not (os.path.exists if folder is None else os.path.lexists)(state_path):
        return None
    try:
        with _open(state_path, folder) as f:
            state = json.load(f)
    except ValueError:
        return None
    needed = "checkpoint_best.pt" if state.get("finished") else "checkpoint_last.pt"
    if not os.path.exists(os.path.join(run_dir, "checkpoints", needed)) or not same_run(state.get("command", []), cmd):
        return None
    return state


def raised_cap(old_cmd, cmd, epochs_done):
    """Whether ``cmd`` lets a run that ended after ``epochs_done`` epochs under ``old_cmd`` train
    on: it ended at its old ``--max-epoch`` (not by ``--patience``) and the new cap is higher."""
    old_cap, new_cap = split_max_epoch(old_cmd)[1], split_max_epoch(cmd)[1]
    return old_cap is not None and new_cap is not None and epochs_done >= old_cap and new_cap > old_cap


class ValidationRecords:
    """The validation loss and score per epoch of one run, from its fairseq-train records."""

    def __init__(self, subset, metric):
        self.subset, self.metric = subset, metric
        self.valid_loss, self.curve = {}, []

    def add(self, tag, record):
        """Take one ``(tag, record)`` of :func:`read_train_log_line`; returns a progress text for
        a validation record of the decoded subset, else None. A repeated epoch (logged again
        after a restart) replaces the earlier record."""
        if tag != self.subset or self.subset + "_loss" not in record:
            return None
        epoch = int(record["epoch"])
        self.valid_loss[epoch] = float(record[self.subset + "_loss"])
        text = "valid loss {:.3f}".format(self.valid_loss[epoch])
        key = self.subset + "_" + self.metric
        if key in record:
            self.curve = [r for r in self.curve if r["epoch"] != epoch]
            self.curve.append({"epoch": epoch, self.metric: float(record[key])})
            # fairseq logs VALID_best_METRIC only from the second validation on (its best is set
            # after the first record is written): until then the best is this epoch's score
            best = record.get(self.subset + "_best_" + self.metric, self.curve[-1][self.metric])
            text += ", {} {:.2f} (best {:.2f})".format(self.metric, self.curve[-1][self.metric], float(best))
        return text


RUN_FILES = ("train_state.json", "train.log", "eval_plan.json", "eval.log", "eval.json", "result.json")


def check_run_folder(run_dir):
    """Refuse in one line (``FairseqWeanError``) a run folder ``--out/runs/SYSTEM-VOCAB`` that is a
    symbolic link or not a folder (nor is ``runs``), or that holds one of the files the runner writes
    and reads there (:data:`RUN_FILES`) as anything but a regular file of one name: a symbolic link, a named
    pipe, a device, a folder or a hard link. Each of them is also written (``textio.atomic_output``, ``textio.open_log``)
    and read (``textio.open_in_folder``) only as itself; this finds them before any training."""
    from fairseq_wean.textio import in_place_problem

    for path in (os.path.dirname(os.path.abspath(run_dir)), run_dir):
        if os.path.islink(path) or os.path.lexists(path) and not os.path.isdir(path):
            raise FairseqWeanError("{} is a symbolic link or not a folder: refused (the comparison makes its own "
                                   "run folders under --out); remove it".format(path))
    for name in RUN_FILES:  # textio's rule of a file written in place: a hard link (other names) is refused too
        path = os.path.join(run_dir, name)
        problem = in_place_problem(path)
        if problem is not None:
            raise FairseqWeanError("{} {}: refused (a run's files are written and read only as themselves); remove "
                                   "it".format(path, problem))
