"""Every error of a JSONL input names the file and the line in one form, ``'<file>' line <n>:
<what is wrong>``: the JSON parse named them as one quoted string (``'docs.jsonl line 2' is
damaged or truncated``) and a key given twice said "(damaged or forged)", the wording of saved
files, not of the user's input."""

from __future__ import annotations

import re

import pytest

from longctx.corpus import read_documents

GOOD = '{"id": "a", "text": "The cat sat on the mat."}\n'


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ('{"id": "b", "text": ', "not JSON: "),
        ('{"id": "b", "text": NaN}', "not JSON: NaN is not allowed"),
        ('{"id": "b", "text": "x", "id": "c"}', "the key 'id' appears twice in one object"),
        ('{"id": "b", "text": ' + "[" * 200 + "]" * 200 + "}", "nested deeper than"),
        ("[1, 2]", "expected an object with 'id' and 'text' fields"),
        ('{"id": "b", "text": 5}', "field 'text' must be a string, got int"),
        ('{"id": true, "text": "x"}', "field 'id' must be a string or an integer, got bool"),
        ('{"id": "../b", "text": "x"}', "document id '../b' holds a '.' or '..' path segment"),
        ('{"id": "a", "text": "again"}', "document id 'a' is given twice (first on line 1)"),
        ('{"id": "b", "text": "  "}', "field 'text' is empty"),
    ],
)
def test_every_jsonl_error_is_file_line_what(tmp_path, line, what):
    path = tmp_path / "docs.jsonl"
    path.write_text(GOOD + line + "\n", "utf-8")
    with pytest.raises(ValueError) as info:
        read_documents(path)
    msg = str(info.value)
    assert msg.startswith(f"{str(path)!r} line 2: {what}"), msg
    assert not re.search(r"damaged|forged|truncated|documents\[", msg)


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_parse_error_names_the_column_of_the_line_itself(tmp_path, ending):
    """An unterminated string on line 3 read ``not JSON: Invalid control character at: line 1
    column 34 (char 33)``: column 34 was the line's own newline, and "line 1" / "char" the
    parser's view of one line. The line is parsed without its ending, and its column given."""
    path = tmp_path / "notjson.jsonl"
    bad = '{"id": "c", "text": "unterminated'
    two = GOOD + GOOD.replace('"a"', '"b"')
    path.write_bytes((two + bad + ending).replace("\n", ending).encode())
    with pytest.raises(ValueError) as info:
        read_documents(path)
    assert str(info.value) == (
        f"{str(path)!r} line 3: not JSON: Unterminated string starting at: column 21"
    )
    path.write_text(GOOD + '{"id": "b" "text": "x"}\n', "utf-8")
    with pytest.raises(ValueError) as info:
        read_documents(path)
    assert str(info.value).endswith("line 2: not JSON: Expecting ',' delimiter: column 12")


def test_a_saved_file_of_several_lines_keeps_the_line_and_column():
    from longctx.persist import JSONTextError, loads_strict

    with pytest.raises(JSONTextError, match=r"line 2 column 5 \(char 10\)"):
        loads_strict('{"a":\n  1 2}')


def test_benchmark_jsonl_errors_take_the_same_form(tmp_path):
    """``longctx bench``'s JSONL data (``--data``) named the line as ``'file line 2' is damaged
    or truncated``, the wording of saved files."""
    from longctx.eval.tasks import _read_jsonl
    from longctx.io import InputError

    path = tmp_path / "test.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 1, "a": 2}\n', "utf-8")
    with pytest.raises(InputError) as info:
        _read_jsonl(path)
    assert str(info.value) == f"{str(path)!r} line 3: the key 'a' appears twice in one object"
    path.write_text('{"a": 1}\n[1, 2\n', "utf-8")
    with pytest.raises(InputError, match=rf"^{re.escape(repr(str(path)))} line 2: not JSON: "):
        _read_jsonl(path)
    path.write_text('{"a": 1}\n\n[2]\n', "utf-8")
    assert _read_jsonl(path) == [{"a": 1}, [2]]


def test_a_jsonl_line_of_too_many_values_is_refused_before_parsing(tmp_path, monkeypatch):
    """The values bound (``MAX_JSON_VALUES``) holds for a JSONL line as for a saved file: a line
    parsed through ``loads_strict`` skipped it."""
    from longctx.persist import format as fmt

    monkeypatch.setattr(fmt, "MAX_JSON_VALUES", 100)
    path = tmp_path / "docs.jsonl"
    many = '{"id": "b", "text": "x", "tags": [' + ",".join(["{}"] * 100) + "]}"
    path.write_text(GOOD + many + "\n", "utf-8")
    with pytest.raises(ValueError) as info:
        read_documents(path)
    assert str(info.value).startswith(f"{str(path)!r} line 2: holds up to 204 JSON values"), (
        info.value
    )
    prose = '{"id": "b", "text": "' + "word " * 100 + '"}'  # long, few values: read
    path.write_text(GOOD + prose + "\n", "utf-8")
    assert [d[0] for d in read_documents(path)] == ["a", "b"]


def test_a_byte_order_mark_opening_a_jsonl_file_is_dropped(tmp_path):
    """Notepad and PowerShell write a UTF-8 byte order mark: line 1 was refused with "Unexpected
    UTF-8 BOM (decode using utf-8-sig)", advice for Python programmers."""
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode() + b'{"id": "b", "text": "\xef\xbb\xbfkept"}\n')
    assert list(read_documents(path)) == [("a", "The cat sat on the mat."), ("b", "\ufeffkept")]
