"""Text safety rules: name keys, mixed scripts, visible invisibles, import refusals, CSV cells."""

from __future__ import annotations

import re
import unicodedata

import idna.idnadata
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.errors import InputError
from calibration.text import (
    BIDI_CONTROLS,
    BIDI_EXPLICIT,
    _prototypes,
    _script_key,
    check_name,
    check_text,
    confusable_with,
    id_problem,
    json_text_problem,
    neutralise_body,
    neutralise_cell,
    normalise_name,
    storable_problem,
    text_problem,
    uts39_skeleton,
    visible,
)

ZWSP, ZWJ, ZWNJ, BOM, SHY, WJ = "\u200b", "\u200d", "\u200c", "\ufeff", "\u00ad", "\u2060"
RLO, LRI, PDI, LRM, RLM, ALM = "\u202e", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c"
CYR_A = "\u0430"  # CYRILLIC SMALL LETTER A, looks like Latin "a"
ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"

# Every character, lone surrogates included (hypothesis leaves them out by default).
any_char = st.characters(codec=None, exclude_categories=())
any_text = st.text(any_char, max_size=40)


def unvisible(shown: str) -> str:
    """Inverse of `visible`, written from its contract: every <U+XXXX> is one character."""
    return re.sub(r"<U\+([0-9A-F]{4,6})>", lambda m: chr(int(m.group(1), 16)), shown)


# ---------------------------------------------------------------- normalise_name


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ANNA", "anna"),
        ("anna" + ZWSP, "anna"),
        (ZWSP + "an" + ZWJ + "na" + BOM, "anna"),
        ("an" + SHY + "na", "anna"),
        ("anna" + RLO, "anna"),
        ("anna" + LRM + RLM + ALM + LRI + PDI, "anna"),
        ("anna\ufe0f", "anna"),  # variation selector 16
        ("anna\U000e0041", "anna"),  # tag character
        ("Vera", "vera"),
        ("  Anna   Reviewer \t", "anna reviewer"),
        ("Anna\u00a0Reviewer", "anna reviewer"),  # no-break space
        ("Anna\u3000Reviewer", "anna reviewer"),  # ideographic space
        ("Anna\u2800Reviewer", "anna reviewer"),  # braille blank
        ("ａｎｎａ", "anna"),  # full-width (NFKC)
        ("\U0001d41a\U0001d427\U0001d427\U0001d41a", "anna"),  # mathematical bold (NFKC)
        ("Straße", "strasse"),  # full case folding
        ("ÉLODIE", "élodie"),
        ("E\u0301lodie", "élodie"),  # decomposed accent composes (NFKC)
        ("e" + ZWSP + "\u0301", "é"),  # ...even with an invisible in between
        ("Вера", "вера"),
        ("\u3164", ""),  # Hangul filler alone is blank
    ],
)
def test_names_that_share_one_key(a: str, b: str) -> None:
    assert normalise_name(a) == normalise_name(b) == b


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (CYR_A + "nna", "anna"),  # a look-alike is a different key; check_name refuses it
        ("Вера", "vera"),
        ("anna", "annа"),
        ("ann a", "anna"),
    ],
)
def test_names_that_are_different_keys(a: str, b: str) -> None:
    assert normalise_name(a) != normalise_name(b)


@pytest.mark.parametrize("raw", ["Anna Reviewer", " anna\treviewer\n", "A  B", "x\x0b\x0cy", "\x1c a \x1f"])
def test_ascii_names_keep_the_former_rule_then_casefold(raw: str) -> None:
    # The rule normalise_name replaces: whitespace runs collapsed, ends stripped.
    assert normalise_name(raw) == re.sub(r"\s+", " ", raw).strip().casefold()


@given(st.text(st.characters(max_codepoint=127)))
def test_ascii_names_keep_the_former_rule_everywhere(raw: str) -> None:
    assert normalise_name(raw) == re.sub(r"\s+", " ", raw).strip().casefold()


