"""Seed 003's answer checks: script detection by Unicode ranges, the two flags, storage at import."""

from __future__ import annotations

import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration import checks, importing, store
from calibration.store import Database
from calibration.store import checks as check_store


@pytest.mark.parametrize(
    ("ch", "script"),
    [
        ("a", "Latin"),
        ("Z", "Latin"),
        ("é", "Latin"),
        ("ß", "Latin"),
        ("ł", "Latin"),
        ("ạ", "Latin"),
        ("я", "Cyrillic"),
        ("Ё", "Cyrillic"),
        ("ї", "Cyrillic"),
        ("ә", "Cyrillic"),
        ("α", "Greek"),
        ("ש", "Hebrew"),
        ("ب", "Arabic"),
        ("क", "Devanagari"),
        ("ก", "Thai"),
        ("ა", "Georgian"),
        ("Ա", "Armenian"),
        ("中", "CJK"),
        ("の", "CJK"),
        ("カ", "CJK"),
        ("한", "CJK"),
        ("ｶ", "CJK"),
        ("𠀀", "CJK"),
        ("々", "CJK"),
        ("1", None),
        (" ", None),
        (",", None),
        ("%", None),
        ("—", None),
        ("«", None),
        ("。", None),
        ("€", None),
    ],
)
def test_script_of_known_characters(ch: str, script: str | None) -> None:
    assert checks.script_of(ch) == script


def test_ranges_agree_with_unicode_names_over_whole_blocks() -> None:
    # An independent oracle: the character names in the Unicode database start with the script.
    for lo, hi, word, script in [
        (0x0410, 0x044F, "CYRILLIC", "Cyrillic"),
        (0x4E00, 0x4E50, "CJK", "CJK"),
        (0x3041, 0x3096, "HIRAGANA", "CJK"),
        (0xAC00, 0xAC40, "HANGUL", "CJK"),
        (0x0391, 0x03A1, "GREEK", "Greek"),
        (0x00C0, 0x00D6, "LATIN", "Latin"),
    ]:
        for cp in range(lo, hi + 1):
            assert unicodedata.name(chr(cp)).startswith(word)
            assert checks.script_of(chr(cp)) == script, hex(cp)


@pytest.mark.parametrize(
    ("question", "answer", "mismatch", "cjk"),
    [
        # seed 003's case: a Russian question answered in English
        ("Какой срок гарантии?", "The warranty lasts two years.", True, False),
        ("Какой срок гарантии?", "Гарантия действует 2 года.", False, False),
        # Latin technical words inside a Russian answer do not make it English
        ("Какой порт у Postgres?", "Postgres по умолчанию слушает порт 5432 (TCP).", False, False),
        # seed 003's other case: ideographs in a Cyrillic answer
        ("Какой срок гарантии?", "Гарантия действует 2 года 保修.", False, True),
        ("What is the warranty?", "The warranty 保修 lasts two years.", False, True),
        # an answer entirely in Chinese to an English question: both flags
        ("What is the warranty?", "保修期为两年，可以延长。", True, True),
        # a Chinese question answered in Chinese: no flag
        ("保修期是多久？", "保修期为两年。", False, False),
        # too few letters to say what script the question is in
        ("2+2?", "Four.", False, False),
        ("Какой срок?", "OK", False, False),
        # same script, other language: not detected (documented limitation)
        ("What is the warranty?", "La garantie dure deux ans.", False, False),
        ("", "", False, False),
    ],
)
def test_check_answer_table(question: str, answer: str, mismatch: bool, cjk: bool) -> None:
    c = checks.check_answer(question, answer)
    assert (c.script_mismatch, c.unexpected_cjk) == (mismatch, cjk)
    assert c.flagged == (mismatch or cjk)
    assert len(c.facts()) == mismatch + cjk


