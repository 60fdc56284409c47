"""Encoding detection prefers UTF-8 (with or without BOM, UTF-16 with BOM), then cp1252 for
Western text, over rare code pages; other legacy encodings only on strong evidence."""

from __future__ import annotations

import logging

import pytest

from longctx.io import read_text_file
from tests._intl_texts import JA, LANGS, ZH


def _read(tmp_path, data: bytes, name: str = "f.txt"):
    p = tmp_path / name
    p.write_bytes(data)
    return p, *read_text_file(p, return_encoding=True)


@pytest.mark.parametrize(
    "content",
    [
        # the reproductions: cp775 ("garńon", "crĶme br¹lķe"), cp1250, big5
        "Le garçon a mangé une crème brûlée au café.",
        "Un garçon et une crème brûlée.",
        "Ça va très bien, merci.",
        "A população de São Paulo é a maior do Brasil, disse ele à irmã.",
        "Ação e reação.",
        "A menina comeu pão com manteiga.",
        "garçon",
        LANGS["fr"],
        LANGS["pt"],
        LANGS["es"],
        LANGS["de"],
    ],
)
def test_short_latin1_text_is_cp1252(tmp_path, content):
    p, text, enc = _read(tmp_path, content.encode("latin-1"))
    assert (text, enc) == (content, "cp1252")
    assert open(p, encoding=enc, newline="").read() == text


def test_ascii_with_one_stray_byte_is_cp1252_with_a_warning(tmp_path, caplog):
    """It was read as cp932 (or cp1125, mac_iceland, cp437 depending on the text)."""
    data = b"The quick brown fox jumps over the lazy dog \x81.\nA second line.\n"
    with caplog.at_level(logging.WARNING, logger="longctx.io"):
        p, text, enc = _read(tmp_path, data)
    assert enc == "cp1252"
    assert text == "The quick brown fox jumps over the lazy dog \ufffd.\nA second line.\n"
    assert "byte offset(s) 44" in caplog.text
    assert open(p, encoding=enc, errors="replace", newline="").read() == text


@pytest.mark.parametrize(
    "content, codec, expected",
    [
        ("Zażółć gęślą jaźń. Pójdźże, kiń tę chmurność w głąb flaszy!\n" * 2, "cp1250", "cp1250"),
        (LANGS["pl"], "cp1250", "cp1250"),
        (LANGS["cs"], "cp1250", "cp1250"),
        (LANGS["tr"], "cp1254", "cp1254"),  # was cp1252 ("baþkenti")
        (LANGS["ru"], "cp1251", "cp1251"),
        (LANGS["uk"], "cp1251", "cp1251"),
        (LANGS["he"], "cp1255", "cp1255"),
        (LANGS["ar"], "cp1256", "cp1256"),
        (JA, "shift_jis", "cp932"),
        (ZH, "gb2312", "gb18030"),
        (LANGS["ko"], "euc_kr", "cp949"),
    ],
)
def test_legacy_encodings_still_decode(tmp_path, content, codec, expected):
    p, text, enc = _read(tmp_path, content.encode(codec))
    assert (text, enc) == (content, expected)
    assert open(p, encoding=enc, newline="").read() == text


@pytest.mark.parametrize(
    "data, expected",
    [
        ("Café crème ✓ 中文".encode(), "utf-8"),
        ("\ufeffCafé crème".encode(), "utf-8-sig"),
        ("Café crème 中文".encode("utf-16"), "utf-16"),
    ],
)
def test_utf_first(tmp_path, data, expected):
    _, text, enc = _read(tmp_path, data)
    assert enc == expected and text.startswith("Café crème")
