"""What a job ships may only land inside each task's work dir (issue 11 #9):
a `venv` symlink inside an archived --src_dir, and resource names that are
absolute or climb out with '..', are refused with an error naming the entry
and saying what to do; nothing is written where they point."""
import io
import tarfile
import zipfile

import pytest

SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.worker.instances=1"]


@pytest.mark.parametrize("name", ["{outside}/planted.txt", "../../../../../../..{outside}/planted.txt",
                                  "sub/../../planted.txt", "./x/./../../y"])
def test_resource_names_outside_the_work_dir_are_refused(tony, tmp_path, name):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "data.txt").write_text("payload\n")
    name = name.format(outside=outside)
    r = tony.submit("--executes", "true", "--conf", f"tony.containers.resources={tmp_path / 'data.txt'}::{name}",
                    *SMALL)
    assert r.rc == 2, r
    assert "tony.containers.resources" in r.err and f"'{name}'" in r.err and "relative" in r.err, r
    assert not list(outside.iterdir())
    assert not (tmp_path / "planted.txt").exists() and not (tmp_path / "y").exists()


def test_resource_names_in_subdirs_still_work(tony, tmp_path):
    """A relative name with dirs in it is a place inside the work dir, as
    YARN links it: it still works."""
    (tmp_path / "data.txt").write_text("payload\n")
    r = tony.submit("--executes", "cat conf/d/data.txt",
                    "--conf", f"tony.containers.resources={tmp_path / 'data.txt'}::conf/d/data.txt", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 0).strip() == "payload"


def venv_zip(tmp_path):
    path = tmp_path / "venv.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("bin/marker", "from the venv\n")
    return path


def src_tar(tmp_path, link_target):
    """An archived src dir whose `venv` entry is a symlink to link_target."""
    path = tmp_path / "src.tar"
    with tarfile.open(path, "w") as t:
        data = b"print('hi')\n"
        info = tarfile.TarInfo("main.py")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("venv")
        link.type = tarfile.SYMTYPE
        link.linkname = str(link_target)
        t.addfile(link)
    return path


def test_venv_symlink_in_archived_src_dir_is_refused(tony, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    r = tony.submit("--src_dir", str(src_tar(tmp_path, outside)), "--python_venv", str(venv_zip(tmp_path)),
                    "--executes", "cat venv/bin/marker", *SMALL)
    assert r.rc != 0, r
    assert not list(outside.iterdir()), "the venv was unpacked through the symlink"
    log = r.log("worker", 0, "executor.log")
    assert "'venv'" in log and "symlink" in log and "rename" in log, log
    assert "venv" in r.text and "symlink" in r.text, r


def test_venv_dir_in_archived_src_dir_is_merged(tony, tmp_path):
    """A real `venv` dir in the src archive is no escape: the venv zip is
    unpacked into it."""
    path = tmp_path / "src.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("venv/own.txt", "own\n")
    r = tony.submit("--src_dir", str(path), "--python_venv", str(venv_zip(tmp_path)),
                    "--executes", "cat venv/own.txt venv/bin/marker", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 0).split() == ["own", "from", "the", "venv"]
