"""A matter's name and the length of what the builder quotes (seed 001
"交接单该装什么": one line per matter with its current intent, in the user's
own words; SPEC §7).

Pure. A label is cut from the user's own clause: what it is about, without
fillers and without agreeing, holding or dropping words, so the name stays
true whatever happens to the matter. It never cuts inside a Latin word or a
number (a cut number would be a value the user never said), and a quote is
shortened from its end only, so it stays a verbatim head.
"""

from __future__ import annotations

import re

from .. import clauses as c
from .. import note as n
from .. import vocabulary as v
from ..reader import Reader
from ..reading import is_stop_word

LABEL_LIMIT = {n.ZH: 20, n.EN: 48}
FRAGMENT_LIMIT = 160


# Words a label does not start or end with: politeness, fillers, modal
# go-aheads ("可以", "now") — a label names the matter, it does not agree.
# "给我" is no lead: "给我妈买个iPad" is for my mother.
_ZH_LEAD = re.compile(r"^(好的|好吧|好|嗯+|哦|那就|那么|那|就|还是|现在|可以|麻烦你|麻烦您|麻烦|请你|请您|请|你帮我|您帮我|帮我|"
                      r"帮忙|你|您|我想要|我想|我要|我需要|我打算|我决定|我|直接|马上|立刻|先|然后|另外|还有|对了|其实|再|也|把)")
# 吧 is a particle, except in names: 天才吧, 酒吧, 网吧.
_ZH_TAIL = re.compile(r"(了吧|了呢|了啊|了|(?<!天才)(?<![酒网贴书水])吧|呢|啊|呀|哦|嘛|一下)$")
_ZH_PLACE_TAIL = re.compile(r"(那边我|这边我|那边|这边|的|就|也|都|还)$")
_EN_LEAD = re.compile(r"^(yes|ok|okay|so|then|also|and|actually|well|please|now|just|go ahead and|can you|could you|"
                      r"would you|i want to|i'd like to|i would like to|i need to|i need|i want|i'd like|"
                      r"i would like|let's|we need|we want)\b[\s,]*", re.I)
_EN_TAIL = re.compile(r"[\s,]*\b(please|now|then|too|thanks|thank you)$", re.I)


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, never cutting inside a Latin word or a
    number (a cut number would be a value the user never said)."""
    if len(text) <= limit:
        return text
    at = limit
    if _ALNUM.match(text[at - 1]) and _ALNUM.match(text[at]):
        run_end = _ALNUM_RUN.match(text, at).end()
        if run_end - limit <= 12:  # an id just past the limit is kept whole, not dropped
            return text[:run_end]
    while at > 0 and _ALNUM.match(text[at - 1]) and _ALNUM.match(text[at]):
        at -= 1
    if at == 0:  # one long code: keep it whole rather than cut it
        return _ALNUM_RUN.match(text).group()
    return text[:at].rstrip(c.EDGE_PUNCT) or text[:at]


_ALNUM = re.compile(r"[A-Za-z0-9]")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_LATIN_TOPIC = re.compile(r"[A-Za-z][A-Za-z+]*(?: [A-Za-z][A-Za-z+]*)*")


def label_parts(label: str) -> list[str]:
    """A label's clause parts (after ，,；;。：), each with its punctuation."""
    return re.split(r"(?<=[，,；;。：])", label)


def tidy(text: str) -> str:
    """``text`` without leading fillers and trailing particles."""
    text = re.sub(r"\s+", " ", text).strip(c.EDGE_PUNCT)
    for _ in range(4):  # leading fillers come in runs: 好的，那就帮我…
        before = text
        text = _ZH_LEAD.sub("", text).strip(c.EDGE_PUNCT)
        text = _EN_LEAD.sub("", text).strip(c.EDGE_PUNCT)
        if text == before:
            break
    # Tails once each, particles before pronouns: "天才吧那边我" keeps 天才吧.
    for tail in (_ZH_TAIL, _ZH_TAIL, _ZH_PLACE_TAIL, _EN_TAIL):  # "诊断一下吧": two particles
        text = tail.sub("", text).strip(c.EDGE_PUNCT)
    return text


_NEUTRAL_CHECKS = (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION, c.DIRECT_REQUEST, v.ASSISTANT_ASK, v.TOOL_DETAIL)


def make_label(text: str, *, language: str, vocabulary: v.Vocabulary | Reader = v.DEFAULT,
               role: str = c.REQUEST) -> str | None:
    """A matter's short name, cut from the user's own clause: what it is
    about, without fillers and without agreeing, holding or dropping words,
    so the name stays true whatever happens to the matter. A request or a
    consent is taken whole ("现在可以提交送修申请了" → 提交送修申请); a hold
    or an abandonment with its hold/drop words taken out ("天才吧那边我不去了"
    → 天才吧). None when nothing neutral, naming something, is left."""
    reader = c.reader(vocabulary)
    # A hold's or a drop's own words ("先不买新的了") name nothing once the
    # hold or drop is taken out; they are never the name. A request or
    # consent whose words agree ("我明确同意办理") names nothing either; what
    # is left once they are out ("明确") is no name.
    if role in (c.HOLD, c.ABANDON):
        text = reader.without(text, (v.CONSENT, v.HOLD, v.ABANDON))
    candidate = shorten(tidy(text), LABEL_LIMIT[language])
    if len(candidate) < 2 or not c.quotable(candidate) or not c.topics(candidate):
        return None
    if any(reader.matches(category, candidate) for category in _NEUTRAL_CHECKS):
        return None
    return candidate


def label_from(texts, *, language: str, reader: Reader, generic: dict, role: str = c.REQUEST) -> str | None:
    """The first label one of ``texts`` gives, else the generic name."""
    for text in texts:
        label = make_label(text, language=language, vocabulary=reader, role=role)
        if label:
            return label
    return generic.get(language)


def excerpt(text: str) -> str:
    """A quote no longer than ``FRAGMENT_LIMIT``: its head, still verbatim."""
    return shorten(text, FRAGMENT_LIMIT) if len(text) > FRAGMENT_LIMIT else text


def latin_topic(text: str) -> str | None:
    """The first product-like name of a text ("AirPods Max"), digits left out
    so a request line never holds a number the user's quoted words do not."""
    for match in _LATIN_TOPIC.finditer(text):
        words = [w for w in match.group().split() if not is_stop_word(w)]
        if words and len(" ".join(words)) >= 3:
            return " ".join(words)
    return None
