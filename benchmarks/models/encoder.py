"""The transformer of issue 16's hand measurements: zoo:transformer's encoder at d384 x 6 layers (6 heads).

    pitstop train benchmarks/models/encoder.py:build --input 'int64[B,128]{0,1000}' --target 'int64[B]{0,10}'
"""

from __future__ import annotations

from pitstop.models.zoo import SmallTransformer


def build() -> SmallTransformer:
    return SmallTransformer(d_model=384, heads=6, layers=6)
