"""A01: fairseq's hub never downloads or extracts an archive (file_utils.load_archive_file:
tarfile.extractall of members ``m/../../x`` and links, the archive replaced by a folder). Every route to
it, for the model and for the data, is refused in one line before fairseq touches the archive."""
import hashlib
import io
import os
import tarfile

import pytest

from fairseq_wean.errors import FairseqWeanError


def crafted_archive(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"VICTIM\n")
    archive = tmp_path / "model.tar.gz"
    data = b"PWNED\n"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("m")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        info = tarfile.TarInfo("m/../../escaped.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("m/link")
        info.type, info.linkname = tarfile.SYMTYPE, str(victim)
        tar.addfile(info)
        info = tarfile.TarInfo("m/link")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return archive, victim


def routes():
    import fairseq_wean  # noqa: F401
    from fairseq import hub_utils
    from fairseq.models.lstm import LSTMModel
    from fairseq.models.transformer import TransformerModel

    from fairseq_wean.models.wean_lstm import WeanLSTMModel

    def hub(model, data):
        return hub_utils.from_pretrained(model, checkpoint_file="checkpoint_best.pt", data_name_or_path=data)

    def model_class(cls):
        return lambda model, data: cls.from_pretrained(model, checkpoint_file="checkpoint_best.pt",
                                                       data_name_or_path=data)

    return {"hub_utils": hub, "WeanLSTMModel": model_class(WeanLSTMModel), "LSTMModel": model_class(LSTMModel),
            "TransformerModel": model_class(TransformerModel)}


@pytest.mark.parametrize("where", ["model", "data", "a hub name (URL)"])
@pytest.mark.parametrize("route", sorted(routes()))
def test_no_route_extracts_an_archive(tmp_path, route, where):
    archive, victim = crafted_archive(tmp_path)
    folder = tmp_path / "work" / "folder"
    folder.mkdir(parents=True)
    before = hashlib.md5(archive.read_bytes()).hexdigest()
    if where == "model":
        model, data, named = str(archive), ".", str(archive)
    elif where == "data":
        model, data, named = str(folder), str(archive), str(archive)
    else:  # fairseq's archive_map name: a URL it would download (no network here: refused before)
        model, data, named = "transformer.wmt16.en-de", ".", ""  # the name, or the URL it maps to
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with pytest.raises(FairseqWeanError) as info:
            routes()[route](model, data)
    finally:
        os.chdir(cwd)
    message = str(info.value)
    assert message.startswith("from_pretrained: " + named) and "is not a folder" in message and "\n" not in message
    assert hashlib.md5(archive.read_bytes()).hexdigest() == before and archive.is_file()
    assert victim.read_bytes() == b"VICTIM\n"
    assert not any(p.name == "escaped.txt" for p in tmp_path.rglob("*"))