@settings(max_examples=300)
@given(any_text)
def test_normalise_name_is_idempotent(raw: str) -> None:
    key = normalise_name(raw)
    assert normalise_name(key) == key


def test_normalise_name_is_idempotent_for_every_character_nfkc_or_casefold_changes() -> None:
    changed = [
        chr(cp)
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF
        and (unicodedata.normalize("NFKC", chr(cp)) != chr(cp) or chr(cp).casefold() != chr(cp))
    ]
    assert len(changed) > 5000  # the compatibility and case-folding repertoire, not an empty loop
    for ch in changed:
        key = normalise_name("a" + ch + "b")
        assert normalise_name(key) == key, f"U+{ord(ch):04X}"


@given(any_text)
def test_normalise_name_leaves_no_invisible_or_irregular_space(raw: str) -> None:
    key = normalise_name(raw)
    assert key == key.strip()
    assert "  " not in key
    assert not any(unicodedata.category(c) == "Cf" for c in key)
    assert not any(c.isspace() and c != " " for c in key)


# ---------------------------------------------------------------- check_name


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("Anna", "Anna"),
        ("  Anna   Reviewer ", "Anna Reviewer"),
        ("Anna" + ZWSP, "Anna"),
        ("Вера", "Вера"),  # wholly Cyrillic
        ("Ελένη", "Ελένη"),  # wholly Greek
        ("Anna Вера", "Anna Вера"),  # one script per word
        ("Jean-Pierre O’Brien", "Jean-Pierre O’Brien"),  # Common punctuation joins nothing
        ("Мар\u02bcяна", "Мар\u02bcяна"),  # Ukrainian apostrophe (Common) inside Cyrillic
        ("Anna2", "Anna2"),
        ("山田はな", "山田はな"),  # Han + Hiragana = Japanese (UTS #39 Jpan)
        ("ヤマダ・ハナ", "ヤマダ・ハナ"),  # Katakana with the middle dot
        ("らーめん", "らーめん"),  # prolonged sound mark, shared by both kana
        ("김민준", "김민준"),
        ("金민준", "金민준"),  # Han + Hangul = Korean (Kore)
        ("Anna山田", "Anna山田"),  # Latin + Han: "Highly Restrictive" allows it
        ("محمد علي", "محمد علي"),
        ("דוד", "דוד"),
        ("देवनागरी", "देवनागरी"),  # vowel signs are Devanagari marks
        ("ｖｅｒａ", "vera"),  # full-width folded by NFKC
        ("E\u0301lodie", "Élodie"),
        ("Anna\tReviewer", "Anna Reviewer"),  # tab is whitespace, not a refused control
    ],
)
def test_names_accepted(raw: str, shown: str) -> None:
    assert check_name(raw) == shown


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (ZWSP + BOM + RLO, "empty"),
        ("\u3164\u2800", "empty"),
        (CYR_A + "nna", "mixes Cyrillic and Latin"),
        ("Anna Vеra", "mixes Latin and Cyrillic"),  # Cyrillic е in the second word
        ("Αnna", "mixes Greek and Latin"),  # Greek capital alpha
        ("pаypаl", "mixes Latin and Cyrillic"),
        ("Вeра", "mixes Cyrillic and Latin"),
        ("김はな", "mixes Hangul and Hiragana"),  # no writing system has both
        ("Anna\x00", "control character U+0000"),
        ("An\x1bna", "control character U+001B"),
        ("Anna\x85", "control character U+0085"),
        ("Anna\x1f", "control character U+001F"),
        ("Anna\ud800", "lone surrogate U+D800"),
        ("Anna\ue000", "private-use character U+E000"),
        ("Anna\U0010fffd", "private-use"),
    ],
)
def test_names_refused(raw: str, reason: str) -> None:
    with pytest.raises(InputError, match=re.escape(reason)):
        check_name(raw)


