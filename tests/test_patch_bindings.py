"""Every fix of a fairseq function reaches every caller: a function fairseq modules import by name
(``from fairseq.tasks.translation import load_langpair_dataset`` in translation_lev,
multilingual_translation, ...) is wrapped in each of them (``patching.wrap_every_binding``), not only
in its home module: fix 6 (unusable binarized data) and fix 20 (``--upsample-primary``'s default) once
reached ``fairseq.tasks.translation`` only."""
import sys
import types

import fairseq_wean  # noqa: F401  (applies the patches)
from fairseq_wean.patching import MARK, ROOT

# patched in one module on purpose, with the reason
ONE_BINDING = {
    "PathManager": "checkpoint_safety: only checkpoint_utils copies checkpoints; other users of fairseq's "
                   "PathManager keep fairseq's own class",
}


def fairseq_modules():
    return [(name, module) for name, module in sorted(sys.modules.items())
            if name.startswith(("fairseq.", "fairseq_cli.")) and isinstance(module, types.ModuleType)]


def test_every_patched_fairseq_function_is_patched_wherever_it_is_bound():
    wrapped = {}  # id(fairseq's function) -> (function, {keys of its patches}, [module.name])
    for name, module in fairseq_modules():
        for attr, value in list(vars(module).items()):
            if callable(value) and hasattr(value, ROOT):
                root = getattr(value, ROOT)
                entry = wrapped.setdefault(id(root), (root, set(getattr(value, MARK, ())), []))
                entry[2].append("{}.{}".format(name, attr))
    assert wrapped, "no patched fairseq function found: the ROOT mark is gone"
    missed = []
    for name, module in fairseq_modules():
        for attr, value in list(vars(module).items()):
            entry = wrapped.get(id(value))
            if entry is not None and entry[0] is value and attr not in ONE_BINDING:
                missed.append("{}.{} (patched in {})".format(name, attr, ", ".join(entry[2])))
            elif entry is None and callable(value) and hasattr(value, ROOT):
                pass
    assert missed == []


def test_every_binding_carries_the_same_patches():
    by_root = {}
    for name, module in fairseq_modules():
        for attr, value in list(vars(module).items()):
            if callable(value) and hasattr(value, ROOT) and attr not in ONE_BINDING:
                by_root.setdefault(id(getattr(value, ROOT)), {})["{}.{}".format(name, attr)] = \
                    frozenset(getattr(value, MARK, ()))
    differ = {where: sorted(map(sorted, set(marks.values())))
              for where, marks in ((min(m), m) for m in by_root.values()) if len(set(marks.values())) > 1}
    assert differ == {}


def test_load_langpair_dataset_is_fixed_in_every_task_module():
    bound = {name: module.load_langpair_dataset for name, module in fairseq_modules()
             if callable(getattr(module, "load_langpair_dataset", None))}
    assert {"fairseq.tasks.translation", "fairseq.tasks.translation_lev",
            "fairseq.tasks.multilingual_translation"} <= set(bound)
    for name, fn in bound.items():
        marks = getattr(fn, MARK, ())
        assert any("install_binarized_data_checks" in m for m in marks), name
        assert "fairseq_wean.fixes_training.upsample_primary" in marks, name
