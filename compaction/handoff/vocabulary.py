"""The phrases the hand-off rules recognise, in one place (SPEC §7, §8; seed 001).

Pure. The offline ``handoff-extractive`` builder and the drift checkers read
a conversation with the same words: what counts as a consent, a hold or
withdrawal, an abandonment, a question, a user condition, a request, a
direct request to act (a requirement even when phrased as a question), an
assistant's ask, a tool detail, a tool result's success or failure, and
(for the builder and the checks alike) an acting verb, a hedge, and a clause
that supposes ("如果…", "if …": a hold supposed before a question asks). Some
patterns also read how a note records these (``用户询问`` / ``user asked
whether`` is a question, ``用户尚未提供`` an assistant's ask), because the
drift checks read notes with the same words. Each
category is a tuple of regular expressions per language; a text matches a
category when any of its patterns is found.

Extensible per scope: ``Vocabulary.extended({"hold": {"zh": [...]}})`` adds
patterns (it never removes the built-in ones), so a scope whose users say
"挂起" for a hold can teach both the builder and the checkers at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .note import EN, ZH

CONSENT = "consent"  # a go-ahead: 我同意办理 / go ahead and file it
HOLD = "hold"  # a withdrawal or postponement: 先别提交 / hold off
ABANDON = "abandon"  # a matter dropped: 不买了 / forget the upgrade
QUESTION = "question"  # asking, comparing, learning: 能不能 / how do I
CONSTRAINT = "constraint"  # a user condition: negation, only, bound, deadline, quantity
REQUEST = "request"  # the user wants something done: 帮我 / please book
DIRECT_REQUEST = "direct_request"  # the user tells the assistant to act: 帮我提交 / please file it
ASSISTANT_ASK = "assistant_ask"  # the assistant asks the user for something: 请提供 / could you send
TOOL_DETAIL = "tool_detail"  # stock, warranty, delivery wording of tool results
SUCCESS = "success"  # a tool result that reports success
FAILURE = "failure"  # a tool result that reports failure, refusal or cancellation

CATEGORIES = (CONSENT, HOLD, ABANDON, QUESTION, CONSTRAINT, REQUEST, DIRECT_REQUEST, ASSISTANT_ASK, TOOL_DETAIL,
              SUCCESS, FAILURE)

BUILTIN: dict[str, dict[str, tuple[str, ...]]] = {
    CONSENT: {
        ZH: (r"同意(办理|提交|申请|寄修|送修|退款|退货|购买|下单)?", r"(可以|现在|就)(帮我)?(提交|办理|下单)(了|吧)",
             r"确认(办理|提交|下单|购买)", r"就这么办", r"没问题[，,]?(提交|办|下单)"),
        EN: (r"\b(i )?(agree|consent)\b", r"\bgo ahead\b", r"\bplease (submit|file|proceed|book|confirm)\b",
             r"\byes[,.]? (submit|file|book|do it)\b", r"\bi confirm\b", r"\bconfirmed?,? (please )?proceed\b"),
    },
    HOLD: {
        ZH: (r"先别", r"先不(要)?(提交|办|下单|申请|寄)", r"暂缓", r"暂停", r"等(我)?.{0,12}再(说|办|提交|决定)",
             r"(撤回|收回)(同意|申请)?", r"不要(提交|办理)了?"),
        EN: (r"\bhold (off|on)\b", r"\bon hold\b", r"\bdon'?t (submit|file|send|book|proceed)( it)?( yet)?\b",
             r"\bnot yet\b", r"\bwait (until|till|for)\b", r"\bpause\b", r"\bwithdraw( my)?( consent| request)?\b",
             r"\bput (it|that|this) on hold\b", r"\bcancel my (consent|approval)\b"),
    },
    ABANDON: {
        ZH: (r"(不|别)(买|要|去|考虑|看|订|办)了", r"先不(买|要|去|考虑|看|订)(新的|了)", r"算了[，,。]?(不|别)", r"放弃", r"不再(考虑|需要)", r"取消(这个|那个)?(想法|计划|打算)"),
        EN: (r"\bforget (it|about|the)\b", r"\b(never ?mind|nevermind)\b", r"\bno longer (need|want|interested)\b",
             r"\bdrop (it|the|that)\b", r"\bgive up on\b", r"\bi'?ll pass\b", r"\bnot interested any ?more\b",
             r"\bscrap (the|that)\b"),
    },
    QUESTION: {
        ZH: (r"能不能", r"可不可以", r"怎么(办|弄|样|处理)?", r"有没有", r"是不是", r"多少", r"为什么", r"哪(个|些|里|款)",
             r"吗[？?。]?$", r"呢[？?]?$", r"[？?]\s*$", r"对比", r"比较", r"了解一下", r"介绍",
             # how long / when / what, and how a note records that the user asked (seed 001: 用户询问……)
             r"多久", r"多长时间", r"什么时候", r"几(天|个|次|点|号)", r"如何", r"询问", r"咨询", r"想(了解|知道|问)",
             r"打听", r"用户(又|再次|还|曾)?问"),
        EN: (r"\?\s*$", r"^\s*(can|could|would|is|are|do|does|did|how|what|which|why|when|where|who|should)\b",
             r"\bcompare\b", r"\bwhat about\b", r"\btell me (about|more)\b", r"\bi wonder\b",
             # how a note records that the user asked
             r"\bask(ed|s)? (about|whether|if|how|what|which|why|when|where)\b", r"\bwants? to know\b",
             r"\b(inquir|enquir)(ed|es|y|ies)\b", r"\bwondered\b"),
    },
    CONSTRAINT: {
        # 不能用 / 不能连接 report a fault, and 别的 / 区别 / 特别 hold no
        # negation: neither is a condition.
        ZH: (r"只要", r"只(能|想|订|买|选|看)", r"不要", r"不能(?!用|听|响|工作|出声|开机|连接|充电|正常|识别)",
             r"(?<![区特分告类识辨级性派离鉴])别(?![的人处])", r"以内", r"以下", r"之内", r"不超过", r"最多",
             r"至少", r"之前", r"以前", r"必须", r"一定要", r"\d+\s*(元|块|万|人|晚|天|个|台|张|间)",
             r"[一二两三四五六七八九十]+\s*(个|台|张|间|人|晚|天)"),
        EN: (r"\bonly\b", r"\bnot?\b", r"\bnever\b", r"\bwithout\b", r"\bunder\b", r"\bbelow\b", r"\bat most\b",
             r"\bat least\b", r"\bno more than\b", r"\bbefore\b", r"\bby (monday|tuesday|wednesday|thursday|friday|"
             r"saturday|sunday|tomorrow|tonight|\d)", r"\bmust\b", r"\bneeds? to\b", r"\$\s?\d", r"\b\d+\s*(people|"
             r"persons|nights|days|tickets|rooms|seats|bags|adults|children)\b"),
    },
    REQUEST: {
        ZH: (r"帮我", r"请(你)?(帮|给|把)?", r"我(要|想|需要|打算)", r"麻烦", r"给我", r"安排", r"办理", r"提交", r"预订|订一",
             r"还是先?(要|想|买|订|选|办|去|修|寄|退|换)"),
        EN: (r"\bplease\b", r"\bi (want|need|would like|'d like)\b", r"\bcan you\b", r"\bbook\b", r"\bcancel\b",
             r"\bchange\b", r"\bsend\b", r"\bfile\b", r"\bmake\b", r"\bfind me\b"),
    },
    # Asking the assistant to act in the world (submit, cancel, order, book,
    # change, send), or a note recording that the user asked so: a
    # requirement even when phrased as a question (能不能帮我提交?). Asking
    # for a look-up, a comparison, a list or a text is a question (seed 001).
    DIRECT_REQUEST: {
        ZH: (r"(帮|替|给)(我|忙)?(把.{0,12})?(提交|办理|下单|申请|寄|退|换|取消|修改|预约|预订|登记|安排|买)",
             r"(请|麻烦)(你|您)?(帮我)?(把.{0,12})?(提交|办理|下单|申请|寄|退|换|取消|修改|预约|预订|登记|安排)",
             r"我(要|需要|想要|决定)(提交|办理|下单|申请|寄修|送修|退款|退货|换货|取消|修改|预约|预订|买)",
             r"用户(明确)?(要求|希望|请求|决定|需要)(?!(了解|知道|对比|比较|介绍|解释|咨询))"),
        EN: (r"\b(please|can you|could you|would you)( please)?( go ahead and)? (file|submit|book|cancel|order|send|"
             r"change|arrange|process|schedule|refund|return|replace|buy|reserve|open)\b",
             r"\bi (want|need|would like|'d like) (you )?to (file|submit|book|cancel|order|send|change|arrange|"
             r"process|schedule|return|replace|buy|reserve|open)\b",
             r"\b(the )?user (wants|needs|requests|requested|asked (us|the assistant|you) to|would like|decided)\b"),
    },
    ASSISTANT_ASK: {
        ZH: (r"请(您)?(提供|告知|发送|上传|确认|补充)", r"麻烦(您)?(提供|告知|发|上传)", r"需要(您)?(提供|告知|补充)",
             r"(能否|可否)(提供|告知)", r"(您|你)(能|可以)(提供|告知|发|拍)", r"请问(您|你)的",
             # how a note records that the assistant is waiting on the user
             r"用户(尚未|还没|未)(提供|告知|发送|上传|确认|补充)", r"(待|等待|等)用户(提供|告知|发送|上传|确认|补充)"),
        EN: (r"\b(please|kindly) (provide|send|share|upload|confirm|tell me)\b", r"\bcould you (provide|send|share|"
             r"confirm|tell me)\b", r"\bi('ll)? need (your|the)\b", r"\bmay i have\b", r"\bcan you (provide|send|share)\b",
             r"\bawaiting (the )?user'?s?\b",
             r"\buser (has not|hasn'?t|has yet to) (yet )?(provided|sent|shared|confirmed)\b"),
    },
    TOOL_DETAIL: {
        ZH: (r"有货", r"库存", r"缺货", r"保修至", r"保修期", r"签收", r"发货", r"到货", r"物流",
             r"现货", r"在保", r"过保", r"保修(到|截至|截止)"),
        EN: (r"\bin stock\b", r"\bout of stock\b", r"\bstock\b", r"\bwarranty (until|through|expires)\b",
             r"\bdelivered\b", r"\bshipped\b", r"\btracking\b", r"\bavailability\b",
             r"\bunder warranty\b", r"\bwarranty (ends|ended|valid)\b"),
    },
    SUCCESS: {
        ZH: (r"成功", r"已(提交|创建|完成|办理|取消|修改|退款)", r"单号"),
        EN: (r"\bsuccess(ful(ly)?)?\b", r"\"?status\"?\s*[:=]\s*\"?(ok|success|confirmed|created|done)\b",
             r"\b(created|confirmed|cancelled|canceled|updated|submitted|booked|refunded)\b"),
    },
    FAILURE: {
        ZH: (r"失败", r"错误", r"拒绝", r"已取消操作", r"未(提交|执行|完成)", r"无法"),
        EN: (r"\berror\b", r"\bfail(ed|ure)?\b", r"\bdenied\b", r"\brejected\b", r"\bnot (found|allowed|permitted)\b",
             r"\bunable\b", r"\binvalid\b", r"\bexception\b"),
    },
}


# Added for the offline hand-off builder (compaction.handoff.builder);
# kept as one block so the lists above stay as they were. Each is a phrase
# seed 001 names or a form the builder met in hand-written conversations.
_BUILDER_ADDITIONS: dict[str, dict[str, tuple[str, ...]]] = {
    # "提交吧" / "you can submit it now": a go-ahead as much as "我同意".
    CONSENT: {
        ZH: (r"(提交|办理|下单)吧",),
        EN: (r"\byou can (now )?(submit|file|book|place|send|proceed)\b",
             r"\b(ok|okay|sure|yes)[,.]? (please )?(go ahead|submit|file|book|proceed)\b", r"\blet'?s do it\b"),
    },
    # Seed 001: asking for a checklist, comparison, plan or text, or for a
    # look-up or a recommendation, is a question, not a matter.
    QUESTION: {
        ZH: (r"(做|列|写|拟|整理|出)(一)?(个|份|下)?(清单|列表|计划|方案|文案|攻略|对比)", r"查(一下|一查|查)", r"看(一下|看)",
             r"推荐", r"多久", r"用户(又|再次|还|曾)?(询问|问|咨询)", r"(诊断|检测|排查|测试)一下"),
        EN: (r"\b(make|write|draft|give|create|prepare)( me)? (a |an |the )?(list|checklist|plan|comparison|draft|"
             r"outline|summary|template)\b", r"\blook up\b", r"\bcheck (if|whether|on|the status)\b", r"\bfind out\b",
             r"\brecommend\b", r"\bsuggest\b", r"\b(the )?user (asked|asks|wondered|inquired)\b"),
    },
    # Telling the shop what to do with the goods is a request even without
    # 帮我 / 请: "直接寄回你们店修吧" (seed 001 §2, round 80).
    REQUEST: {
        ZH: (r"寄回|寄过去|寄修|送修|退货|换货|退款|退掉",),
        EN: (r"\b(send it back|ship it back|return it)\b",),
    },
    # A confirmation card the user refused or closed is a failed action.
    FAILURE: {
        ZH: (r"确认.{0,4}(取消|关闭)", r"(取消|关闭)了?确认"),
        EN: (r"\b(declined|refused|aborted)\b", r"\bcancell?ed (the )?(confirmation|request|action|operation)\b",
             r"\bnot (executed|submitted|performed|completed)\b"),
    },
}
for _category, _by_language in _BUILDER_ADDITIONS.items():
    for _language, _added in _by_language.items():
        BUILTIN[_category][_language] = BUILTIN[_category][_language] + _added

# Two categories the builder reads requests with: "我要上班" wants nothing
# done (no verb that acts), "我再想想是去天才吧还是寄修" or "要是寄修的话"
# decides nothing (undecided). A request is a request word with an acting
# verb and no hedge (or a direct request, where the vocabulary has one).
ACTION = "action"  # a verb that acts in the world: buy, book, return, repair, submit
UNDECIDED = "undecided"  # deliberating or supposing: 再想想 / 要是…的话 / not sure yet
# A clause that supposes: "如果我先别提交，会怎样？" / "if I hold off, what
# happens?" — a go-ahead, hold or drop in it, asked by the question after it,
# is that question's (``clauses.supposed``).
SUPPOSE = "suppose"
CATEGORIES = CATEGORIES + (ACTION, UNDECIDED, SUPPOSE)
BUILTIN[ACTION] = {
    ZH: (r"买|订|退|换|修|寄|办|申请|提交|取消|预约|约|改|开票|送|安排|下单|购|付|登记|上门",),
    EN: (r"\b(buy|book|order|return|cancel|change|file|submit|send|reserve|schedule|refund|replace|repair|fix|"
         r"arrange|ship|pay|purchase|register|open|close|apply|rebook|upgrade|get me|find me)\b",),
}
BUILTIN[SUPPOSE] = {
    ZH: (r"如果|要是|假如|假设|万一|倘若",),
    EN: (r"\b(if|suppose|supposing)\b",),
}
BUILTIN[UNDECIDED] = {
    ZH: (r"再想想|想一想|考虑考虑|考虑一下|还没(想好|决定)|再决定|回头再说|不确定|(要是|如果|假如|万一).{0,16}的话",),
    EN: (r"\bnot sure\b|\bthink about it\b|\bhaven'?t decided\b|\bmaybe\b|\bmight\b|\bin case\b",),
}


@dataclass(frozen=True)
class Vocabulary:
    """Compiled patterns per category and language."""

    patterns: dict[str, dict[str, tuple[re.Pattern, ...]]] = field(default_factory=dict)

    @classmethod
    def from_sources(cls, sources: dict[str, dict[str, tuple[str, ...]]]) -> "Vocabulary":
        return cls({category: {language: tuple(re.compile(p, re.I) for p in patterns)
                               for language, patterns in by_language.items()}
                    for category, by_language in sources.items()})

    def extended(self, extra: dict[str, dict[str, list[str]]]) -> "Vocabulary":
        """A copy with ``extra`` patterns added; an unknown category or
        language, or a pattern that does not compile, is a ``ValueError``
        naming it."""
        merged = {c: {lang: list(ps) for lang, ps in by.items()} for c, by in self.patterns.items()}
        for category, by_language in (extra or {}).items():
            if category not in CATEGORIES:
                raise ValueError(f"unknown vocabulary category {category!r}; expected one of {', '.join(CATEGORIES)}")
            for language, patterns in by_language.items():
                if language not in (ZH, EN):
                    raise ValueError(f"vocabulary {category}: unknown language {language!r}; expected zh or en")
                for pattern in patterns:
                    try:
                        merged[category][language].append(re.compile(pattern, re.I))
                    except re.error as exc:
                        raise ValueError(f"vocabulary {category}.{language}: pattern {pattern!r} does not compile: "
                                         f"{exc}") from None
        return Vocabulary({c: {lang: tuple(ps) for lang, ps in by.items()} for c, by in merged.items()})

    def matches(self, category: str, text: str, *, language: str | None = None) -> bool:
        """Whether ``text`` says something of ``category``; both languages are
        tried unless one is named (mixed conversations exist)."""
        return self.find(category, text, language=language) is not None

    def find_all(self, category: str, text: str, *, language: str | None = None) -> list[re.Match]:
        """Every match of ``category`` in ``text``, by position then length
        (longest first): for callers that must skip a match, e.g. a negated
        ``不同意``."""
        found = [m for lang in ((language,) if language else (ZH, EN))
                 for pattern in self.patterns[category].get(lang, ()) for m in pattern.finditer(text)]
        return sorted(found, key=lambda m: (m.start(), -(m.end() - m.start())))

    def find(self, category: str, text: str, *, language: str | None = None) -> re.Match | None:
        by_language = self.patterns[category]
        for lang in ((language,) if language else (ZH, EN)):
            for pattern in by_language.get(lang, ()):
                match = pattern.search(text)
                if match:
                    return match
        return None


DEFAULT = Vocabulary.from_sources(BUILTIN)
