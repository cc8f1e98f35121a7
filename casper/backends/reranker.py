"""CrossEncoderReranker: scores (query, passage) pairs with a sentence-transformers CrossEncoder.

Imports: casper.backends.loading helpers; sentence_transformers when the model loads (heavy).
Scores are aligned with the input; sorting and top-k belong to `casper.search.fusion`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from casper.backends.loading import (
    hub_offline,
    load_failure,
    local_model_path,
    not_cached,
    quiet_load_failure,
    quiet_transformers,
)

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder


class CrossEncoderReranker:
    """Reranker over `CrossEncoder.predict` (hub id or local path)."""

    def __init__(
        self,
        model_id_or_path: str,
        batch_size: int = 32,
        device: str = "cpu",
        max_length: int | None = None,
    ) -> None:
        self.name = model_id_or_path
        self.batch_size = batch_size
        local_only = local_model_path(model_id_or_path) is not None or hub_offline()
        missing = not_cached("rerank model", model_id_or_path)  # said plainly, nothing imported
        if missing is not None:
            raise missing
        self._model = _load(model_id_or_path, device, local_only, max_length)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in input order (higher is more relevant)."""
        if not texts:
            return []
        raw = self._model.predict(
            [(query, text) for text in texts],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        # Two-label heads put "relevant" last; one-label heads are already (n,).
        scores = np.asarray(raw, dtype=np.float64).reshape(len(texts), -1)[:, -1]
        return [float(s) for s in scores]


def _load(model: str, device: str, local_only: bool, max_length: int | None) -> CrossEncoder:
    try:
        from sentence_transformers import CrossEncoder

        with quiet_load_failure(), quiet_transformers():
            return CrossEncoder(
                model, device=device, local_files_only=local_only, max_length=max_length
            )
    except Exception as exc:  # any load failure is a user-facing ModelUnavailable
        raise load_failure("rerank model", model, exc) from exc
