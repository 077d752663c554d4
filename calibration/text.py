"""Text safety: one key per reviewer name, visible invisible characters, refusal reasons for imports.

Pure functions over ``str``, standard library only (``re``, ``unicodedata``; the Unicode
version is the one of the running Python, ``unicodedata.unidata_version``), and one data file:
Unicode's confusables.txt.

Rules and their sources:

* **Names** (:func:`normalise_name`, :func:`check_name`, :func:`confusable_with`): the
  comparison key is NFKC (Unicode Standard Annex #15, *Unicode Normalization Forms*) with full
  case folding, the way the Unicode Standard §3.13 (D145, "identifier caseless match") builds
  a caseless key; invisible characters (the ``Default_Ignorable_Code_Point`` property of
  DerivedCoreProperties.txt, and every other ``Cf`` format character) are dropped first.
  A word that mixes scripts (a Cyrillic ``а`` among Latin letters) is refused:
  Unicode Technical Standard #39, *Unicode Security Mechanisms*, §5.1 (resolved script set,
  with the augmented sets Jpan / Kore / Hanb) and §5.2 (restriction level "Highly
  Restrictive").  Whole-script lookalikes (a wholly Cyrillic "Рое" beside a Latin "Poe", a
  Cherokee "ᎢᎪᎷᎪᎡᎪ" beside "TAMARA") pass that test and are caught by
  :func:`confusable_with`: UTS #39 §4 confusable detection (skeletons) over Unicode's
  confusables.txt (shipped in ``calibration/unicode/``, version 13.0.0), made caseless, plus
  one name romanised from Cyrillic or Greek ("Тамара" beside "Tamara").
* **Shown text** (:func:`visible`, :func:`neutralise_body`): the bidirectional formatting
  characters of Unicode Standard Annex #9, *Unicode Bidirectional Algorithm*, §2 (embeddings
  and overrides U+202A–202E, isolates U+2066–2069, marks U+200E, U+200F, U+061C) reorder
  whatever follows them on screen ("Trojan Source", CVE-2021-42574).  In ids and names every
  invisible or control character is shown as ``<U+XXXX>``; in body text the explicit
  controls and the characters that can hide text are.
* **Guidelines** (:func:`inert_markdown`): a lead's markdown keeps its text formatting and
  loses every way to load something (images, links, raw HTML, LaTeX): CommonMark §2.4 escapes.
* **Imports** (:func:`id_problem`, :func:`text_problem`): the reason a value is refused, for
  the importer to prefix with file, line and field.
* **CSV** (:func:`neutralise_cell`): OWASP "CSV Injection" (a cell that starts with ``=``,
  ``+``, ``-``, ``@``, tab or carriage return is evaluated by spreadsheets; prefix a single
  quote), extended to the blank and look-alike prefixes spreadsheets skip or fold.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from importlib import resources
from typing import Final

from .errors import InputError

# --------------------------------------------------------------------------------------------
# Character classes
# --------------------------------------------------------------------------------------------

# UAX #9 §2.1-2.4: explicit embeddings/overrides (202A-202E) and isolates (2066-2069).
BIDI_EXPLICIT: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# UAX #9 §2.6: implicit marks (LRM, RLM, ALM).
BIDI_MARKS: Final = frozenset("\u200e\u200f\u061c")
BIDI_CONTROLS: Final = BIDI_EXPLICIT | BIDI_MARKS

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt), as code point ranges.  Renderers
# show none of these, which is what makes "anna" + U+200B look like "anna".
_DEFAULT_IGNORABLE: Final[tuple[tuple[int, int], ...]] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_IGNORABLE_CLASS: Final = "".join(
    re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _DEFAULT_IGNORABLE
)
# Invisible in a name: every default ignorable, and every other format character (Cf), e.g. the
# Arabic number signs U+0600-0605 and interlinear annotation marks, which a name never needs.
_IGNORABLE_RE: Final = re.compile(f"[{_IGNORABLE_CLASS}]")

# U+2800 BRAILLE PATTERN BLANK renders as a blank and is a known way to type an "empty" name.
_BLANKS: Final = "\u2800"

# C0 and C1 controls; tab, LF, CR are the whitespace body text may hold.
_C0: Final = "\x00-\x1f"
_C1: Final = "\x7f-\x9f"
_SURROGATES: Final = "\ud800-\udfff"
_TEXT_BAD_RE: Final = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_SURROGATES}]")
_UNSTORABLE_RE: Final = re.compile(f"[\x00{_SURROGATES}]")
_ID_BAD_RE: Final = re.compile(f"[{_C0}{_C1}{_SURROGATES}{''.join(sorted(BIDI_CONTROLS))}]")

# Body text: shown as <U+XXXX>.  Explicit bidi controls reorder text; C0/C1 controls other
# than tab/LF/CR (ESC starts terminal escape sequences in CLI output); lone surrogates cannot
# be encoded; U+206A-206F change symmetric swapping, Arabic shaping and digit shapes;
# U+FFF9-FFFB delimit annotation text a renderer may hide; tag characters U+E0000-E007F and the
# unassigned ignorables up to U+E0FFF are invisible and can carry a whole hidden sentence
# ("ASCII smuggling" aimed at the judge model).
_BODY_SHOWN_RE: Final = re.compile(
    "[\u202a-\u202e\u2066-\u2069\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff"
    "\u206a-\u206f\ufff9-\ufffb\U000e0000-\U000e0fff]"
)
# An emoji tag sequence (subdivision flags such as England's): U+1F3F4, tag letters, CANCEL TAG.
_EMOJI_TAG_SEQ_RE: Final = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")

_CONTROL_NAMES: Final = {
    0: "NUL",
    0x09: "TAB",
    0x0A: "LINE FEED",
    0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
}


def _u(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _describe(ch: str) -> str:
    """'U+202E RIGHT-TO-LEFT OVERRIDE': code point and, where Unicode gives one, its name."""
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(ord(ch), "")
    return f"{_u(ch)} {name}" if name else _u(ch)


def _marker(ch: str) -> str:
    return f"<{_u(ch)}>"


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


def _strip_invisible(text: str) -> str:
    text = _IGNORABLE_RE.sub("", text)
    if text.isprintable():  # no Cf left (a printable string has none): the common case
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _collapse(text: str) -> str:
    # str.split() splits on Unicode whitespace (Zs, line/paragraph separators, tab, LF, ...),
    # the same set as the `\s` of the rule this replaces.
    if _BLANKS in text:
        text = text.replace(_BLANKS, " ")
    return " ".join(text.split())


def _display_form(raw: str) -> str:
    # Ignorables go first, so that "e" + U+200B + U+0301 composes to "é"; NFKC can create
    # Hangul fillers (U+3164 -> U+1160), hence the second pass.
    return _collapse(_strip_invisible(unicodedata.normalize("NFKC", _strip_invisible(raw))))


def display_name(raw: str) -> str:
    """A reviewer name as stored and shown: :func:`normalise_name` without the case folding.

    Invisible characters removed, NFKC, whitespace runs collapsed, ends stripped; refuses
    nothing (:func:`check_name` does), so ``normalise_name(display_name(x)) == normalise_name(x)``.
    """
    return _display_form(raw)


def normalise_name(raw: str) -> str:
    """The one comparison key of a reviewer name.

    Rule: invisible characters removed (``Default_Ignorable_Code_Point`` and every other
    ``Cf`` format character: zero-width space/joiners, soft hyphen, BOM, bidirectional controls,
    variation selectors, Hangul fillers, tags), then NFKC (UAX #15), full case folding, NFKC
    again (case folding can leave a string that is not NFKC; this is the "identifier caseless
    match" key of the Unicode Standard §3.13, D145), invisible characters removed again,
    whitespace runs collapsed to one space and the ends stripped.

    So ``"ANNA"``, ``"anna"``, ``"anna\\u200b"`` and ``"ａｎｎａ"`` (full-width) are one key.
    For plain ASCII this is the former rule (whitespace collapsed, stripped) followed by
    ``str.casefold``.  It refuses nothing (a control character stays in the key):
    :func:`check_name` does.
    """
    folded = unicodedata.normalize("NFKC", _display_form(raw).casefold())
    return _collapse(_strip_invisible(folded))


# UTS #39 §5.1: Han, Hiragana, Katakana, Hangul and Bopomofo are augmented with the writing
# systems they combine into (Jpan = Han+Hiragana+Katakana, Kore = Han+Hangul, Hanb =
# Han+Bopomofo), so a Japanese or Korean name is one "script".
_AUGMENTED: Final[dict[str, frozenset[str]]] = {
    "HAN": frozenset({"HAN", "HANB", "JPAN", "KORE"}),
    "HIRAGANA": frozenset({"HIRAGANA", "JPAN"}),
    "KATAKANA": frozenset({"KATAKANA", "JPAN"}),
    "KANA": frozenset({"HIRAGANA", "KATAKANA", "JPAN"}),  # marks shared by both kana
    "HANGUL": frozenset({"HANGUL", "KORE"}),
    "BOPOMOFO": frozenset({"BOPOMOFO", "HANB"}),
}
# First words of character names that are not the script name.
_NAME_ALIASES: Final = {
    "CJK": "HAN",
    "HANGZHOU": "HAN",
    "VIETNAMESE": "HAN",
    "ARABIC-INDIC": "ARABIC",
    "EXTENDED": "ARABIC",
    "ROMAN": "LATIN",
    "SMALL": "LATIN",
    "TURNED": "LATIN",
    "HENTAIGANA": "HIRAGANA",
    "KATAKANA-HIRAGANA": "KANA",
    "OLD CHINESE": "HAN",
}
# First words naming no script: letters and marks of the Common / Inherited scripts.
_NO_SCRIPT: Final = frozenset(
    {"MODIFIER", "DIGIT", "CARON", "MASU", "COMBINING", "VARIATION", "MUSICAL", "VEDIC", "PHAISTOS"}
)
# First words shared by several scripts: the second word tells them apart.
_TWO_WORD: Final = frozenset({"OLD", "TAI", "LINEAR", "INSCRIPTIONAL", "MEROITIC"})


def _script_key(ch: str) -> str | None:
    """The script of one letter, mark or digit, or None for Common / Inherited.

    Python's ``unicodedata`` has no Script property (UAX #24), so the script is read from
    the character name, whose first word(s) name the script for letters of every script
    ("CYRILLIC SMALL LETTER A", "GREEK SMALL LETTER ALPHA", "CJK UNIFIED IDEOGRAPH-5C71");
    the exceptions are the aliases and Common/Inherited words above, and Tangut ideographs,
    which Python names not at all.  Only letters (L*), marks (M*), decimal digits (Nd) and
    letter numbers (Nl) have a script here; punctuation, symbols and spaces are Common.
    Meant for NFKC text: compatibility forms (mathematical, full-width, circled letters) are
    folded to their base letters before this is asked.
    """
    cat = unicodedata.category(ch)
    if cat[0] not in "LM" and cat not in ("Nd", "Nl"):
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return "TANGUT" if 0x17000 <= ord(ch) <= 0x18D08 else "UNKNOWN"
    words = name.split(" ")
    first = words[0]
    if first == "VERTICAL":  # U+3031-3035 kana repeat marks, U+303B ideographic iteration mark
        return {"KANA": "KANA", "IDEOGRAPHIC": "HAN"}.get(words[1])
    if first == "IDEOGRAPHIC":  # iteration and number marks are Han; the tone marks Inherited
        return None if cat[0] == "M" else "HAN"
    if first in _NO_SCRIPT:
        return None
    if first in _TWO_WORD and len(words) > 1:
        first = f"{first} {words[1]}"
    return _NAME_ALIASES.get(first, first)


def _word_scripts(word: str) -> list[str]:
    """Scripts of the letters of `word`, in order of first appearance."""
    seen: dict[str, None] = {}
    for ch in word:
        key = _script_key(ch)
        if key is not None:
            seen.setdefault(key, None)
    return list(seen)


def _is_single_script(scripts: list[str]) -> bool:
    """UTS #39 §5.2 "Highly Restrictive" for one word.

    The resolved script set (§5.1: the intersection of the augmented script sets of the
    characters) is not empty, or Latin plus characters whose resolved set is Jpan, Kore or Hanb
    (Latin+Han+Hiragana+Katakana, Latin+Han+Hangul, Latin+Han+Bopomofo).
    """
    if len(scripts) <= 1:
        return True
    sets = [_AUGMENTED.get(s, frozenset({s})) for s in scripts if s != "LATIN"]
    resolved = frozenset.intersection(*sets)  # not empty: scripts holds two distinct entries
    if len(sets) == len(scripts):
        return bool(resolved)
    return bool(resolved & {"JPAN", "KORE", "HANB"})


def _refused_character(ch: str) -> str | None:
    cat = unicodedata.category(ch)
    # Tab, LF, VT, FF, CR are whitespace and collapse to a space; the separators U+001C-001F
    # and NEL, which Python also counts as whitespace, are controls in a name.
    if cat == "Cc" and (not ch.isspace() or ch in "\x1c\x1d\x1e\x1f\x85"):
        return f"contains the control character {_describe(ch)}"
    if cat == "Cs":
        return f"contains a lone surrogate {_u(ch)}, which is not a character"
    if cat == "Co":
        return f"contains the private-use character {_u(ch)}, which has no agreed look"
    if cat == "Cn" and not _IGNORABLE_RE.match(ch):
        return f"contains {_u(ch)}, which is not a character in Unicode {unicodedata.unidata_version}"
    return None


def check_name(raw: str) -> str:
    """The display form of a reviewer name typed at sign-in or in a form, or InputError.

    The display form is :func:`normalise_name` without the case folding: invisible characters
    removed, NFKC, whitespace collapsed; so ``normalise_name(check_name(x)) ==
    normalise_name(x)``.  Refused, with one sentence saying why:

    * a name that is empty after normalisation (only spaces or invisible characters);
    * a control character (C0/C1, except tab and line breaks, which are whitespace), a lone
      surrogate, a private-use or an unassigned code point;
    * a word mixing scripts (UTS #39 §5.1-5.2, "Highly Restrictive" per word): ``"аnna"`` with
      a Cyrillic ``а`` is refused; ``"Вера"`` (all Cyrillic), ``"山田はな"`` (Japanese) and
      ``"Anna Вера"`` (one script per word) are accepted.
    """
    for ch in raw:
        reason = _refused_character(ch)
        if reason is not None:
            raise InputError(f"The name {visible(raw)!r} {reason}; type the name again without it.")
    name = _display_form(raw)
    if not name:
        raise InputError("The name is empty: type your name (spaces and invisible characters do not count).")
    for word in name.split(" "):
        scripts = _word_scripts(word)
        if not _is_single_script(scripts):
            mixed = " and ".join(s.title() for s in scripts)
            raise InputError(
                f"The name {name!r} mixes {mixed} letters in the word {word!r}; letters from "
                "different alphabets can look the same and make one person two reviewers. "
                "Type each word in one alphabet."
            )
    return name


# Unicode's confusables.txt (UTS #39 §4), shipped in calibration/unicode/ with its licence.
_CONFUSABLES: Final = "unicode/confusables.txt"


@functools.cache
def _prototypes() -> dict[int, str]:
    """confusables.txt as a ``str.translate`` table: each source character to its prototype."""
    data = resources.files("calibration").joinpath(_CONFUSABLES).read_text(encoding="utf-8")
    table: dict[int, str] = {}
    for line in data.splitlines():
        if line and not line.startswith("#"):
            source, _, prototype = line.partition(";")
            table[int(source, 16)] = "".join(chr(int(c, 16)) for c in prototype.split())
    return table


def uts39_skeleton(text: str) -> str:
    """The UTS #39 §4 skeleton: NFD, each character replaced by its prototype from
    confusables.txt, NFD again.  Case-sensitive, as the standard defines it: ``"Ꭲ"`` (Cherokee)
    and ``"Т"`` (Cyrillic) become ``"T"``, ``"m"`` becomes ``"rn"``, ``"I"`` and ``"1"`` become ``"l"``."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).translate(_prototypes()))


def _settled(text: str) -> str:
    # UTS #39 skeleton and case folding in turn until neither changes the text.
    text = uts39_skeleton(text)
    for _ in range(4):  # settles in two rounds for every name tried; the cap keeps it finite
        again = uts39_skeleton(text.casefold())
        if again == text:
            break
        text = again
    return text


@functools.lru_cache(maxsize=4096)
def _skeletons(name: str) -> frozenset[str]:
    """Caseless skeletons: :func:`uts39_skeleton` and case folding in turn until neither changes
    the text, from the name as typed and from it case-folded, so a look-alike of a capital
    matches the small letter ("ᎢᎪᎷᎪᎡᎪ", "ꭲꭺꮇꭺꭱꭺ", "ТАМАРА", "TAMARA" and "tamara" share one).
    Not from capitals too: "LIA" would then meet "ILA" (L folds to l, which I looks like)."""
    shown = _display_form(name)
    return frozenset({_settled(shown), _settled(shown.casefold())})


# One common romanisation of Cyrillic and Greek (close to BGN/PCGN), letter by letter, for
# small letters after case folding: "Тамара" and "Tamara" are one name in two alphabets.
_ROMAN: Final = str.maketrans(
    {
        "а": "a",
        "б": "b",
        "в": "v",
        "г": "g",
        "ґ": "g",
        "д": "d",
        "е": "e",
        "ё": "e",
        "є": "ye",
        "ж": "zh",
        "з": "z",
        "и": "i",
        "і": "i",
        "ї": "yi",
        "й": "y",
        "к": "k",
        "л": "l",
        "м": "m",
        "н": "n",
        "о": "o",
        "п": "p",
        "р": "r",
        "с": "s",
        "т": "t",
        "у": "u",
        "ў": "u",
        "ф": "f",
        "х": "kh",
        "ц": "ts",
        "ч": "ch",
        "ш": "sh",
        "щ": "shch",
        "ъ": "",
        "ы": "y",
        "ь": "",
        "э": "e",
        "ю": "yu",
        "я": "ya",
        "α": "a",
        "β": "v",
        "γ": "g",
        "δ": "d",
        "ε": "e",
        "ζ": "z",
        "η": "i",
        "θ": "th",
        "ι": "i",
        "κ": "k",
        "λ": "l",
        "μ": "m",
        "ν": "n",
        "ξ": "x",
        "ο": "o",
        "π": "p",
        "ρ": "r",
        "σ": "s",
        "ς": "s",
        "τ": "t",
        "υ": "y",
        "φ": "f",
        "χ": "ch",
        "ψ": "ps",
        "ω": "o",
    }
)


@functools.lru_cache(maxsize=4096)
def _romanised(name: str) -> str:
    """The comparison key with Cyrillic and Greek letters romanised (their accents dropped)."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFC", normalise_name(name)):
        if ord(ch) in _ROMAN:  # precomposed letters first: "й" is "y", not "i" with a breve
            out.append(ch.translate(_ROMAN))
            continue
        base = unicodedata.normalize("NFD", ch)[0]
        out.append(base.translate(_ROMAN) if ord(base) in _ROMAN else ch)  # "ά" is "a"
    return "".join(out)


def confusable_with(name: str, existing_names: Iterable[str]) -> str | None:
    """An existing name that can be mistaken for `name` but is a different reviewer, or None.

    Rule: two names with different :func:`normalise_name` keys are confusable when

    * their skeletons are equal (UTS #39 §4, "confusable detection", over the whole of
      Unicode's confusables.txt, made caseless by :func:`_skeletons`): Cherokee
      ``"ᎢᎪᎷᎪᎡᎪ"``, Cyrillic ``"ТАМАРА"``, full-width ``"ＴＡＭＡＲＡ"``, ``"TAMARA"`` with a
      Greek ``Α``, ``"lvan"`` beside ``"Ivan"`` and ``"Kirn"`` beside ``"Kim"`` all look alike;
    * or they are one name in two alphabets: equal once Cyrillic and Greek letters are
      romanised (:data:`_ROMAN`), so ``"Тамара"`` is refused beside ``"Tamara"`` and ``"Вера"``
      beside ``"Vera"`` (a reviewer who typed their name on another keyboard layout would
      otherwise become a second reviewer).

    ``"Ann"`` beside ``"Anna"`` is not confusable.  The first match in `existing_names` order wins.
    """
    key, skeletons, roman = normalise_name(name), _skeletons(name), _romanised(name)
    for other in existing_names:
        if normalise_name(other) != key and (_skeletons(other) & skeletons or _romanised(other) == roman):
            return other
    return None


def loose_key(name: str) -> str:
    """The key under which two reviewer names are near-duplicates: :func:`normalise_name`,
    decomposed (NFKD), with combining marks and everything that is not a letter or a digit
    (punctuation, spaces, symbols) removed. ``"Anna."``, ``"anna"``, ``"A.N.N.A"`` and
    ``"Änna"`` share one; ``"Ann"`` and ``"Anna"`` do not."""
    decomposed = unicodedata.normalize("NFKD", normalise_name(name))
    return "".join(ch for ch in decomposed if ch.isalnum() and not unicodedata.combining(ch))


def near_duplicate_of(name: str, existing_names: Iterable[str]) -> str | None:
    """An existing name that differs from `name` only in punctuation, spacing or accents
    (the same :func:`loose_key`, a different :func:`normalise_name`), or None; the first in
    `existing_names` order wins."""
    key, loose = normalise_name(name), loose_key(name)
    if not loose:
        return None
    for other in existing_names:
        if normalise_name(other) != key and loose_key(other) == loose:
            return other
    return None


def _changes_look(ch: str) -> bool:
    # A compatibility decomposition ("<wide> 0063": full-width letters, ligatures, the long s)
    # or a canonical singleton ("004B": the Kelvin sign) maps the character to another one.
    mapping = unicodedata.decomposition(ch)
    return mapping.startswith("<") or (bool(mapping) and " " not in mapping)


def plain_key(value: str) -> str | None:
    """The comparison key of a value a provider asserts (a group or role name, an e-mail), or
    None when the value is refused.

    Rule: compared after NFC (UAX #15) and full case folding, so ``"Calibration-Leads"`` is
    ``"calibration-leads"``, and nothing else is folded. Refused, because it could pass for a
    value it is not: an empty value; any invisible, format or control character (what
    :func:`visible` would mark: a zero-width space, a bidirectional control); a character
    Unicode maps to another look (a compatibility decomposition: full-width ``"ｃ"``, the
    ligature ``"ﬁ"``, the long ``"ſ"``; or a canonical singleton: the Kelvin sign); a word
    mixing alphabets (:func:`check_name`: a Cyrillic ``"а"`` in ``"calibration"``).
    """
    if not value or visible(value) != value or any(_changes_look(ch) for ch in value):
        return None
    try:
        check_name(value)
    except InputError:
        return None
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", value).casefold())


# --------------------------------------------------------------------------------------------
# Shown text
# --------------------------------------------------------------------------------------------


def _shown_as_marker(ch: str) -> bool:
    # str.isprintable is False exactly for Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than the
    # ASCII space; the rest are the default ignorables that are marks or letters.
    return not ch.isprintable() or bool(_IGNORABLE_RE.match(ch))


def visible(text: str, *, keep_lines: bool = False) -> str:
    """`text` with every character that is invisible or moves other text shown as ``<U+XXXX>``.

    For ids and names on screen and in CLI output.  Shown: bidirectional controls (UAX #9:
    U+202A–202E, U+2066–2069, U+200E, U+200F, U+061C), every other format character (zero-width
    space and joiners, BOM, soft hyphen, tags), C0 and C1 controls, lone surrogates, private-use
    and unassigned code points, every space other than U+0020 (no-break, em, ideographic...),
    line and paragraph separators, and the invisible default ignorables (variation selectors,
    Hangul fillers, combining grapheme joiner).  With ``keep_lines`` tab and line feed stay.

    A literal ``<`` that starts ``<U+`` is itself shown as ``<U+003C>``, so two different ids never
    look the same: the function is one-to-one.
    """
    if text.isprintable() and "<U+" not in text and (text.isascii() or not _IGNORABLE_RE.search(text)):
        return text
    out: list[str] = []
    for i, ch in enumerate(text):
        if keep_lines and ch in "\t\n":
            out.append(ch)
        elif _shown_as_marker(ch) or (ch == "<" and text.startswith("U+", i + 1)):
            out.append(_marker(ch))
        else:
            out.append(ch)
    return "".join(out)


def neutralise_body(text: str) -> str:
    """Body text (answers, chunks, claims) safe to show: nothing in it can reorder or hide text.

    Shown as ``<U+XXXX>`` (not removed: the reviewer must see that the text the judge read holds
    them, and a removed character would silently differ from the stored text):

    * explicit bidirectional controls (UAX #9 §2.1–2.4: U+202A–202E, U+2066–2069), which
      reorder every character up to the end of the paragraph;
    * C0 and C1 controls other than tab, line feed and carriage return, and lone surrogates;
    * U+206A–206F (deprecated shaping and digit-shape controls), U+FFF9–FFFB (interlinear
      annotation, whose text a renderer may hide), and the tag characters U+E0000–E007F with
      the unassigned ignorables up to U+E0FFF (invisible; can carry a hidden sentence), except
      inside an emoji tag sequence (U+1F3F4 ... U+E007F, the flags of England, Scotland, Wales).

    Kept: tabs and line breaks (CR LF and a lone CR become LF), letters of every script
    (Arabic and Hebrew text is unchanged: the bidi algorithm orders it without controls), the
    implicit marks LRM, RLM and ALM (U+200E, U+200F, U+061C: legitimate RTL text uses them to
    place digits and punctuation, and they act only on neighbouring neutral characters), ZWJ
    and ZWNJ (emoji sequences, Persian and Indic spelling), variation selectors, soft hyphens.
    The page should still show each body in its own block, so a paragraph that ends in
    right-to-left text does not pull neighbouring page text along.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not _BODY_SHOWN_RE.search(text):
        return text
    kept = [(m.start(), m.end()) for m in _EMOJI_TAG_SEQ_RE.finditer(text)]

    def shown(m: re.Match[str]) -> str:
        pos = m.start()
        if any(a <= pos < b for a, b in kept):
            return m.group()
        return _marker(m.group())

    return _BODY_SHOWN_RE.sub(shown, text)


# --------------------------------------------------------------------------------------------
# Guidelines markdown
# --------------------------------------------------------------------------------------------

# Backslash-escaped (CommonMark §2.4), each of these is shown as itself: "[" starts links and
# images (inline, reference, definitions) and Streamlit's coloured text, "<" raw HTML and
# autolinks, "$" LaTeX; the backslash too, so that a typed "\[" cannot undo the escape.
_INERT: Final = str.maketrans({"\\": "\\\\", "[": "\\[", "<": "\\<", "$": "\\$"})


def inert_markdown(text: str) -> str:
    r"""A lead's markdown with only text formatting left: nothing in it can load anything.

    Rule: every ``[`` (images ``![..](..)``, links ``[..](..)``, ``[..][ref]``, ``[ref]: url``),
    ``<`` (raw HTML, ``<url>`` autolinks), ``$`` (LaTeX) and ``\`` is backslash-escaped
    (CommonMark §2.4), so it is shown as itself.  Emphasis, strong, headings, lists, quotes,
    tables and code still render, and a bare ``https://...`` is still a link that loads nothing
    until clicked; ``![logo](https://x/y.png)`` is shown as those characters and no image,
    iframe or style is fetched.  Everywhere, code included: escapes are not read inside code,
    so a ``[`` there shows with its backslash, a small price for a rule that has no parsing of
    its own to get wrong (a code span misjudged by a parser here would leave an image live).
    """
    return text.translate(_INERT)


# --------------------------------------------------------------------------------------------
# Import checks
# --------------------------------------------------------------------------------------------


def _reason(ch: str, pos: int) -> str:
    at = f"at character {pos + 1}"
    if ch == "\x00":
        return f"contains a NUL character (U+0000) {at}"
    if "\ud800" <= ch <= "\udfff":
        return (
            f"contains a lone surrogate {_u(ch)} {at}, which is not valid Unicode text "
            "(usually half of a \\uD83D\\uDE00-style pair in JSON)"
        )
    if ch in BIDI_CONTROLS:
        return (
            f"contains the bidirectional control {_describe(ch)} {at}, "
            "which changes the order in which the text is shown"
        )
    return f"contains the control character {_describe(ch)} {at}"


def id_problem(value: str) -> str | None:
    """Why an imported id (answer, claim, chunk, judge run, cycle) is refused, or None.

    Refused: NUL and every other C0 and C1 control, tab and line feed included (SQLite's JSON
    functions cut a string at NUL; a line break splits a line of output), lone surrogates
    (cannot be encoded as UTF-8), and bidirectional controls (UAX #9: U+202A–202E, U+2066–2069,
    U+200E, U+200F, U+061C), which make one id look like another.  The reason names the first
    offending character and its position, e.g. ``"contains a NUL character (U+0000) at
    character 3"``; the importer prefixes file, line and field.
    """
    m = _ID_BAD_RE.search(value)
    return None if m is None else _reason(m.group(), m.start())


def text_problem(value: str) -> str | None:
    """Why imported body text (question, answer, chunk, claim) is refused, or None.

    Refused: NUL, C0 controls other than tab, line feed and carriage return, and lone
    surrogates.  Bidirectional controls and invisible characters are allowed in body text;
    :func:`neutralise_body` shows them when the text is displayed.
    """
    m = _TEXT_BAD_RE.search(value)
    return None if m is None else _reason(m.group(), m.start())


def storable_problem(value: str) -> str | None:
    """Why text that neither engine stores is refused, or None: a NUL (PostgreSQL's text holds
    none; SQLite would keep it, and copying the database into PostgreSQL would fail) or a lone
    surrogate (not UTF-8).  The least every stored string needs: :func:`text_problem` and
    :func:`id_problem` refuse these and more."""
    m = _UNSTORABLE_RE.search(value)
    return None if m is None else _reason(m.group(), m.start())


def check_text(value: str, field: str) -> str:
    """`value`, body text a person typed (a note, a reason, a reference answer, guidelines), or
    InputError naming `field` when :func:`text_problem` refuses it (a NUL, which PostgreSQL's
    text cannot hold, or another control body text never needs)."""
    reason = text_problem(value)
    if reason:
        raise InputError(f"{field}: {reason}; type it again without it")
    return value


def json_text_problem(value: object, where: str = "") -> str | None:
    """The first string of a parsed JSON value, object keys included, that
    :func:`storable_problem` refuses, as ``"events.0.note: contains a NUL character ..."``."""
    if isinstance(value, str):
        reason = storable_problem(value)
        return None if reason is None else f"{where or 'value'}: {reason}"
    items: Iterable[tuple[object, object]] = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        here = f"{where}.{visible(str(key))}" if where else visible(str(key))
        if isinstance(key, str) and (reason := storable_problem(key)):
            return f"{here}: the key {reason}"
        if (found := json_text_problem(item, here)) is not None:
            return found
    return None


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------

# OWASP "CSV Injection": formula starters.  A full-width or small form (＝ ＋ － ＠, ﹦ ﹢ ﹣ ﹫)
# folds to one of these under NFKC, which some spreadsheets apply to input; U+2212 is the minus
# sign in all but code point.
_FORMULA_START: Final = frozenset("=+-@\u2212")
# A first character a spreadsheet evaluates or strips by itself: tab and CR (OWASP), NUL
# (OWASP ASVS 1.2.10).
_DANGEROUS_FIRST: Final = frozenset("\t\r\x00")


def neutralise_cell(value: str) -> str:
    """A CSV cell a spreadsheet will show as text: a single quote is put in front when needed.

    Rule (OWASP "CSV Injection", ASVS 1.2.10): a cell whose first character is ``=``, ``+``,
    ``-``, ``@``, tab, CR or NUL is prefixed with ``'``.  Extended, because spreadsheets skip
    leading blanks and fold compatibility forms: the formula sign may follow any run of
    whitespace (space, NBSP, em space, ideographic space, line feed...), invisible format
    characters (BOM, zero-width space, bidi controls) and other controls, and may be a
    full-width or small form (``＝ ＋ － ＠``) or U+2212 MINUS SIGN.  The quote goes at the very
    start, so the cell keeps all its characters.  Every other cell, the empty one included, is
    unchanged; a cell already starting with ``'`` is left alone.
    """
    if not value:
        return value
    if value[0] in _DANGEROUS_FIRST:
        return "'" + value
    for ch in value:
        if ch.isspace() or not ch.isprintable() or _IGNORABLE_RE.match(ch):
            continue
        if ch in _FORMULA_START or unicodedata.normalize("NFKC", ch) in _FORMULA_START:
            return "'" + value
        return value
    return value


__all__ = [
    "BIDI_CONTROLS",
    "BIDI_EXPLICIT",
    "BIDI_MARKS",
    "check_name",
    "check_text",
    "confusable_with",
    "display_name",
    "id_problem",
    "inert_markdown",
    "json_text_problem",
    "loose_key",
    "near_duplicate_of",
    "neutralise_body",
    "neutralise_cell",
    "normalise_name",
    "plain_key",
    "storable_problem",
    "text_problem",
    "uts39_skeleton",
    "visible",
]


def cut(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to its first `limit` characters, and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)