def test_a_refusal_is_one_sentence_without_raw_invisibles() -> None:
    with pytest.raises(InputError) as err:
        check_name("An\x1bna")
    (message,) = err.value.lines()
    assert "\x1b" not in message and message.endswith(".")


@settings(max_examples=300)
@given(any_text)
def test_check_name_returns_the_same_reviewer_as_normalise_name(raw: str) -> None:
    try:
        shown = check_name(raw)
    except InputError:
        return
    assert shown and normalise_name(shown) == normalise_name(raw)
    assert check_name(shown) == shown
    if "<U+" not in shown:
        assert visible(shown) == shown  # an accepted name has nothing left to show


# ---------------------------------------------------------------- scripts


def _idna_members(script: str) -> set[int]:
    # idna ships Scripts.txt ranges for the five scripts its contextual rules need, encoded
    # as start << 32 | end (end exclusive).
    out: set[int] = set()
    for packed in idna.idnadata.scripts[script]:
        out.update(range(packed >> 32, packed & 0xFFFFFFFF))
    return out


@pytest.fixture(scope="module")
def script_of_every_character() -> dict[int, str | None]:
    """The script key of every letter, mark and digit that NFKC leaves as it is."""
    out: dict[int, str | None] = {}
    for cp in range(0x110000):
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if (cat[0] in "LM" or cat in ("Nd", "Nl")) and unicodedata.normalize("NFKC", ch) == ch:
            out[cp] = _script_key(ch)
    return out


# Script_Extensions, not Script: U+3006 is Common used only with Han; the Greek musical marks
# are Greek in Scripts.txt but combining marks for this rule.
_KNOWN_DIFFERENCES = {0x3006, 0x1D242, 0x1D243, 0x1D244}


@pytest.mark.parametrize("script", ["Greek", "Han", "Hebrew", "Hiragana", "Katakana"])
def test_script_from_names_matches_scripts_txt(
    script: str, script_of_every_character: dict[int, str | None]
) -> None:
    key = script.upper()
    mine = {cp for cp, k in script_of_every_character.items() if k == key}
    expected = {cp for cp in _idna_members(script) if cp in script_of_every_character}
    assert len(expected) > 50  # not an empty comparison
    assert mine ^ expected <= _KNOWN_DIFFERENCES


@pytest.mark.parametrize(
    ("lo", "hi", "script"),
    [
        (0x0041, 0x005A, "LATIN"),
        (0x0061, 0x007A, "LATIN"),
        (0x00C0, 0x024F, "LATIN"),
        (0x0400, 0x04FF, "CYRILLIC"),
        (0x0531, 0x0556, "ARMENIAN"),
        (0x0620, 0x064A, "ARABIC"),
        (0x0915, 0x0939, "DEVANAGARI"),
        (0x0E01, 0x0E30, "THAI"),
        (0x10D0, 0x10FA, "GEORGIAN"),
        (0xAC00, 0xD7A3, "HANGUL"),
        (0x13A0, 0x13F5, "CHEROKEE"),
    ],
)
def test_script_of_letters_in_single_script_blocks(lo: int, hi: int, script: str) -> None:
    letters = [chr(cp) for cp in range(lo, hi + 1) if unicodedata.category(chr(cp))[0] == "L"]
    assert letters
    assert {_script_key(ch) for ch in letters} == {script}


@pytest.mark.parametrize("ch", [" ", "-", "'", "’", "·", "0", "9", "\u0301", "\u02bc", "_", "."])
def test_common_and_inherited_characters_have_no_script(ch: str) -> None:
    assert _script_key(ch) is None


# ---------------------------------------------------------------- confusable_with


