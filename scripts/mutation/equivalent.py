"""Mutants shown equivalent: they compute what the code computes, so no test
can tell them apart (issue 18: listed with the reason, not left to survive).

Each entry is mutmut's mutant name, the text its diff must add (so an entry
outlived by a change of the code — mutmut numbers mutants per function — is
reported as a survivor again, not silently excused) and the reason.
"""

EQUIVALENT: dict[str, tuple[str, str]] = {
    "compaction.token_pieces.x_load__mutmut_5": (
        'b.decode("ASCII")',
        "'ASCII' and 'ascii' name the same codec"),
    "compaction.digest.x_source_digest__mutmut_3": (
        "ensure_ascii=None",
        "None is false like False: json.dumps only tests its truth"),
    "compaction.digest.x_source_digest__mutmut_18": (
        'encode("UTF-8")',
        "'UTF-8' and 'utf-8' name the same codec"),
    "conversations.pairing.x_project_pairs__mutmut_28": (
        "found.sort(key=None)",
        "the tuples sorted start with (user created_at, run id) and a run id is unique in its conversation, "
        "so comparing whole tuples orders them exactly as the key does and never reaches the rest"),
    "compaction.extraction.x_sentence_score__mutmut_4": (
        "score = 3",
        "the first weight is added to a score that is still 0, so = and += give the same"),
    "compaction.context.assembly.validator.x_validate__mutmut_76": (
        'owner = None',
        '``owner`` -1 means no message may own the result; None or -2 is never a message position either, so ``by_message`` has no entry for it and every branch goes as with -1'),
    "compaction.context.assembly.validator.x_validate__mutmut_78": (
        'owner = -2',
        '``owner`` -1 means no message may own the result; None or -2 is never a message position either, so ``by_message`` has no entry for it and every branch goes as with -1'),
    "compaction.context.assembly.validator.x_validate__mutmut_99": (
        'else -2',
        '``owner`` -1 means no message may own the result; None or -2 is never a message position either, so ``by_message`` has no entry for it and every branch goes as with -1'),
    "compaction.context.assembly.validator.x_validate__mutmut_132": (
        'else -2',
        '``owner`` -1 means no message may own the result; None or -2 is never a message position either, so ``by_message`` has no entry for it and every branch goes as with -1'),
    "compaction.context.assembly.validator.x_validate__mutmut_155": (
        'owner != -2',
        '``owner`` -1 means no message may own the result; None or -2 is never a message position either, so ``by_message`` has no entry for it and every branch goes as with -1'),
    "compaction.context.assembly.validator.x_validate__mutmut_82": (
        'or True',
        'at i = 0 the mutant reads messages[-1], but the owner it then gives is i - 1 = -1, the sentinel'),
    "compaction.context.assembly.validator.x_validate__mutmut_85": (
        'i >= 0',
        'at i = 0 the mutant reads messages[-1], but the owner it then gives is i - 1 = -1, the sentinel'),
    "compaction.context.assembly.validator.x_validate__mutmut_108": (
        'seen_other = None',
        'None is false like False, and it is only tested for its truth'),
    "compaction.context.assembly.validator.x_validate__mutmut_158": (
        'by_message.get(owner, None)',
        'an owner that is not the sentinel is always a message with calls, and every such message has an entry in by_message: the default is never used'),
    "compaction.context.assembly.validator.x_validate__mutmut_160": (
        'by_message.get(owner, )',
        'an owner that is not the sentinel is always a message with calls, and every such message has an entry in by_message: the default is never used'),
    "compaction.context.assembly.validator.x_validate__mutmut_227": (
        'found.sort(key=None)',
        'the second item of each tuple is its insertion number, unique, so whole tuples sort as the key does and the violations themselves are never compared'),
    "compaction.extraction.x__candidates__mutmut_7": (
        "every.append(Sentence(a, None, raw",
        "the unfiltered sentences only serve the fallback of one best sentence: ranking compares positions only "
        "between tuples equal in every earlier item, where None == None and the stable sort keeps list order, "
        "which is position order; one sentence renders the same without its position"),
    "compaction.extraction.x__most_values_per_character__mutmut_27": (
        "/ max(2, added)",
        "added is never below 2: a sentence is at least one character and either joins its answer's line after a "
        "space or starts a line with its label, so max(1, added) and max(2, added) are both added"),
    "compaction.extraction.x__numbers_and_ids__mutmut_4": (
        "t.upper()",
        "identifiers are only ever compared with identifiers made by this same function (a sentence's facts "
        "with a kept sentence's words), so upper and lower case match the same pairs"),
    "compaction.context.assembly.validator.x_pair_results__mutmut_11": (
        "span = range(min(a + 2, n))",
        "pair_results is for VALID lists, where no message before a call holds a result for it (that is "
        "result_before_call): the longer span adds messages that answer nothing"),
    "compaction.context.assembly.validator.x_pair_results__mutmut_23": (
        "end = a + 2",
        "in a VALID OpenAI list the message right after a call is a tool message answering it, so starting the "
        "scan of the run one message later ends it where it ended"),
    "compaction.engine.claim.x_claim_where__mutmut_11": (
        '" and ".join',
        'SQL keywords are case-insensitive: AND and and are the same operator'),
    "compaction.engine.claim.x__statement__mutmut_11": (
        'job="J"',
        'an unquoted SQL alias is case-insensitive: j and J name the same row'),
    "compaction.engine.claim.x_mark_stale__mutmut_6": (
        '.update(state=JobState.STALE, lease_expires_at=None',
        'mark_stale only moves pending and failed jobs (from_states), and neither holds a lease: no claim, reaper or end leaves one set on them'),
    "compaction.engine.claim.x_mark_stale__mutmut_7": (
        '.update(state=JobState.STALE, lease_owner="", updated_at',
        'mark_stale only moves pending and failed jobs (from_states), and neither holds a lease: no claim, reaper or end leaves one set on them'),
    "compaction.engine.claim.x_job_claim__mutmut_4": (
        'select_related(None)',
        'select_related only saves a query; the prompt version is read lazily all the same'),
    "compaction.engine.claim.x_job_claim__mutmut_10": (
        'Claimant(None,',
        "the claimant's worker is not part of the claim condition: the statement takes the worker as its own parameter"),
    "compaction.engine.claim.x_job_claim__mutmut_74": (
        'attempt._state.adding = None',
        'None is false like False, and Django only tests its truth'),
    "compaction.engine.claim.x_job_claim__mutmut_98": (
        'if job.prompt_version_id == claimant.prompt_version_id',
        "a claim succeeds only under the job's own prompt version (a clause of the statement), so the first test is always false there and the freeze is conditional on frozen_at IS NULL in the database either way"),
    "compaction.context.packing.x__choose_beside_sentence__mutmut_3": (
        "reserve = sentence(offer.pair_count, None)",
        "None is false like False: the omission callback is only told whether summaries precede the sentence, "
        "and the product's (formats.openai_omission_parts) and the tests' only test its truth"),
    "compaction.engine.leases.x_jobs_reap_expired__mutmut_15": (
        '.order_by("lease_expires_at", )',
        'the id only orders leases that expired at the same instant; each is reaped by its own conditional write whatever their order'),
    "compaction.engine.leases.x_jobs_reap_expired__mutmut_18": (
        '        state=JobState.RUNNING',
        'the candidate query only chooses which rows the conditional write looks at; the write checks state, owner, attempt and expiry again, so a row read in excess is refused there and nothing changes'),
    "compaction.engine.leases.x_jobs_reap_expired__mutmut_19": (
        'lease_expired(now), ).order_by(',
        'the candidate query only chooses which rows the conditional write looks at; the write checks state, owner, attempt and expiry again, so a row read in excess is refused there and nothing changes'),
    "compaction.engine.leases.x_jobs_reap_expired__mutmut_91": (
        'Attempt.objects.filter(job_id=job_id, number=used, ).update(',
        'a job that is running with attempts_used = N has its attempt N running: the claim writes both in one statement and every end moves both in one transaction, so the outcome filter never excludes that row'),
    "compaction.drift.corpus.xǁCorpusǁ__contains____mutmut_21": (
        "found = self.joined.find(words,",
        "only whether the words are there is kept: find and rfind over the same span find a hit or both find none"),
    "compaction.drift.corpus.xǁCorpusǁclosest__mutmut_52": (
        "if self.joined.rfind(words[start:start + found], at) != -1)",
        "the filter only asks whether the slice is there: find and rfind over the same span find a hit or both "
        "find none (the text is then named by _first_holding's own find)"),
    "compaction.drift.corpus.xǁCorpusǁclosest__mutmut_19": (
        "first, index, length = 0, None, 1",
        "the length only sets the least run searched, max(least, length + 1), and least is at least 2: a length "
        "of 0 or 1 gives least either way, now and when the answer is read on after texts were added"),
    "compaction.drift.corpus.xǁCorpusǁ_shares__mutmut_1": (
        "at: int = 1",
        "every caller (_longest) passes the offset: the default is never used"),
    "compaction.drift.corpus.xǁCorpusǁ_longest__mutmut_15": (
        "middle = (low + high + 2) // 2",
        "while low < high, (low + high + 2) // 2 is in (low, high] as (low + high + 1) // 2 is: each keeps the "
        "halving's invariant (a run of low is shared, none longer than high) and ends at the same longest run"),
    "compaction.drift.chain.x__digits_of__mutmut_12": (
        'return key.split(":")[+1]',
        "a clock time's key is H:MM (values.clock_times), two parts: the second is the last"),
    "compaction.drift.chain.x__digits_of__mutmut_15": (
        'return key if (kind == "amount") or True else ""',
        "holding_value is asked only of a date, a clock time or an amount (DriftInput.value_sources reads a word from the lower-cased corpora and never asks it): the other kinds' branch is never reached"),
    "compaction.drift.chain.x__digits_of__mutmut_19": (
        'return key if kind == "amount" else "XXXX"',
        "holding_value is asked only of a date, a clock time or an amount (DriftInput.value_sources reads a word from the lower-cased corpora and never asks it): the other kinds' branch is never reached"),
    "compaction.drift.chain.x__holds_value__mutmut_23": (
        "return True",
        "holding_value is asked only of a date, a clock time or an amount (DriftInput.value_sources reads a word from the lower-cased corpora and never asks it): the other kinds' branch is never reached"),
    "compaction.drift.chain.x__other_digits__mutmut_4": (
        'search("XX\\nXX".join(texts))',
        "the joiner only keeps the texts apart for the one search: one without a digit finds a digit other than "
        "0-9 exactly when a text writes one, as the newline does"),
    "compaction.drift.chain.x__name__mutmut_1": (
        '"XXchain indexXX"',
        "the kind only names the chain indexes among the reader's remembered values (each kind its own limit); "
        "_name is the one place it is written, for remember and remembered_chain alike, and no other kind uses it"),
    "compaction.drift.chain.x__name__mutmut_2": (
        '"CHAIN INDEX"',
        "the kind only names the chain indexes among the reader's remembered values (each kind its own limit); "
        "_name is the one place it is written, for remember and remembered_chain alike, and no other kind uses it"),
    "compaction.drift.chain.xǁChainIndexǁper_assistant__mutmut_8": (
        '"XXper assistantXX"',
        "the first item only keeps the per-answer readings apart from the parts of _PARTS, named by strings: "
        "any tuple does"),
    "compaction.drift.chain.xǁChainIndexǁper_assistant__mutmut_9": (
        '"PER ASSISTANT"',
        "the first item only keeps the per-answer readings apart from the parts of _PARTS, named by strings: "
        "any tuple does"),
    "compaction.drift.chain.xǁChainIndexǁholding_value__mutmut_10": (
        "if tools_from <= len(self.tools)",
        "with no text added since, _holding reads two empty lists: it adds nothing, and the entry written "
        "again is the one there"),
    "compaction.drift.chain.xǁChainIndexǁholding_value__mutmut_11": (
        "assistants_from <= len(self.assistants)",
        "with no text added since, _holding reads two empty lists: it adds nothing, and the entry written "
        "again is the one there"),
    "compaction.drift.chain.xǁChainIndexǁpart__mutmut_26": (
        "found = extend(empty(), self, None, 0, 0)",
        "every part reads the users from that start as a slice (index.users[u:]), and a slice from None starts "
        "at 0"),
    "compaction.drift.wrong.x_check_retracted_consent__mutmut_35": (
        "saying[-1].order >= anchor.order",
        "chain order is unique per user message, so an equal order is the anchor's own message: it is set to the "
        "message it already is"),
    "compaction.drift.wrong.x_check_retracted_consent__mutmut_70": (
        "if (last.hold) or True",
        "final_state gives the state hold only with a message that holds: the anchor itself when its own state is "
        "hold (a hold wins), else the hold event that changed it; so last.hold is set whenever a line is reported"),
    "compaction.drift.extra.x__asks__mutmut_17": (
        "kept(None, text, read)",
        "the kind only keeps the asks apart from the reader's other kinds of readings (each kind its own texts); "
        "no other reading is kept under None, so None keeps them apart as well"),
    "compaction.drift.extra.x__asks__mutmut_23": (
        '"XXassistant asksXX"',
        "the kind only keeps the asks apart from the reader's other kinds of readings; a name no other reading "
        "uses keeps them apart as well"),
    "compaction.drift.extra.x__asks__mutmut_24": (
        '"ASSISTANT ASKS"',
        "the kind only keeps the asks apart from the reader's other kinds of readings; a name no other reading "
        "uses keeps them apart as well"),
    "compaction.drift.extra.x_check_assistant_ask_as_todo__mutmut_5": (
        "if (todos) or True else ()",
        "without a to-do the loop over the to-dos never reads ``asks``: reading the chain's asks anyway changes "
        "the work, not a finding"),
    "compaction.drift.extra.x_check_assistant_ask_as_todo__mutmut_6": (
        "per_assistant(None,",
        "the name only keeps the asks apart from the chain index's other per-answer readings; no other reading "
        "is kept under None, so None keeps them apart as well"),
    "compaction.drift.extra.x_check_assistant_ask_as_todo__mutmut_10": (
        '"XXasksXX"',
        "the name only keeps the asks apart from the chain index's other per-answer readings; a name no other "
        "reading uses keeps them apart as well"),
    "compaction.drift.extra.x_check_assistant_ask_as_todo__mutmut_11": (
        '"ASKS"',
        "the name only keeps the asks apart from the chain index's other per-answer readings; a name no other "
        "reading uses keeps them apart as well"),
    "compaction.drift.extra.x_check_tool_detail_in_requests__mutmut_3": (
        "break",
        "user requests is the note's first section (the six headings in order, else MalformedNote), so the first "
        "line of another section is followed only by lines of other sections, which the loop skips anyway"),
    "compaction.drift.lost.x_check_lost_constraint__mutmut_16": (
        "order=-2",
        "a parent's condition needs an order below every user message's (0 on) and equal to the other parent "
        "conditions': -2 is that as well as -1"),
    "compaction.drift.lost.x__withdrawn__mutmut_5": (
        "if (condition.message_id) or True",
        "without a message id the lookup is user_by_id.get(None), and no user message has the id None: None, as "
        "the else gives"),
    "compaction.drift.lost.x__withdrawn__mutmut_32": (
        "state = None",
        "the state is only compared with 'consent': any other starting value withdraws nothing, as 'hold' does"),
    "compaction.drift.lost.x__withdrawn__mutmut_33": (
        'state = "XXholdXX"',
        "the state is only compared with 'consent': any other starting value withdraws nothing, as 'hold' does"),
    "compaction.drift.lost.x__withdrawn__mutmut_34": (
        'state = "HOLD"',
        "the state is only compared with 'consent': any other starting value withdraws nothing, as 'hold' does"),
    "compaction.drift.length.x__brings_new__mutmut_11": (
        "message_id=None",
        "a condition read here is only asked whether the parent keeps it (kept_anywhere, keeps), which reads its "
        "clause, operator, numbers and terms, never where it came from"),
    "compaction.drift.length.x__brings_new__mutmut_12": (
        "order=None",
        "a condition read here is only asked whether the parent keeps it (kept_anywhere, keeps), which reads its "
        "clause, operator, numbers and terms, never where it came from"),
    "compaction.drift.length.x__brings_new__mutmut_13": (
        "section=None",
        "a condition read here is only asked whether the parent keeps it (kept_anywhere, keeps), which reads its "
        "clause, operator, numbers and terms, never where it came from"),
    "compaction.engine.finish.x__record__mutmut_11": (
        "if (not code) or True else None",
        "a failed attempt's text is never used: the generation, what is kept beside it and the one-statement "
        "finish are all for an attempt without a failure code, and summary_text only reads the answer"),
    "compaction.engine.finish.x__record__mutmut_70": (
        "select_for_update().filter(pk=None)",
        "the lock serialises the numbering of a generation written by the general path; on PostgreSQL that "
        "path is taken for a good answer only after the one statement moved nothing (the job is no longer "
        "held or no longer current), so its conditional move fails too and nothing is numbered; SQLite "
        "ignores select_for_update and serialises its writers itself"),
    "compaction.engine.finish.x__finish_success_pg__mutmut_6": (
        '(result.finish_reason or "XXXX")[:50]',
        "a good attempt's finish_reason is always 'stop' (SPEC §5: one normal stop, the contract's "
        "finish_reason rule; the hand-off binding's judge applies it too): never empty, never over 50"),
    "compaction.engine.finish.x__finish_success_pg__mutmut_7": (
        '(result.finish_reason or "")[:51]',
        "a good attempt's finish_reason is always 'stop' (SPEC §5: one normal stop, the contract's "
        "finish_reason rule; the hand-off binding's judge applies it too): never empty, never over 50"),
    "compaction.engine.finish.x__finish_success_pg__mutmut_11": (
        "beside is not None) or True else contextlib.nullcontext",
        "outside a transaction, one statement in autocommit is its own transaction: wrapping it in atomic() "
        "gives the same one transaction (and a collision is retried either way)"),
    "compaction.engine.finish.x__recorded_before__mutmut_35": (
        "if (outcome == AttemptOutcome.SUCCEEDED) or True else None",
        "a job has a generation only once an attempt of it succeeded (written with that success), and a "
        "succeeded job is never claimed again: for a failed outcome the lookup finds none, as None says"),
    "compaction.engine.finish.x__recorded_before__mutmut_38": (
        'values_list(flat=True).first()',
        "values_list with no field names every column, and flat=True gives each row's first one: the id"),
    "compaction.engine.finish.x_attempt_release__mutmut_29": (
        "outcome=AttemptOutcome.INFRASTRUCTURE, failure_detail=",
        "a running attempt has no failure code: the claim writes it with '' and only an end sets one, so "
        "writing '' again changes nothing"),
    "compaction.engine.finish.x_attempt_release__mutmut_35": (
        "Attempt.objects.filter(job_id=job_id, outcome=AttemptOutcome.RUNNING)",
        "a job has at most one running attempt, its last (number = attempts_used): the claim writes both in "
        "one statement and every end moves both in one transaction, so 'running' alone finds that attempt"),
    "compaction.engine.finish.x_attempt_release__mutmut_36": (
        "Attempt.objects.filter(job_id=job_id, number=number, ).update(",
        "the job's conditional move just found it running with attempts_used = number, and the attempt of "
        "that number of a running job is running (the claim writes both, every end moves both): the "
        "outcome filter never excludes that row"),
    "compaction.engine.finish.x__record__mutmut_16": (
        "beside = binding.generation_prepare(job=job, text=text) if (not code) or True else None",
        "what a binding keeps beside a generation is written only with the generation, which a failed attempt "
        "never gets; preparing it only reads (the hand-off binding's checks catch their own faults)"),
    "compaction.extraction.x__most_values_per_character__mutmut_33": (
        "key >= best_key",
        "a key ends with the sentence's answer and position, which no two sentences share, so two keys are "
        "never equal and >= chooses as > does"),
}
