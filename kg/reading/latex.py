"""LaTeX in abstracts: clean text for spaCy, with a map back to the original offsets.

Abstracts on OpenReview are written with inline LaTeX (``$k$-means``,
``PFT$_3$A``, ``$\\times$46``, ``5.48\\%``). spaCy runs on the cleaned text;
every character of the cleaned text remembers which characters of the original
it came from, so spans found in the clean text map back to exact offsets in the
abstract as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Commands whose LaTeX rendering is one Unicode symbol.
SYMBOLS: dict[str, str] = {
    "times": "×",
    "cdot": "·",
    "pm": "±",
    "mp": "∓",
    "approx": "≈",
    "sim": "~",
    "leq": "≤",
    "le": "≤",
    "geq": "≥",
    "ge": "≥",
    "neq": "≠",
    "ll": "≪",
    "gg": "≫",
    "infty": "∞",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "in": "∈",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "zeta": "ζ",
    "eta": "η",
    "theta": "θ",
    "vartheta": "θ",
    "iota": "ι",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "xi": "ξ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "upsilon": "υ",
    "phi": "φ",
    "varphi": "φ",
    "chi": "χ",
    "psi": "ψ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Xi": "Ξ",
    "Pi": "Π",
    "Sigma": "Σ",
    "Phi": "Φ",
    "Psi": "Ψ",
    "Omega": "Ω",
    "ell": "ℓ",
    "star": "*",
    "ast": "*",
    "circ": "∘",
    "sqrt": "√",
    "partial": "∂",
    "nabla": "∇",
    "log": "log",
    "exp": "exp",
    "min": "min",
    "max": "max",
    "sum": "Σ",
    "prod": "Π",
    "%": "%",
    "&": "&",
    "_": "_",
    "#": "#",
    "$": "$",
    "{": "{",
    "}": "}",
    ",": " ",
    ";": " ",
    ":": " ",
    "!": "",
    " ": " ",
    "quad": " ",
    "qquad": " ",
    "ldots": "...",
    "dots": "...",
    "cdots": "...",
}
# Commands that only style their argument: keep the argument, drop the command.
STYLE = frozenset(
    "textbf textit emph underline text textrm texttt textsc mathrm mathbf mathit mathcal "  # noqa: SIM905
    "mathbb mathsf mathtt boldsymbol bm operatorname mbox hat tilde bar widehat widetilde "
    "overline vec left right big Big bigg Bigg".split()
)
_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.DOTALL)  # DOTALL: a backslash may end a line


@dataclass(frozen=True, slots=True)
class Cleaned:
    """Clean text plus, per clean character, the original span it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map a clean span ``[start, end)`` to the original span that produced it."""
        if end <= start:
            pos = (
                self.starts[start]
                if start < len(self.starts)
                else (self.ends[-1] if self.ends else 0)
            )
            return pos, pos
        return self.starts[start], self.ends[end - 1]


def has_markup(text: str) -> bool:
    """Whether :func:`clean` would change the text (it has ``\\``, ``$`` or ``{``)."""
    return "\\" in text or "$" in text or "{" in text


def clean(text: str) -> Cleaned:
    """Strip inline LaTeX markup: ``$k$-means`` → ``k-means``, ``$\\times$46`` → ``×46``.

    Math delimiters, braces, sub/superscript markers and styling commands are
    dropped; symbol commands become their Unicode character; ``\\%`` becomes
    ``%``. Text without LaTeX comes back unchanged with an identity map.
    """
    if not has_markup(text):
        n = len(text)
        return Cleaned(text, tuple(range(n)), tuple(range(1, n + 1)))
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    # Markup that opens (``$``, ``{``, ``\\textbf``) belongs to the next clean
    # character, markup that closes to the previous one, so a clean span maps
    # back to the whole original markup (``$k$-means``, not ``k$-means``).
    pending: int | None = None

    def emit(chars: str, start: int, end: int) -> None:
        nonlocal pending
        for ch in chars:
            out.append(ch)
            starts.append(start if pending is None else pending)
            ends.append(end)
            pending = None

    def opening(pos: int) -> None:
        nonlocal pending
        if pending is None:
            pending = pos

    def closing(pos: int, end: int) -> None:
        if ends and ends[-1] == pos and pending is None:
            ends[-1] = end
        else:
            opening(pos)

    i, n = 0, len(text)
    in_math = False
    while i < n:
        ch = text[i]
        if ch == "\\":
            m = _COMMAND.match(text, i)
            if m is None:  # a lone backslash at the very end
                emit(ch, i, i + 1)
                i += 1
                continue
            name = m.group(1)
            end = m.end()
            if name in SYMBOLS:
                emit(SYMBOLS[name], i, end)
            elif name in STYLE or name.isalpha():
                opening(i)  # styling or unknown command: keep only its argument
            else:
                emit(name, i, end)
            i = end
            continue
        if ch == "$":
            if in_math:
                closing(i, i + 1)
            else:
                opening(i)
            in_math = not in_math
            i += 1
            continue
        if ch == "{" or (in_math and ch == "_"):
            opening(i)
            i += 1
            continue
        if ch == "}":
            closing(i, i + 1)
            i += 1
            continue
        if ch == "~" and not in_math:
            emit(" ", i, i + 1)
            i += 1
            continue
        emit(ch, i, i + 1)
        i += 1
    return Cleaned("".join(out), tuple(starts), tuple(ends))


def clean_label(text: str) -> str:
    """A display label without LaTeX and with folded whitespace."""
    if not has_markup(text):
        # clean() leaves such text unchanged; skipping its offset maps keeps a
        # graph of hundreds of labels cheap. str.split() folds the same
        # (Unicode) whitespace as \s+ does.
        return " ".join(text.split())
    return re.sub(r"\s+", " ", clean(text).text).strip()