@pytest.mark.parametrize(
    ("name", "existing", "found"),
    [
        ("Вера", ["Bepa"], "Bepa"),  # wholly Cyrillic, looks like Latin "Bepa"
        ("Рое", ["Poe"], "Poe"),
        ("lvan", ["Ivan"], "Ivan"),  # small L vs capital I
        ("Kirn", ["Kim"], "Kim"),  # rn vs m
        ("Ο1ga", ["Olga"], "Olga"),  # Greek omicron and digit one
        ("vera", ["Vera", "Bepa"], None),  # same key: the same reviewer, not a confusable
        ("Anna", ["Bob", "Вера"], None),
        ("Вера", [], None),
    ],
)
def test_confusable_with(name: str, existing: list[str], found: str | None) -> None:
    assert confusable_with(name, existing) == found


@pytest.mark.parametrize(
    ("text", "skeleton"),
    [
        ("ᎢᎪᎷᎪᎡᎪ", "TAMARA"),  # Cherokee, confusables.txt: 13A2 -> 0054 ...
        ("ТАМАРА", "TAMAPA"),  # Cyrillic ER looks like P, not R
        ("ѕсоре", "scope"),  # Cyrillic small letters
        ("Kim", "Kirn"),  # m -> rn
        ("I1l", "lll"),
        ("é", "e\u0301"),  # NFD
    ],
)
def test_uts39_skeleton_maps_by_confusables_txt(text: str, skeleton: str) -> None:
    assert uts39_skeleton(text) == skeleton


def test_the_confusables_table_is_whole_and_its_prototypes_final() -> None:
    # UTS #39 §4: a prototype is never itself mapped further, so one pass gives the skeleton.
    table = _prototypes()
    assert len(table) == 6311  # the data lines of confusables.txt 13.0.0
    assert not [f"U+{cp:04X}" for cp, proto in table.items() if any(ord(c) in table for c in proto)]


# ---------------------------------------------------------------- visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("k1", "k1"),
        ("k1" + RLO + "gpj.exe", "k1<U+202E>gpj.exe"),
        ("a" + LRM + RLM + ALM, "a<U+200E><U+200F><U+061C>"),
        (
            "a\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069",
            "a<U+202A><U+202B><U+202C><U+202D><U+2066><U+2067><U+2068><U+2069>",
        ),
        ("k" + ZWSP + "1", "k<U+200B>1"),
        (BOM + "k1", "<U+FEFF>k1"),
        ("an" + SHY + "na", "an<U+00AD>na"),
        ("a\x00b", "a<U+0000>b"),
        ("a\tb\nc", "a<U+0009>b<U+000A>c"),
        ("a\x85b\x9bc", "a<U+0085>b<U+009B>c"),  # C1 controls
        ("a\x7fb", "a<U+007F>b"),
        ("a\u00a0b", "a<U+00A0>b"),  # a no-break space is not the space it looks like
        ("a\u2028b", "a<U+2028>b"),
        ("a\ud800b", "a<U+D800>b"),
        ("a\ufe0fb", "a<U+FE0F>b"),
        ("\u3164", "<U+3164>"),
        ("x\U000e0041", "x<U+E0041>"),
        ("<U+202E>", "<U+003C>U+202E>"),  # a literal marker cannot pass for a real one
        ("a<b", "a<b"),
        ("مرحبا", "مرحبا"),
        ("Вера", "Вера"),
    ],
)
def test_visible(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_visible_keeps_lines_when_asked() -> None:
    assert visible("a\tb\nc" + RLO, keep_lines=True) == "a\tb\nc<U+202E>"


@settings(max_examples=300)
@given(any_text)
def test_visible_output_is_printable_and_reversible(raw: str) -> None:
    shown = visible(raw)
    assert not BIDI_CONTROLS & set(shown)
    assert shown.isprintable()
    # An exact inverse exists, so two different texts are never shown alike.
    assert unvisible(shown) == raw


@given(st.text(st.sampled_from(["<", "U", "+", "2", "E", "0", "3", "C", ">", RLO, "a"]), max_size=20))
def test_visible_is_one_to_one_on_marker_like_text(raw: str) -> None:
    assert unvisible(visible(raw)) == raw


# ---------------------------------------------------------------- neutralise_body


@pytest.mark.parametrize(
    "body",
    [
        "مرحبا بالعالم، هذه إجابة.",  # Arabic
        "שלום עולם, זו תשובה.",  # Hebrew
        "The answer is 42.\n\tIndented line.",
        "سعر: 100" + ALM + "-200 " + RLM + "ريال",  # implicit marks in ordinary RTL text
        "می" + ZWNJ + "خواهم",  # Persian ZWNJ
        "👩" + ZWJ + "💻 and ❤\ufe0f",  # emoji ZWJ sequence, variation selector
        "flag " + ENGLAND,  # emoji tag sequence
        "co" + SHY + "operate " + WJ,
        "",
    ],
)
def test_ordinary_body_text_is_unchanged(body: str) -> None:
    assert neutralise_body(body) == body


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("Pay " + RLO + "0001$", "Pay <U+202E>0001$"),
        ("if " + LRI + "x" + PDI, "if <U+2066>x<U+2069>"),
        ("a\x00b\x1bc\x7fd\x9be", "a<U+0000>b<U+001B>c<U+007F>d<U+009B>e"),
        ("line1\r\nline2\rline3", "line1\nline2\nline3"),
        ("hidden\U000e0049\U000e0047", "hidden<U+E0049><U+E0047>"),  # tag-encoded "IG"
        ("x\ufff9note\ufffbend", "x<U+FFF9>note<U+FFFB>end"),
        ("digits \u206e123", "digits <U+206E>123"),
        ("bad \ud800", "bad <U+D800>"),
        ("\U000e0067" + ENGLAND, "<U+E0067>" + ENGLAND),  # a tag outside the sequence is shown
    ],
)
def test_body_text_controls_are_shown(body: str, shown: str) -> None:
    assert neutralise_body(body) == shown


