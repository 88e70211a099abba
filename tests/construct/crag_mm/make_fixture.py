"""Writes ``single_turn.parquet``: two rows in the shape of CRAG-MM's single-turn set.

CRAG-MM (Meta's multimodal RAG benchmark) stores, per session: ``session_id``, the image as
a Hugging Face ``Image`` struct (``bytes``, ``path``), ``image_url``, ``turns`` (a list of
``interaction_id``, ``domain``, ``query_category``, ``dynamism``, ``query``,
``image_quality``) and ``answers`` (a list of ``interaction_id``, ``ans_full``). The images
are the bundled sample's. Run from this folder: ``python make_fixture.py``.
"""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
ROWS = [
    ("bibimbap", "s-001", "i-001", 3, "what is the dish in this bowl and how is it eaten?",
     "This is bibimbap, a Korean rice dish; you stir the rice, vegetables, gochujang and egg "
     "together before eating."),
    ("eiffel-tower", "s-002", "i-002", 7, "when was this tower built and why?",
     "The Eiffel Tower was built from 1887 to 1889 as the entrance arch of the 1889 World's "
     "Fair in Paris."),
]  # fmt: skip


def main() -> None:
    table = pa.table(
        {
            "session_id": [r[1] for r in ROWS],
            "image": [
                {"bytes": (HERE / "images" / f"{r[0]}.png").read_bytes(), "path": f"{r[0]}.png"}
                for r in ROWS
            ],
            "image_url": [None for _ in ROWS],
            "turns": [
                [
                    {
                        "interaction_id": r[2],
                        "domain": r[3],
                        "query_category": "simple",
                        "dynamism": "static",
                        "query": r[4],
                        "image_quality": "normal",
                    }
                ]
                for r in ROWS
            ],
            "answers": [[{"interaction_id": r[2], "ans_full": r[5]}] for r in ROWS],
        }
    )
    pq.write_table(table, HERE / "single_turn.parquet")


if __name__ == "__main__":
    main()
