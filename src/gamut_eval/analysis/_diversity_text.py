"""Question text for the diversity analysis: its TF-IDF terms and its interrogative template.

The template rule is spelled out in :func:`question_template`'s docstring.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["STOPWORDS", "question_template", "terms"]


# --------------------------------------------------------------------------- tokens

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


STOPWORDS = _wordset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing don't down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom whose why will with would you your yours
    """
)
"""Words dropped before TF-IDF: English function words, wh-words included (the templates
are measured separately, so the vectors compare what questions are about)."""


def _words(text: str) -> list[str]:
    """Lower-cased words (letters and digits, with an inner apostrophe); a possessive or
    contracted ``'s`` is cut off (``engine's`` -> ``engine``, ``what's`` -> ``what``)."""
    words = _WORD.findall(text.lower().translate(_APOSTROPHES))
    return [w[:-2] if w.endswith("'s") else w for w in words]


def terms(text: str) -> list[str]:
    """TF-IDF terms of a text: its words less stopwords, then the bigrams of that sequence
    (so ``kind of coffee`` gives ``kind``, ``coffee`` and ``kind coffee``)."""
    words = [w for w in _words(text) if w not in STOPWORDS]
    return words + [f"{x} {y}" for x, y in itertools.pairwise(words)]


# --------------------------------------------------------------------------- templates

_WH = _wordset("what which who whom whose where when why how")
_AUXILIARIES = _wordset(
    "is are was were am do does did can could would should will shall may might must has have had"
)
"""Verbs that open a yes/no question."""
_FRAME_WORDS = (
    _WH
    | _AUXILIARIES
    | _wordset(
        """
    be been this these that those the a an its their my your our his her some any
    each every it they them i you we me us he she of in on at for from to with by about
    into as kind type sort many much
    """
    )
)
"""Closed-class words a template keeps verbatim; every other word is content."""
_WH_WORD = re.compile(r"\b(?:" + "|".join(sorted(_WH)) + r")\b")
_CONTRACTED = _wordset("it that this there here") | _WH
"""Words whose ``'s`` is ``is`` (``what's`` -> ``what is``); on other words it is a
possessive and dropped."""
_CLAUSE_END = re.compile(r"[,;:?!.()\"]|\s(?:and|or|but)\s")
_COPULA = frozenset({"is", "are", "was", "were"})
_DEMONSTRATIVE = frozenset({"this", "these", "that", "those", "it", "they"})
_MAX_FRAME = 6
"""Tokens a template has at most."""


def question_template(question: str) -> str:
    """The interrogative frame of a question, by this rule:

    1. Lower-case; unify apostrophes.
    2. Start at the first wh-word (what, which, who, whom, whose, where, when, why, how),
       so a preamble ("This photo came out blurry, but what kind ...") is skipped; but
       start at the beginning when the question opens with an auxiliary verb (is, are,
       can, does, ...: a yes/no question, "is this plant safe ...") or has no wh-word.
    3. Keep the first clause: stop at the first ``, ; : ? ! . ( ) "`` or `` and / or / but ``.
    4. Split into words; ``'s`` after a wh-word or it/that/this/there/here becomes ``is``,
       on any other word it is a possessive and dropped.
    5. Keep closed-class words (wh-words, be/do/have and modal verbs, articles,
       demonstratives, possessive determiners, pronouns, common prepositions, ``kind``,
       ``type``, ``sort``, ``many``, ``much``) as they are; replace each run of other
       words by one ``<X>``.
    6. End after the first ``<X>``; if it is followed by a copula and a demonstrative
       (``is this``, ``are these``, ...), keep those two words too. At most six tokens.

    Examples: "What is this dish, what goes into it?" -> ``what is this <X>``; "What kind
    of coffee is this, ..." -> ``what kind of <X> is this``; "What rocket is this?" ->
    ``what <X> is this``; "How does this engine's turbocharger improve ...?" -> ``how does
    this <X>``; "What is this and where is it from?" -> ``what is this``.
    """
    text = question.lower().translate(_APOSTROPHES)
    opening = _WORD.search(text)
    wh = _WH_WORD.search(text)
    if wh is not None and (opening is None or opening.group() not in _AUXILIARIES):
        text = text[wh.start() :]
    clause = _CLAUSE_END.split(text, maxsplit=1)[0]
    words: list[str] = []
    for word in _WORD.findall(clause):
        if word.endswith("'s"):
            stem = word[:-2]
            words += [stem, "is"] if stem in _CONTRACTED else [stem]
        else:
            words.append(word)
    frame: list[str] = []
    for i, word in enumerate(words):
        if word in _FRAME_WORDS:
            frame.append(word)
            continue
        frame.append("<X>")
        rest = words[i + 1 :]
        while rest and rest[0] not in _FRAME_WORDS:
            rest = rest[1:]  # the rest of this run of content words
        if len(rest) >= 2 and rest[0] in _COPULA and rest[1] in _DEMONSTRATIVE:
            frame += rest[:2]
        break
    return " ".join(frame[:_MAX_FRAME]) or "<X>"
