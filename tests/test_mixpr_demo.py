"""`make demo` answers its own question (issue #12): the default MixPR's top 5 for "What did the
Mock Turtle sing about?" on the bundled Alice hold the soup song; the query-coverage weighting
that does it; the opt-in short-chunk merging of the chunker."""

from __future__ import annotations

import json
import re

import pytest

from longctx.cli import main
from longctx.mixpr import PRESETS, MixPR, MixPRConfig, MixPRIndex
from longctx.persist import PersistError
from longctx.text import chunk_words
from tests._persist_helpers import restamp

DEMO_QUERY = "What did the Mock Turtle sing about?"  # the Makefile's `demo` target
# What the Mock Turtle sings: "Sing her 'Turtle Soup,'", "Beautiful Soup, so rich and green", ...
# ("Mock Turtle Soup is made from" is the food, not the song, and does not match).
SONG = re.compile(r"Beautiful Soup|Turtle Soup,”|Soup of the evening")


def test_make_demo_answers_its_own_question(capsys):
    rc = main(["retrieve", "--sample", "alice", "--query", DEMO_QUERY, "--k", "5"])
    out = capsys.readouterr().out
    assert rc in (0, None)
    assert out.count("score=") == 5
    assert SONG.search(" ".join(out.split())), out


def test_default_index_top5_holds_the_song_where_the_previous_default_did_not(alice_text):
    hits = MixPRIndex.from_texts(alice_text).search(DEMO_QUERY, k=5).hits
    assert len(hits) == 5
    assert any(SONG.search(" ".join(h.text.split())) for h in hits)
    # the default before coverage weighting (and its thresholded graph): five "... said the
    # Mock Turtle." lines
    before = MixPRIndex.from_texts(
        alice_text, coverage_power=0.0, alpha_local=0.6, graph="threshold"
    )
    old = before.search(DEMO_QUERY, k=5).hits
    assert not any(SONG.search(" ".join(h.text.split())) for h in old)
    assert sum("Mock Turtle" in h.text for h in old) == 5


# Short lines holding part of the question, and one longer sentence holding all of it.
DIALOGUE = (
    "The Gryphon and the Mock Turtle sat by the sea.\n\n"
    "'You did,' said the Mock Turtle.\n\n"
    "'Of course,' said the Mock Turtle.\n\n"
    "'Go on,' said the Mock Turtle.\n\n"
    "The Mock Turtle sighed deeply, wiped his eyes with a flipper, looked at the waves, and "
    "began to sing a slow song about soup while Alice listened.\n\n"
    "Alice went home and had tea with her sister."
)
SINGING = (
    "The Mock Turtle sighed deeply, wiped his eyes with a flipper, looked at the waves, and "
    "began to sing a slow song about soup while Alice listened."
)


def test_coverage_ranks_the_chunk_holding_every_query_term_first():
    index = MixPRIndex.from_texts(DIALOGUE)
    assert index.search(DEMO_QUERY, k=1, mode="local").hits[0].text == SINGING
    plain = MixPRIndex.from_texts(DIALOGUE, coverage_power=0.0)
    assert plain.search(DEMO_QUERY, k=1, mode="local").hits[0].text != SINGING
    # one-off calls rank like the index (same config, same scoring code)
    assert MixPR().search(DIALOGUE, DEMO_QUERY, k=1, mode="local").hits[0].text == SINGING


def test_coverage_keeps_the_fallback_and_the_paper_preset():
    assert PRESETS["paper"].coverage_power == 0.0 and PRESETS["paper"].alpha_local == 0.6
    assert (PRESETS["default"].coverage_power, PRESETS["default"].alpha_local) == (4.0, 0.8)
    result = MixPRIndex.from_texts(DIALOGUE).search("zebra quantum", k=2, mode="local")
    assert result.mode == "global-fallback"  # no query term in the text: logged, visible


def test_bad_coverage_and_min_words_settings_raise():
    with pytest.raises(ValueError, match="coverage_power"):
        MixPRConfig(coverage_power=-1.0)
    with pytest.raises(ValueError, match="coverage_power"):
        MixPRConfig(fit_query=True)  # the literal pipeline has no coverage weighting
    with pytest.raises(ValueError, match="min_words"):
        MixPRConfig(min_words=0)
    with pytest.raises(TypeError, match="min_words"):
        chunk_words("a b c", 32, min_words="8")
    assert MixPRConfig(fit_query=True, coverage_power=0).fit_query


def test_a_saved_config_missing_a_setting_is_refused(tmp_path):
    index = MixPRIndex.from_texts(DIALOGUE, coverage_power=0.0)
    index.save(tmp_path / "idx")
    cfg_path = tmp_path / "idx" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    del cfg["coverage_power"]  # a default would silently change how the index ranks
    cfg_path.write_text(json.dumps(cfg))
    restamp(tmp_path / "idx")
    with pytest.raises(PersistError, match="coverage_power"):
        MixPRIndex.load(tmp_path / "idx")


def test_min_words_merges_short_chunks_inside_a_paragraph_only():
    text = "One two.\nThree four five. Six.\n\nSeven eight. " + " ".join(["w"] * 31) + "."
    plain = chunk_words(text, 32)
    assert [text[a:b] for a, b in plain][:4] == [
        "One two.",
        "Three four five.",
        "Six.",
        "Seven eight.",
    ]
    merged = chunk_words(text, 32, min_words=8)
    units = [text[a:b] for a, b in merged]
    # the first paragraph becomes one unit; the blank line is never crossed; the 31-word
    # sentence would push "Seven eight." over 32 words, so that one stays alone
    assert units[0] == "One two.\nThree four five. Six."
    assert units[1] == "Seven eight."
    assert len(units) == 3 and all(len(u.split()) <= 32 for u in units)
    assert "".join("".join(u.split()) for u in units) == "".join(text.split())
    assert chunk_words(text, 32, min_words=None) == plain == chunk_words(text, 32, min_words=1)
