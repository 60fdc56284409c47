import os

import pytest

from longctx.io import InputError, read_text_file, sample_text


def test_sample_text_keeps_header(alice_text):
    assert alice_text.startswith("The Project Gutenberg")  # BOM removed, header kept
    assert "\r\n" in alice_text  # newlines kept exactly
    assert sample_text("alice") == alice_text


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"  \n ", "empty"),
        (b"\x00\x01abc", "binary"),
        (b"\xff\xfe\xfa", "UTF-8"),  # a UTF-16 BOM followed by an odd byte
    ],
)
def test_read_text_file_rejects(tmp_path, content, message):
    p = tmp_path / "f.txt"
    p.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_text_file(p)


def test_read_text_file_missing_and_dir(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_text_file(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="directory"):
        read_text_file(tmp_path)


def _roundtrip(path, text, encoding):
    """The documented convention: open(path, encoding=..., newline="") gives the same string."""
    with open(path, encoding=encoding, newline="") as f:
        assert f.read() == text


@pytest.mark.parametrize(
    "content, encoding",
    [
        ("Plain ASCII.\r\nSecond line.\n", "utf-8"),
        ("\ufeffWith a BOM: naïve café.\r\n", "utf-8-sig"),
    ],
)
def test_utf8_with_and_without_bom(tmp_path, content, encoding):
    p = tmp_path / "f.txt"
    p.write_bytes(content.encode("utf-8"))
    text, enc = read_text_file(p, return_encoding=True)
    assert enc == encoding
    assert text == content.lstrip("\ufeff") and "\r\n" in text
    assert read_text_file(p) == text
    _roundtrip(p, text, enc)


@pytest.mark.parametrize(
    "content, codec",
    [
        (
            "Le café était très chaud. La forêt, où nous étions, était froide.\r\n"
            "Ça, c'était naïf: une crème brûlée près de la fenêtre.\r\n",
            "latin-1",
        ),
        ("It\u2019s a \u201cquoted\u201d text, isn\u2019t it? Straße über grün.\n" * 3, "cp1252"),
        ("Zażółć gęślą jaźń. Pójdźże, kiń tę chmurność w głąb flaszy!\n" * 2, "cp1250"),
    ],
)
def test_legacy_single_byte_encodings_are_detected(tmp_path, content, codec):
    p = tmp_path / "legacy.txt"
    p.write_bytes(content.encode(codec))
    text, enc = read_text_file(p, return_encoding=True)
    assert text == content  # decoded exactly, \r\n kept
    _roundtrip(p, text, enc)


def test_latin1_is_read_as_cp1252(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("Un garçon a mangé une crème brûlée.\n".encode("latin-1"))
    assert read_text_file(p, return_encoding=True) == (
        "Un garçon a mangé une crème brûlée.\n",
        "cp1252",
    )


def test_utf16_with_bom(tmp_path):
    p = tmp_path / "u16.txt"
    content = "héllo wörld\r\nsecond line"
    p.write_bytes(content.encode("utf-16"))  # with its BOM, and NUL bytes
    text, enc = read_text_file(p, return_encoding=True)
    assert (text, enc) == (content, "utf-16")
    _roundtrip(p, text, enc)


def test_undetectable_bytes_keep_a_clear_error(tmp_path):
    p = tmp_path / "noise.bin"
    rng = __import__("random").Random(0)
    p.write_bytes(bytes(rng.randrange(1, 256) for _ in range(4000)))
    with pytest.raises(InputError, match="not UTF-8 text and its encoding cannot be detected"):
        read_text_file(p)
    p.write_bytes(os.urandom(64) + b"\x00" + b"x" * 10)
    with pytest.raises(InputError, match="binary"):
        read_text_file(p)