@settings(max_examples=300)
@given(any_text)
def test_neutralise_body_leaves_nothing_that_reorders(body: str) -> None:
    out = neutralise_body(body)
    assert not BIDI_EXPLICIT & set(out)
    assert all(c in "\t\n" or unicodedata.category(c) not in ("Cc", "Cs") for c in out)
    if "<U+" not in body:  # only the shown characters change; everything else is kept in order
        assert unvisible(out) == body.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------- id_problem / text_problem


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\x00b", "NUL character (U+0000) at character 2"),
        ("k1" + RLO, "bidirectional control U+202E RIGHT-TO-LEFT OVERRIDE at character 3"),
        (LRI + "k", "bidirectional control U+2066"),
        ("k" + RLM, "bidirectional control U+200F"),
        ("k" + ALM, "bidirectional control U+061C"),
        ("k\t1", "control character U+0009 TAB at character 2"),
        ("k\n1", "control character U+000A"),
        ("k\x1b", "control character U+001B ESCAPE"),
        ("k\x7f", "control character U+007F"),
        ("k\x85", "control character U+0085"),
        ("k\ud800", "lone surrogate U+D800 at character 2"),
    ],
)
def test_ids_refused(value: str, reason: str) -> None:
    problem = id_problem(value)
    assert problem is not None and reason in problem


@pytest.mark.parametrize("value", ["k1", "answer-0001", "Вера/7", "مرحبا", "doc.md#§2", "a b", "", "k\u00e9"])
def test_ids_accepted(value: str) -> None:
    assert id_problem(value) is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\x00b", "NUL character (U+0000)"),
        ("a\x1bb", "control character U+001B"),
        ("a\x0bb", "control character U+000B"),
        ("a\x0cb", "control character U+000C"),
        ("x\ud800", "lone surrogate U+D800"),
        ("x\udfff", "lone surrogate U+DFFF"),
    ],
)
def test_body_text_refused(value: str, reason: str) -> None:
    problem = text_problem(value)
    assert problem is not None and reason in problem


@pytest.mark.parametrize(
    "value",
    [
        "line\nline",
        "a\tb",
        "crlf\r\n",
        "مرحبا" + RLM,
        "x" + RLO + "y",
        "\x7f\x85",
        "",
    ],
)
def test_body_text_accepted(value: str) -> None:
    assert text_problem(value) is None


