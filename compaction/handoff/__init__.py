"""The rolling hand-off note's pure rules (SPEC §7, seed 001, seed 002 §6).

``note`` is the six-section format every generation is written and read in;
``material`` is what a generation is written from (settled pairs after the
parent's cut, with the tool results kept beside them for the drift checks);
``vocabulary`` the one set of phrases the builder and the drift checks read
with; ``clauses`` how a user message is read clause by clause with it;
``trigger`` when a generation is planned and how over-long material is
batched (SPEC §7, seed 002 §6.5–§6.6, §12); ``prompt`` the frozen
``handoff@1`` prompt. The offline builder is
``compaction.providers.handoff_extractive``.
"""