def test_facts_are_plain_sentences() -> None:
    c = checks.check_answer("Какой срок гарантии?", "The warranty lasts 两 years.")
    assert c.facts() == [
        "The answer is written in Latin script; the question in Cyrillic.",
        "The answer contains 1 CJK character; the question contains none.",
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_script_counts_agree_with_script_of_character_by_character(text: str) -> None:
    # script_counts takes runs of letters at once; the definition is one character at a time.
    expected = Counter(s for ch in text if (s := checks.script_of(ch)) is not None)
    assert checks.script_counts(text) == expected


@pytest.mark.parametrize("text", ["Postgresом", "abcабв中文", "ａｂｃ", "Ω≈ç√∫", "𠀀𠀁a", "ﾊﾝｶｸ한글"])
def test_script_counts_of_mixed_runs(text: str) -> None:
    assert checks.script_counts(text) == Counter(s for ch in text if (s := checks.script_of(ch)))


def test_dominant_script_needs_enough_letters() -> None:
    assert checks.dominant_script(checks.script_counts("abc")) is None
    assert checks.dominant_script(checks.script_counts("abcd")) == "Latin"
    assert checks.dominant_script(checks.script_counts("ab вгд")) == "Cyrillic"


def _record(aid: str, question: str, answer: str) -> dict[str, object]:
    return {
        "id": aid,
        "question": question,
        "answer": answer,
        "chunks": [{"id": "1", "text": "x"}],
        "claims": [{"text": answer, "verdict": "SUPPORTED"}],
        "judge_model": "m",
        "judge_prompt_version": "v1",
    }


def test_import_stores_checks_for_new_answers(tmp_path: Path) -> None:
    db: Database = store.connect(tmp_path / "c.db")
    recs = [
        _record("ru-en", "Какой срок гарантии?", "The warranty lasts two years."),
        _record("ru-ru", "Какой срок гарантии?", "Гарантия действует два года."),
        _record("cjk", "Какой срок гарантии?", "Гарантия действует 两 года."),
    ]
    importing.import_records(db, enumerate(recs, 1), source="<t>")
    assert check_store.flagged_answers(db) == {"ru-en", "cjk"}
    assert check_store.checked_answers(db) == {"ru-en", "ru-ru", "cjk"}
    got = check_store.answer_check(db, "ru-en")
    assert got is not None and (got.question_script, got.answer_script) == ("Cyrillic", "Latin")
    assert importing.answer_facts(db, "ru-en") == [
        "The answer is written in Latin script; the question in Cyrillic."
    ]
    assert importing.answer_facts(db, "ru-ru") == [] and importing.answer_facts(db, "unknown") == []
    cjk = check_store.answer_check(db, "cjk")
    assert cjk is not None and cjk.unexpected_cjk and cjk.cjk_chars == 1 and not cjk.script_mismatch


def test_dry_run_writes_neither_answers_nor_checks(tmp_path: Path) -> None:
    db: Database = store.connect(tmp_path / "c.db")
    rep = importing.import_records(
        db, enumerate([_record("a", "Вопрос какой?", "Answer here.")], 1), source="<t>", dry_run=True
    )
    assert rep.answers_new == 1 and rep.claims_new == 1
    assert db.execute("SELECT count(*) FROM answers").fetchone()[0] == 0
    assert check_store.checked_answers(db) == set()
    # the same import for real then writes both
    importing.import_records(db, enumerate([_record("a", "Вопрос какой?", "Answer here.")], 1), source="<t>")
    assert check_store.flagged_answers(db) == {"a"}


def test_backfill_checks_answers_imported_before_checks(tmp_path: Path) -> None:
    db: Database = store.connect(tmp_path / "c.db")
    importing.import_records(db, enumerate([_record("a", "Вопрос какой?", "Answer here.")], 1), source="<t>")
    with store.write(db):
        db.execute("DELETE FROM answer_checks")
    assert importing.backfill_checks(db) == 1
    assert importing.backfill_checks(db) == 0
    assert check_store.flagged_answers(db) == {"a"}


# ---------------------------------------------------------------- the dashboard slice


def test_check_slices_match_a_loop_over_claims() -> None:
    import numpy as np

    from calibration import agreement
    from calibration.dashboard import check_slices

    rng = np.random.default_rng(3)
    answer_ids = [f"a{i}" for i in range(40)]
    cluster = rng.integers(0, 40, size=300)
    human = rng.integers(0, 3, size=300)
    judge = np.where(rng.random(300) < 0.7, human, rng.integers(0, 3, size=300))
    flagged = {f"a{i}" for i in range(0, 30, 4)}  # a flag is a stored check: flagged ones are checked
    checked = {f"a{i}" for i in range(30)}
    rows = {r.group: r for r in check_slices(human, judge, cluster, answer_ids, flagged, checked)}
    sup = agreement.label_index("SUPPORTED")
    for name, member in (
        ("flagged", lambda a: a in flagged),
        ("not flagged", lambda a: a not in flagged and a in checked),
        ("not checked", lambda a: a not in checked),
    ):
        idx = [i for i in range(300) if member(answer_ids[cluster[i]])]
        row = rows[name]
        assert row.n_claims == len(idx)
        assert row.n_answers == len({cluster[i] for i in idx})
        assert row.agreement == pytest.approx(sum(human[i] == judge[i] for i in idx) / len(idx))
        assert row.judge_grounding == pytest.approx(sum(judge[i] == sup for i in idx) / len(idx))
        assert row.human_grounding == pytest.approx(sum(human[i] == sup for i in idx) / len(idx))
        assert row.ci_low is not None and row.ci_high is not None
        assert row.ci_low <= row.agreement <= row.ci_high


def test_answer_check_slices_from_the_store(tmp_path: Path) -> None:
    from calibration import dashboard

    db: Database = store.connect(tmp_path / "c.db")
    recs = [
        _record("ru-en", "Какой срок гарантии?", "The warranty lasts two years."),
        _record("ru-ru", "Какой срок гарантии?", "Гарантия действует два года."),
    ]
    importing.import_records(db, enumerate(recs, 1), source="<t>")
    for aid, verdict in (("ru-en", "CONTRADICTED"), ("ru-ru", "SUPPORTED")):
        store.record_label(
            db, claim=store.claim_pk(db, aid, "c1"), reviewer="r", kind="blind", verdict=verdict
        )
    rows = {r.group: r for r in dashboard.answer_check_slices(db, run="m@v1")}
    assert set(rows) == {"flagged", "not flagged"}
    assert (rows["flagged"].agreement, rows["flagged"].judge_grounding, rows["flagged"].human_grounding) == (
        0.0,
        1.0,
        0.0,
    )
    assert (rows["not flagged"].agreement, rows["not flagged"].human_grounding) == (1.0, 1.0)
    assert dashboard.check_slice_rows(list(rows.values()))[0]["answers"] == "flagged"
