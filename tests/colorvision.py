"""Colour-vision deficiency simulation (Machado, Oliveira and Fernandes 2009, severity 1.0) and CIE
Lab distances, to check that a palette stays distinct for people with deuteranopia or protanopia."""

from __future__ import annotations

import itertools
import math

# Machado et al. 2009, Table 1, severity 1.0, applied to linear RGB.
MACHADO = {
    "normal": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
}


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b = rgb
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def seen(hex_color: str, vision: str) -> tuple[float, float, float]:
    """The colour's CIE Lab coordinates as a person with `vision` sees it."""
    rgb = [_linear(int(hex_color[i:i + 2], 16) / 255) for i in (1, 3, 5)]
    m = MACHADO[vision]
    simulated = tuple(min(1.0, max(0.0, sum(m[row][k] * rgb[k] for k in range(3)))) for row in range(3))
    return _lab(simulated)  # type: ignore[arg-type]


def closest_pair(colors: dict[str, str], vision: str) -> tuple[float, str, str]:
    """The smallest CIE76 distance between two colours of the palette, and which two."""
    return min((math.dist(seen(a, vision), seen(b, vision)), na, nb) for (na, a), (nb, b) in itertools.combinations(colors.items(), 2))