@given(any_text)
def test_id_problem_matches_the_character_classes(value: str) -> None:
    bad = [c for c in value if unicodedata.category(c) in ("Cc", "Cs") or c in BIDI_CONTROLS]
    assert (id_problem(value) is None) == (not bad)


@given(any_text)
def test_text_problem_matches_the_character_classes(value: str) -> None:
    bad = [c for c in value if (ord(c) < 0x20 and c not in "\t\n\r") or unicodedata.category(c) == "Cs"]
    assert (text_problem(value) is None) == (not bad)


# ---------------------------------------------------------------- neutralise_cell


@pytest.mark.parametrize("prefix", ["=", "+", "-", "@", "\t", "\r"])
def test_each_dangerous_prefix_is_neutralised_as_before(prefix: str) -> None:
    assert neutralise_cell(f"{prefix}cmd|' /C calc'!A0") == f"'{prefix}cmd|' /C calc'!A0"


@pytest.mark.parametrize(
    "cell",
    [
        " =1+1",
        "  +1",
        "\u00a0=1",
        "\ufeff=1",
        "\u200b=1",
        "\u3000=1",
        "\u2003@SUM(A1)",
        "\n=1",
        "\x0b=1",
        "\u202e=1",
        "＝1",
        "＋1",
        "－1",
        "＠SUM(A1)",
        "﹦1",
        " ＝1",
        "\u00a0\ufeff＝1",
        "\u22121",
        "\x00=1",
        "\x00",
    ],
)
def test_formula_behind_blanks_or_in_other_forms_is_neutralised(cell: str) -> None:
    assert neutralise_cell(cell) == "'" + cell


@pytest.mark.parametrize(
    "cell",
    [
        "SUPPORTED",
        "",
        "Кто согласует?",
        "'already",
        "' =1",
        " x",
        "\u00a0",
        "a=1",
        "1+1",
        "(=1)",
        "مرحبا",
        "x\t",
        "e-mail",
    ],
)
def test_safe_cells_are_left_alone(cell: str) -> None:
    assert neutralise_cell(cell) == cell


@given(any_text)
def test_neutralise_cell_extends_the_former_rule(cell: str) -> None:
    out = neutralise_cell(cell)
    assert out in (cell, "'" + cell)
    if cell.startswith(("=", "+", "-", "@", "\t", "\r")):  # the former rule
        assert out == "'" + cell
    if cell[:1].isalnum() or cell[:1] == "'":
        assert out == cell


def test_storable_problem_refuses_only_what_no_engine_stores() -> None:
    assert storable_problem("tab\tline\nescape\x1b bidi\u202e") is None
    assert storable_problem("a\x00b") == "contains a NUL character (U+0000) at character 2"
    assert "lone surrogate U+D800" in (storable_problem("x\ud800") or "")
    # The stricter rules refuse it too.
    assert text_problem("a\x00b") and id_problem("a\x00b")


def test_json_text_problem_names_the_first_place_of_a_nul() -> None:
    assert json_text_problem({"a": [1, None, {"b": "fine"}], "c": 2.5}) is None
    assert json_text_problem({"a": [1, {"note": "x\x00"}]}) == (
        "a.1.note: contains a NUL character (U+0000) at character 2"
    )
    assert (
        json_text_problem({"k\x00": 1})
        == "k<U+0000>: the key contains a NUL character (U+0000) at character 2"
    )
    assert json_text_problem("\x00") == "value: contains a NUL character (U+0000) at character 1"


def test_check_text_refuses_what_body_text_may_not_hold_naming_the_field() -> None:
    assert check_text("line\n\ttab \u202e kept", "note") == "line\n\ttab \u202e kept"
    with pytest.raises(InputError, match=r"^reason: contains a NUL character \(U\+0000\) at character 2; "):
        check_text("a\x00", "reason")
