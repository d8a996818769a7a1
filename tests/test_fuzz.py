"""A seeded mutation fuzz in CI: a few hundred damaged models through every command, only our own errors.

The mutants (tests/mutation_fuzz.py) are the examples and a sample of the suite's models, broken in their bytes
and in their protobuf structure. check, show (table, json, html), lift, lower and run must each either work or
raise a QTypesError (exit 2, one line); any other exception, or a call running past its time guard, is a
crash, reported with what rebuilds the mutant. `python tests/fuzz_long.py` runs the same fuzzer longer.
"""

from __future__ import annotations

import collections

from mutation_fuzz import memory_guard, mutants, seed_files, exercise

FUZZ_SEED = 20
MUTANTS = 300

# Mutants whose crash lies in another area's code, kept out of this test until that area's fix is merged.
# The lead empties this list after merging those fixes; each entry names the crash site and the owner.
KNOWN_CRASHES_IN_OTHER_AREAS: dict[str, str] = {}


def test_every_command_raises_only_our_own_errors_on_damaged_models(tmp_path):
    seeds = seed_files(sample=40)
    outcomes: collections.Counter = collections.Counter()
    crashes = []
    with memory_guard(3 << 30):
        for m in mutants(seeds, MUTANTS, FUZZ_SEED):
            found = exercise(m, tmp_path, seconds=30, outcomes=outcomes)
            crashes += [c for c in found if m.key not in KNOWN_CRASHES_IN_OTHER_AREAS]
    assert not crashes, "\n".join(map(str, crashes))
    for command in ("check", "show", "lift", "lower", "run"):  # the mutants reach past the reader, not only into it
        assert outcomes[command, "ok"] >= MUTANTS // 10, outcomes
        assert outcomes[command, "refused"] >= MUTANTS // 20, outcomes
