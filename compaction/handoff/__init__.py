"""The rolling hand-off note's pure rules (SPEC §7, seed 001, seed 002 §6).

``note`` is the six-section format every generation is written and read in;
``material`` is what a generation is written from (settled pairs after the
parent's cut, with the tool results kept beside them for the drift checks).
"""
