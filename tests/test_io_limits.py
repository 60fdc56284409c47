"""Input limits of reading files and of the CLI: non-regular files, sizes, stray bytes, NUL bytes,
and a Chinese file retrieved end to end with exact offsets."""

from __future__ import annotations

import json
import logging
import os

import pytest

from longctx.cli import main
from longctx.io import InputError, read_text_file
from tests._intl_texts import ZH


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("longctx: error: ") and "Traceback" not in "\n".join(err)
    return err[-1]


def test_cli_refuses_devices_fifos_and_directories(tmp_path, capsys):
    if os.path.exists("/dev/zero"):
        assert main(["retrieve", "/dev/zero", "-q", "x"]) == 2
        assert "not a regular file" in _error(capsys)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["retrieve", str(fifo), "-q", "x"]) == 2  # refused before open(): no hang
    assert "not a regular file" in _error(capsys)
    assert main(["retrieve", str(tmp_path), "-q", "x"]) == 2
    assert "is a directory" in _error(capsys)


def test_cli_refuses_files_over_max_bytes(tmp_path, capsys):
    p = tmp_path / "big.txt"
    p.write_text("The cat sat on the mat. " * 100)
    assert main(["retrieve", str(p), "-q", "cat", "--max-bytes", "1000"]) == 2
    msg = _error(capsys)
    assert "2,400 bytes" in msg and "--max-bytes" in msg
    assert main(["retrieve", str(p), "-q", "cat", "--max-bytes", "3000", "--k", "1"]) == 0
    with pytest.raises(InputError, match="over the limit"):
        read_text_file(p, max_bytes=100)
    with pytest.raises(TypeError, match="max_bytes"):
        read_text_file(p, max_bytes=True)


def test_utf8_with_a_stray_latin1_byte_stays_utf8(tmp_path, caplog):
    text = "It’s Alice’s book. “Curiouser and curiouser!” cried Alice. " * 3
    data = text.encode("utf-8")
    data = data[:10] + b"\xe9" + data[10:]  # one stray Latin-1 byte
    p = tmp_path / "stray.txt"
    p.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="longctx.io"):
        got, enc = read_text_file(p, return_encoding=True)
    assert enc == "utf-8" and "’" in got and "‚Äô" not in got
    assert got == data.decode("utf-8", errors="replace")
    assert "\ufffd" in got and "byte offset(s) 10" in caplog.text
    with open(p, encoding=enc, errors="replace", newline="") as f:
        assert f.read() == got


def test_french_with_one_stray_byte_is_read(tmp_path):
    fr = "Café crème, l’été est là. Il fait très beau à Paris. Été à la plage, ça va très bien.\n"
    data = fr.encode("utf-8").replace("à Paris".encode(), b"\xe0 Paris")
    p = tmp_path / "fr.txt"
    p.write_bytes(data)
    got = read_text_file(p)
    assert got.startswith("Café crème") and "\ufffd Paris" in got


def test_latin1_file_is_still_detected(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("Café crème à Paris, l'été est très beau. Où êtes-vous ? ".encode("cp1252") * 5)
    got, enc = read_text_file(p, return_encoding=True)
    assert enc != "utf-8" and "Café crème" in got


def test_nul_bytes_anywhere_mean_binary(tmp_path):
    p = tmp_path / "late_nul.txt"
    p.write_bytes(b"The cat sat on the mat. " * 5000 + b"\x00" + b"more text")
    assert p.stat().st_size > 65536
    with pytest.raises(InputError, match="binary"):
        read_text_file(p)


def test_cli_chinese_file_finds_the_panda_passage(tmp_path, capsys):
    # ~50 KB of Chinese: the bundled paragraphs, the panda passage once in the middle
    other = "".join(line for line in ZH.splitlines() if "熊猫" not in line)
    panda = next(line for line in ZH.splitlines() if "熊猫" in line)
    filler = (other + "\n") * 55
    text = filler + panda + "\n" + filler
    assert len(text.encode()) > 45_000
    p = tmp_path / "zh.txt"
    p.write_text(text, encoding="utf-8")
    assert main(["retrieve", str(p), "-q", "熊猫吃什么？", "--k", "3", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "local"
    passages = out["passages"]
    assert len(passages) == 3 and all(p["end"] - p["start"] < 200 for p in passages)
    assert any("竹子" in p["text"] for p in passages)
    with open(p, encoding=out["encoding"], newline="") as f:
        whole = f.read()
    for q in passages:
        assert whole[q["start"] : q["end"]] == q["text"]
