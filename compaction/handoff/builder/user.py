"""What the user's words do to the matters (seed 001 "交接单该装什么";
SPEC §7 "Providers": constraint sentences, holds, retractions and
abandonments).

Pure. Each clause of a user message (``clauses.read``: one role each) is
applied to the matter it is about:

- a **request** or **condition** joins the matter it names (affinity 3),
  else the one the message is on, else a matter on hold it names (asking
  again for a held matter joins it; only a consent lifts a hold), else it
  opens a new matter; a request for a dropped or done matter reopens it;
- a **consent** joins the matter it names or the one at hand, and lifts
  that matter's hold (the latest state wins);
- a **hold** turns the matter it names (else the one at hand) into a held
  line quoting the hold and removes its consent and go-ahead requests;
- an **abandonment** marks the matter it names — or, naming none ("先不买
  新的了"), the one the user's previous message was about, by two of its
  matter terms, as the drift checks read it — abandoned with the user's
  words; a matter never listed gets its own marked line. One that names
  only part of a live matter (some of its quotes, not its label: the Genius
  Bar route of a repair) drops those quotes and quotes the user's words on
  the line, which stays live;
- questions and plain statements make no matter.

A clause the matter's line already keeps (``reading.keeps``: the same words,
or its phrase, numbers and most terms) adds nothing, and neither does a
request or a restated hold that brings no news beyond the line and the
parent (``reading.brings_news``: no new id, no new terms worth 3) — the rule
the drift checks read growth with. A condition replaces the ones it
supersedes ("预算改成5000以内" after "预算4000以内").
"""

from __future__ import annotations

from .. import clauses as c
from .. import vocabulary as v
from ..reading import Phrase, brings_news, key_terms, keeps_text, supersedes
from .labels import excerpt, label_parts, latin_topic, make_label
from .matters import (
    ABANDONED, DONE, GENERIC_ABANDONED, HELD, OPEN, Fragment, Matter, State, best, drop_consent, focus, fragment,
    line_text, new_matter, reopen, touch, user_changed,
)

LIVE = (OPEN, HELD, DONE)
_KEPT_BY = {c.CONSENT: (v.CONSENT,), c.HOLD: (v.HOLD,), c.ABANDON: (v.ABANDON,)}


def already_kept(state: State, matter: Matter, said: Fragment) -> bool:
    """Whether ``said`` brings nothing the matter's line does not hold
    already (see the module doc)."""
    if not (matter.fragments or matter.hold or matter.abandon):
        return False  # a new matter's first words: its label came from them
    text = line_text(matter)
    if matter.has(said.text):
        return True
    if keeps_text(state.reader, text, said.text, _KEPT_BY.get(said.role, (v.CONSTRAINT,))):
        return True
    if said.is_condition and keeps_text(state.reader, text, said.text):
        return True
    if said.is_condition or said.role in (c.CONSENT, c.ABANDON):
        return False  # a condition or a change of mind the line lacks is new
    if said.role == c.HOLD and matter.status != HELD:
        return False  # the hold itself is new
    return not brings_news(said.text, key_terms(text) | key_terms(state.parent_text or ""))


def add_fragment(state: State, matter: Matter, said: Fragment) -> None:
    """Quote ``said`` on the matter's line unless the line keeps it already;
    a condition it supersedes (``reading.supersedes``: "预算改成5000以内"
    after "预算4000以内") leaves the line, quote and own words alike."""
    if already_kept(state, matter, said):
        return
    new = _condition(state, said.text) if said.is_condition else None
    if new is not None:
        def stale(text: str) -> bool:
            old = _condition(state, text)
            return old is not None and supersedes(new, old)

        matter.fragments = [f for f in matter.fragments if not (f.is_condition and stale(f.text))]
        parts = label_parts(matter.label)
        kept = [p for p in parts if not stale(p)]
        if len(kept) != len(parts):
            matter.label = "".join(kept).strip(c.EDGE_PUNCT) or said.text
    matter.fragments.append(said)
    user_changed(state, matter)


def _condition(state: State, text: str) -> Phrase | None:
    match = state.reader.find(v.CONSTRAINT, text)
    return Phrase.of(text, match) if match else None


def apply_clause(state: State, clause: c.Clause, *, in_message: Matter | None,
                 previous_user_text: str) -> Matter | None:
    """One user clause; returns the matter the message is on afterwards."""
    if clause.role in (c.QUESTION, c.STATEMENT) or not c.quotable(clause.text):
        return in_message
    said = Fragment(text=excerpt(clause.text), role=clause.role, kinds=clause.kinds)
    if clause.role == c.ABANDON:
        _abandon(state, said, previous_user_text)
        return in_message
    current = in_message if in_message is not None and in_message.status in (OPEN, HELD) else None
    if clause.role == c.HOLD:
        return _hold(state, said, current)
    if clause.role == c.CONSENT:
        return _consent(state, said, current)
    return _request_or_condition(state, said, in_message)


