"""fairseq-train --share-all-embeddings (one embedding matrix for source and target) on a data folder whose source
and target dictionaries differ: one line at parse (``train_files_check.joined_dictionary_problem``), for every
registered model that declares the option; the same command on a joined folder is taken. fairseq's build_model
raised a ValueError traceback after the data was loaded."""
import pytest
from conftest import USER_DIR, parse_outcome


def _models_sharing_all_embeddings():
    """One architecture of each registered model class whose options include --share-all-embeddings."""
    import fairseq_wean  # noqa: F401
    from fairseq.models import ARCH_MODEL_REGISTRY

    from fairseq_wean.option_rules import component_actions

    chosen = {}
    for arch, cls in sorted(ARCH_MODEL_REGISTRY.items()):
        if cls in chosen.values() or arch.startswith("dummy"):
            continue
        try:
            dests = {a.dest for a in component_actions("arch", arch)}
        except Exception:  # noqa: BLE001  (a model whose options need a package not installed here)
            continue
        if "share_all_embeddings" in dests:
            chosen[arch] = cls
    return sorted(chosen)


MODELS = _models_sharing_all_embeddings()


def test_the_enumeration_reaches_fairseqs_models():
    assert {"transformer", "bart_base"} & set(MODELS) and len(MODELS) >= 3, MODELS


@pytest.mark.parametrize("arch", MODELS)
def test_share_all_embeddings_on_separate_dictionaries_is_one_line_at_parse(arch, data_bin, data_bin_unjoined,
                                                                            tmp_path, monkeypatch, capsys):
    base = ["--user-dir", USER_DIR, "--task", "translation", "--arch", arch, "--share-all-embeddings",
            "--max-tokens", "100", "--save-dir", str(tmp_path / "ck")]
    line = parse_outcome("fairseq-train", "get_training_parser", [str(data_bin_unjoined)] + base, monkeypatch, capsys)
    assert line is not None and "--share-all-embeddings shares one embedding matrix between source and target, " \
        "but" in line and "--joined-dictionary" in line, line
    assert not (tmp_path / "ck").exists()
    line = parse_outcome("fairseq-train", "get_training_parser", [str(data_bin)] + base, monkeypatch, capsys)
    assert line is None or "--share-all-embeddings" not in line, line
