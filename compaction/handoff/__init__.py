"""The rolling hand-off note's pure rules (SPEC §7, §8; seed 001, seed 002 §6).

``note`` is the six-section format every generation is written and read in;
``material`` is what a generation is written from (settled pairs after the
parent's cut, with the tool results kept beside them for the drift checks).
Shared by the builder and the drift checks (``compaction.drift``), one home
each: ``vocabulary`` the phrases everything reads with, ``reader`` how a text
is read with them (once), ``reading`` the text rules (normalisation, key
terms, ids, negation, what a line keeps, what is news), ``clauses`` how a
user message is cut and what role each clause has, ``values`` what a
looked-up value is, ``results`` what a tool result proves. ``builder`` is the
offline ``handoff-extractive-v1`` note builder; ``trigger`` when a generation
is planned and how over-long material is batched (SPEC §7, seed 002
§6.5–§6.6, §12); ``prompt`` the frozen ``handoff@1`` prompt.
"""