def _abandon(state: State, said: Fragment, previous_user_text: str) -> None:
    reader = state.reader
    # What was dropped: the matter the clause names (one term is enough
    # when it names only one: "天才吧那边我不去了"), else, when it names
    # none ("先不买新的了"), the one the user's previous message was
    # about (two of its terms) — as the drift checks read it.
    named = c.topics(reader.without(said.text, (v.ABANDON,)))
    if named:
        matter = best(state, named, statuses=LIVE, minimum=min(2, c.affinity(named, named)))
    else:
        borrowed = c.topics(reader.without(previous_user_text, (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION)))
        sharing = [m for m in state.matters if m.status in LIVE and len(m.topics() & borrowed) >= 2]
        matter = max(sharing, key=lambda m: m.touched) if sharing else None
    if matter is None:
        # A matter never listed (often one the user only asked about):
        # its own marked line, named from the clause or the question before it.
        matter = new_matter(state, [said.text], status=ABANDONED, generic=GENERIC_ABANDONED,
                            fallback=latin_topic(previous_user_text), role=c.ABANDON)
    if matter.status == ABANDONED and already_kept(state, matter, said):
        return
    if named and _drops_a_part(matter, named):
        # "天才吧那边我不去了" while the repair is on: the Genius Bar route
        # goes, the repair stays, and the line quotes the user dropping it.
        matter.fragments = [f for f in matter.fragments if not c.affinity(named, c.topics(f.text))] + [said]
        user_changed(state, matter)
        touch(state, matter)
        return
    drop_consent(matter, reader, state.language)  # a dropped matter has no go-ahead left
    if matter.status == HELD:
        matter.fragments.extend(f for f in (fragment(h, reader) for h in matter.hold) if f.is_condition)
        matter.hold = []
    matter.status = ABANDONED
    matter.abandon.append(said.text)
    user_changed(state, matter)
    touch(state, matter)


def _drops_a_part(matter: Matter, named: set[str]) -> bool:
    """Whether an abandonment naming ``named`` drops only part of a live
    matter: it names some of its quotes but not its label, and quotes about
    other things remain."""
    if matter.status == ABANDONED or c.affinity(named, c.topics(matter.label)):
        return False
    about = [bool(c.affinity(named, c.topics(f.text))) for f in matter.fragments]
    return any(about) and not all(about)


def _hold(state: State, said: Fragment, current: Matter | None) -> Matter:
    # "先别提交" is about the matter it names, else the one the user is on.
    matter = best(state, c.topics(said.text), statuses=(OPEN, HELD), minimum=1) or current \
        or focus(state, (OPEN, HELD)) or new_matter(state, [said.text], role=c.HOLD)
    if matter.status == HELD and already_kept(state, matter, said):
        touch(state, matter)  # the hold said again: the line keeps it already
        return matter
    drop_consent(matter, state.reader, state.language)
    matter.status = HELD
    matter.hold.append(said.text)
    user_changed(state, matter)
    touch(state, matter)
    return matter


def _consent(state: State, said: Fragment, current: Matter | None) -> Matter:
    # A go-ahead that names something no matter is about starts one
    # ("现在可以提交送修申请了"); a bare "我同意" agrees to the matter at hand.
    matter = best(state, c.topics(said.text), statuses=(OPEN, HELD), minimum=1) or current
    if matter is None:
        named = make_label(said.text, language=state.language, vocabulary=state.reader)
        matter = new_matter(state, [said.text]) if named else (focus(state, (OPEN, HELD))
                                                               or new_matter(state, [said.text]))
    if matter.status == HELD:
        # Agreed again after the hold: the consent is current, the hold goes.
        matter.status = OPEN
        matter.hold = []
        user_changed(state, matter)
    add_fragment(state, matter, said)
    touch(state, matter)
    return matter


def _request_or_condition(state: State, said: Fragment, in_message: Matter | None) -> Matter:
    # Within one message the user goes on about the same matter unless a
    # clause clearly names another one; a request may take up again a
    # matter that was dropped or done.
    topics = c.topics(said.text)
    request = said.role == c.REQUEST
    strong = best(state, topics, statuses=LIVE + ((ABANDONED,) if request else ()), minimum=3)
    on_message = in_message if in_message is not None and in_message.status != ABANDONED else None
    if request:
        # Within a message the user goes on about one matter ("直接寄回你们店修
        # 吧。现在可以提交送修申请了") unless the request names other ids; a
        # request linked to nothing listed is a new matter.
        held = best(state, topics, statuses=(HELD,), minimum=2)
        if strong is not None:
            matter = strong
        elif held is not None and on_message is None:
            # Asking again for what is on hold ("现在可以提交送修申请了"): the
            # same matter; only a consent lifts the hold.
            matter = held
        elif on_message is not None and not c.ids_conflict(topics, on_message.topics()):
            matter = on_message
        else:
            matter = new_matter(state, [said.text])
    elif strong is not None and (on_message is None or c.affinity(topics, on_message.topics()) < 3):
        matter = strong
    else:
        matter = on_message or best(state, topics, statuses=LIVE, minimum=2) \
            or focus(state, (OPEN, HELD)) or new_matter(state, [said.text])
    if request and (matter.status == ABANDONED and not matter.has(said.text)
                    or matter.status == DONE and brings_news(said.text, key_terms(line_text(matter)))):
        # Asked for again: the latest state wins. A done matter asked for in
        # the same words is still done ("再帮我取消订单66001").
        reopen(state, matter)
    add_fragment(state, matter, said)
    touch(state, matter)
    return matter
