"""``sanitize``: what the observation space cannot hold becomes U+FFFD, in one regex pass."""

import random

from seal_envs.spaces import PRINTABLE, UnicodeText, _holdable, sanitize


def by_character(text: str) -> str:
    """The definition ``sanitize`` replaced (issue 16): every character tested on its own."""
    return "".join(ch if _holdable(ch) else "\ufffd" for ch in text)


def test_sanitize_maps_every_code_point_as_the_definition_does():
    every = "".join(map(chr, range(0x110000)))
    assert sanitize(every, 1 << 21) == by_character(every)
    assert set(sanitize(every, 1 << 21)) == set(PRINTABLE) | {"\ufffd"}
    ascii_only = "".join(map(chr, range(0x80))) * 2  # the ASCII path: its own small class
    assert sanitize(ascii_only, 1 << 10) == by_character(ascii_only)
    for ch in map(chr, range(0x80)):  # each control on its own, in ASCII text that is otherwise clean
        assert sanitize(f"a{ch}b", 8) == by_character(f"a{ch}b"), repr(ch)


def test_sanitize_on_mixed_text_and_the_cut():
    rng = random.Random(0)
    for _ in range(500):
        text = "".join(chr(rng.choice([rng.randrange(0x110000), rng.randrange(0x80), rng.randrange(0xD700, 0xE100)]))
                       for _ in range(rng.randrange(60)))
        assert sanitize(text, 1 << 16) == by_character(text)
        assert sanitize(text, 20) == (by_character(text) if len(text) <= 20 else by_character(text)[:19] + "\u2026")
    assert UnicodeText(64).contains(sanitize("a\x00b\n\U0001F600\ud800", 64))
    assert sanitize("plain ascii", 5) == "plai\u2026"
