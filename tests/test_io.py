import pytest

from longctx.io import InputError, read_text_file, sample_text


def test_sample_text_keeps_header(alice_text):
    assert alice_text.startswith("The Project Gutenberg")  # BOM removed, header kept
    assert "\r\n" in alice_text  # newlines kept exactly
    assert sample_text("alice") == alice_text


@pytest.mark.parametrize(
    "content, message",
    [(b"", "empty"), (b"  \n ", "empty"), (b"\x00\x01abc", "binary"), (b"\xff\xfe\xfa", "UTF-8")],
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
