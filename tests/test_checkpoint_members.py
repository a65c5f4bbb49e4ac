"""Every member of a checkpoint's zip that torch reads has a rule, and a member torch.save never writes is refused,
before torch reads the file (``checkpoint_container._saved_members_problem``, :data:`SAVED_MEMBERS`).

torch reads more of the zip than the pickle and the storage records: ``byteorder`` (torch 2.x: a traceback for any
value but ``little``/``big``, and every weight byte-swapped for ``big``, where torch 1.13 ignores the member: one
file, two models), ``version`` (a traceback outside the versions it reads, and without it), ``.storage_alignment``
(a traceback for no integer), ``.format_version``, ``.data/serialization_id``, a ``.data/version`` (read instead of
``version``), and every member must lie in the first member's folder (a traceback otherwise). Each case here goes
through every loading route (``test_checkpoint_records.ROUTES``: safe_load, fairseq's load_checkpoint_to_cpu behind
--path/--lm-path/--restore-file/--finetune-from-model, the EMA loader, both hubs): one line naming the file and the
member, torch never reached, the file unchanged.
"""
import io
import re
import zipfile

import pytest
from conftest import planted_checkpoint_refusal
import torch

from fairseq_wean import checkpoint_container, checkpoint_safety
from test_checkpoint_records import ROUTES, rewritten, torch_never_reads  # noqa: F401  (a fixture)
from test_crafted_checkpoints import plain_state, rezipped, saved

REFUSED = r"^refusing to load checkpoint {}: {}; nothing was read$"
NEVER = "it holds a member {}, which torch.save never writes (it writes data.pkl, data/KEY, version, byteorder, " \
        ".format_version, .storage_alignment, .data/serialization_id)"


def with_member(name, value, data=None):
    """torch.save's zip of :func:`plain_state` with member ``archive/NAME`` set to ``value`` (added if absent;
    None: left out)."""
    data = data or saved(plain_state())
    full = "archive/" + name
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        present = full in archive.namelist()
    if present or value is None:
        return rewritten(data, lambda n, b: (value if n == full else b))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info.filename))
        target.writestr(full, value)
    return out.getvalue()


def with_raw_member(name, value):
    """The zip with a member named ``name`` exactly (no folder added)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved(plain_state()))) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info.filename))
        target.writestr(name, value)
    return out.getvalue()


def wrong(member, shown, written):
    return "its member archive/{} is {!r}, where torch.save writes {}".format(member, shown, written)


BIG = "its member archive/byteorder is 'big': torch >= 2.1 byte-swaps every weight of such a file and torch 1.13 " \
      "ignores the member"
# case -> (file bytes, the refusal's detail: its start)
CASES = {
    "byteorder-big": (with_member("byteorder", b"big"), BIG),
    "byteorder-middle": (with_member("byteorder", b"middle"), wrong("byteorder", "middle", "'little'")),
    "byteorder-LITTLE": (with_member("byteorder", b"LITTLE"), wrong("byteorder", "LITTLE", "'little'")),
    "byteorder-empty": (with_member("byteorder", b""), wrong("byteorder", "", "'little'")),
    "version-99": (with_member("version", b"99\n"), wrong("version", "99", "'3'")),
    "version-0": (with_member("version", b"0\n"), wrong("version", "0", "'3'")),
    "version-not-a-number": (with_member("version", b"abc"), wrong("version", "abc", "'3'")),
    "version-absent": (with_member("version", None), "it has no member archive/version, which torch.save always "
                                                     "writes (torch refuses the file without it)"),
    "format-version-2": (with_member(".format_version", b"2"), wrong(".format_version", "2", "'1'")),
    "storage-alignment-not-a-number": (with_member(".storage_alignment", b"x"),
                                       wrong(".storage_alignment", "x", "a whole number (64)")),
    "serialization-id-letters": (with_member(".data/serialization_id", b"abc"),
                                 wrong(".data/serialization_id", "abc", "decimal digits")),
    "data-version-member": (with_member(".data/version", b"99\n"), NEVER.format("archive/.data/version")),
    "extra-member": (with_member("extra.bin", b"hello"), NEVER.format("archive/extra.bin")),
    "folder-entry": (with_member("sub/", b""), NEVER.format("archive/sub/")),
    "dotdot-member": (with_member("../../evil", b"x"), NEVER.format("archive/../../evil")),
    "member-outside-the-folder": (with_raw_member("other/data.pkl", b"x"),
                                  "its member other/data.pkl lies outside the archive's folder archive/"),
    "member-in-no-folder": (with_raw_member("x", b"1"), "its member x lies outside the archive's folder archive/"),
}

# each rule of SAVED_MEMBERS -> a case that breaks it
RULE_CASES = {"version": "version-99", "byteorder": "byteorder-middle", ".format_version": "format-version-2",
              ".storage_alignment": "storage-alignment-not-a-number",
              ".data/serialization_id": "serialization-id-letters"}


def test_every_member_torch_save_writes_has_a_rule_and_a_case():
    """The class: what this torch's torch.save writes is data.pkl, the records and :data:`SAVED_MEMBERS` (a torch
    that writes a new member fails here: give it a rule), and every rule has a refused case above."""
    with zipfile.ZipFile(io.BytesIO(saved(plain_state()))) as archive:
        written = {name.split("/", 1)[1] for name in archive.namelist()}
    assert {"data.pkl", "version"} <= written
    assert written - {"data.pkl"} - {n for n in written if re.fullmatch(r"data/\d+", n)} <= set(
        checkpoint_container.SAVED_MEMBERS)
    assert set(RULE_CASES) == set(checkpoint_container.SAVED_MEMBERS)
    assert all(RULE_CASES[member] in CASES for member in RULE_CASES)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.__name__.strip("_"))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_member_torch_save_does_not_write_is_refused_before_torch_reads_it(data_bin, tmp_path, case, route,
                                                                               torch_never_reads):
    import fairseq_wean  # noqa: F401  (installs the checkpoint checks)

    data, detail = CASES[case]
    path, message = planted_checkpoint_refusal(route, data, data_bin, tmp_path)
    assert re.match(REFUSED.format(re.escape(str(path)), re.escape(detail) + ".*"), message), message


# what torch.save writes, and values every supported torch reads alike: they load, with their weights
LOADS = {
    "as-saved": saved(plain_state()),
    "version-3-without-newline": with_member("version", b"3"),
    "version-1": with_member("version", b"1\n"),
    "byteorder-absent (torch 1.13)": with_member("byteorder", None),
    "byteorder-little": with_member("byteorder", b"little"),
    "storage-alignment-128": with_member(".storage_alignment", b"128"),
    "another-folder-name": rezipped(saved(plain_state()), rename=lambda n: n.replace("archive/", "ck/", 1)),
}


@pytest.mark.parametrize("case", sorted(LOADS))
def test_what_torch_save_writes_loads(tmp_path, case):
    import fairseq_wean  # noqa: F401
    from fairseq import checkpoint_utils

    path = tmp_path / "checkpoint.pt"
    path.write_bytes(LOADS[case])
    assert checkpoint_container.container_problem(io.BytesIO(LOADS[case])) is None
    for load in (checkpoint_safety.safe_load, checkpoint_utils.load_checkpoint_to_cpu):
        state = load(str(path))
        assert torch.equal(state["model"]["w"], torch.arange(4.0)), case
