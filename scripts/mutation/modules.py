"""The rule modules mutation testing covers (issue 18), each with the tests
that state its rule. Only those tests run against its mutants, so a module
takes minutes, not the whole suite's time.

``functions`` narrows a module to the functions that hold a rule (a glob over
mutmut's mutant names, ``x_<function>__mutmut_*``; methods are
``x<Class>ǁ<method>__mutmut_*``): the rest of such a module is plumbing
(logging, escaping what the database refuses) that other tests cover.
``db``: the tests need PostgreSQL, so the module runs one mutant at a time
(every run shares the one test database). ``sqlite``: the mutants that
survive on PostgreSQL are run again on the SQLite default (a module with a
branch per database).
"""

from __future__ import annotations

MODULES: dict[str, dict] = {
    "conversations/pairing.py": {"tests": ["tests/conversations/test_pairing.py"]},
    "compaction/planning.py": {"tests": ["tests/compaction/test_planning.py"]},
    "compaction/digest.py": {"tests": ["tests/compaction/test_digest.py"]},
    "compaction/contract.py": {"tests": ["tests/compaction/test_contract.py"]},
    "compaction/extraction.py": {"tests": ["tests/compaction/test_extraction.py"]},
    # Exact cl100k counts of ASCII text from tables (issue 15): every count
    # must be encode_ordinary's; test_tokens.py states the loading.
    "compaction/token_pieces.py": {"tests": ["tests/compaction/test_token_pieces.py",
                                             "tests/compaction/test_tokens.py"]},
    "compaction/context/assembly/validator.py": {"tests": ["tests/compaction/context/assembly/test_validator.py"]},
    # Counting only what the budget needs (issue 15): the lower bounds and
    # the per-assembly memo. (trim.py is one large function whose mutants
    # need the property tests: hours here, so its walk was mutated by hand.)
    "compaction/context/assembly/counting.py": {
        "tests": ["tests/compaction/context/assembly/test_lazy_counting.py",
                  "tests/compaction/context/assembly/test_counting.py"],
        "functions": ["compaction.context.assembly.counting.x_message_floor__mutmut_*",
                      "compaction.context.assembly.counting.xǁMessageTokensǁ*"],
    },
    "compaction/context/assembly/buckets.py": {
        "tests": ["tests/compaction/context/assembly/test_lazy_counting.py",
                  "tests/compaction/context/assembly/test_counting.py"],
        "functions": ["compaction.context.assembly.buckets.x_measure__mutmut_*",
                      "compaction.context.assembly.buckets.x_unit_floor__mutmut_*"],
    },
    "compaction/engine/attempts.py": {
        "tests": ["tests/compaction/engine/test_attempts.py", "tests/compaction/engine/test_leases.py",
                  "tests/compaction/engine/test_finish_conditions.py", "tests/compaction/engine/test_finish.py",
                  "tests/compaction/bindings/test_segments.py"],
        "db": True,
    },
    "compaction/engine/claim.py": {
        "tests": ["tests/compaction/engine/test_claim.py", "tests/compaction/engine/test_claim_statement.py"],
        # The claim condition and what a claim writes. ``sqlite``: what
        # survives on PostgreSQL runs again on the embedded SQLite default,
        # where the statement's other branch is the one taken.
        "functions": ["compaction.engine.claim.x_claim_where__mutmut_*", "compaction.engine.claim.x__statement__mutmut_*",
                      "compaction.engine.claim.x__refusal__mutmut_*", "compaction.engine.claim.x_mark_stale__mutmut_*",
                      "compaction.engine.claim.x_job_claim__mutmut_*"],
        "db": True,
        "sqlite": True,
    },
    "compaction/engine/leases.py": {
        "tests": ["tests/compaction/engine/test_leases.py"],
        # The reaper; the scanner's retry timing (jobs_take_due) is not a rule of issue 18's list.
        # The reaper and the one rule of a lease's end it shares with the settle.
        "functions": ["compaction.engine.leases.x_jobs_reap_expired__mutmut_*",
                      "compaction.engine.leases.x_lease_held__mutmut_*",
                      "compaction.engine.leases.x_lease_expired__mutmut_*"],
        "db": True,
    },
    "compaction/engine/finish.py": {
        "tests": ["tests/compaction/engine/test_finish.py", "tests/compaction/engine/test_finish_conditions.py",
                  "tests/compaction/engine/test_finish_records.py", "tests/compaction/engine/test_attempts.py",
                  "tests/compaction/drift/test_services.py"],
        # The finish condition (SPEC §5: an end moves the job only while its
        # worker still holds it; a good answer becomes a generation only while
        # the binding is current, else source_changed and stale), the release,
        # the settle and a retried finish's report. Its SQL (the one-statement
        # success) is mutated by the SQL pass; the escaping of what the
        # database refuses (_storable, _ascii, _cap) is issue 12's, tested there.
        "functions": ["compaction.engine.finish.x__record__mutmut_*",
                      "compaction.engine.finish.x__finish_success_pg__mutmut_*",
                      "compaction.engine.finish.x__recorded_before__mutmut_*",
                      "compaction.engine.finish.x_attempt_release__mutmut_*",
                      "compaction.engine.finish.x_attempt_settle__mutmut_*"],
        # ``sqlite``: a good attempt's general path (the ORM's move, record and
        # generation) is the SQLite one; on PostgreSQL one statement does it.
        "db": True,
        "sqlite": True,
    },
    "compaction/drift/checkers.py": {"tests": ["tests/compaction/drift/test_checkers.py"]},
    "compaction/drift/wrong.py": {"tests": ["tests/compaction/drift/test_checkers.py"]},
    "compaction/drift/extra.py": {"tests": ["tests/compaction/drift/test_checkers.py"]},
    "compaction/drift/lost.py": {"tests": ["tests/compaction/drift/test_checkers.py"]},
    "compaction/drift/length.py": {"tests": ["tests/compaction/drift/test_checkers.py"]},
    # The checks' readings of the chain (SPEC §8): its messages, a note's
    # lines and the user's conditions; the quote search; the chain index.
    # (mutmut leaves decorated functions alone: UserReading's ``read_once``
    # readings and LineReading's markers are not mutated; test_checkers.py
    # states them through the checks.)
    "compaction/drift/reading.py": {"tests": ["tests/compaction/drift/test_reading.py",
                                              "tests/compaction/drift/test_checkers.py",
                                              "tests/compaction/drift/test_corpus_and_chain.py"]},
    "compaction/drift/corpus.py": {"tests": ["tests/compaction/drift/test_corpus_and_chain.py"]},
    "compaction/drift/chain.py": {"tests": ["tests/compaction/drift/test_corpus_and_chain.py",
                                            "tests/compaction/drift/test_checkers.py"]},
    # Packing and selection last: issue 11 rewrites packing (prefer=raw).
    "compaction/context/selection.py": {"tests": ["tests/compaction/context/test_selection.py"]},
    "compaction/context/choice.py": {"tests": ["tests/compaction/test_choice.py",
                                               "tests/compaction/context/test_packing.py"]},
    "compaction/context/lazy.py": {"tests": ["tests/compaction/context/test_lazy.py"]},
    "compaction/context/packing.py": {"tests": ["tests/compaction/context/test_packing.py"]},
}
