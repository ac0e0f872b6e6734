from __future__ import annotations

import secrets

from django.db import connection

from tests.knowledge.factories import make_item


def test_an_items_vector_stays_in_its_row_when_the_row_is_too_long_for_one(cast):
    # Random hex does not compress: title, content and the (larger) vector together pass PostgreSQL's TOAST
    # threshold, so one of them must leave the row, and it must not be the vector the exact scan reads.
    item = make_item(cast.project, "Rotation of the signing keys", secrets.token_hex(500))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT embedding IS NOT NULL, pg_column_toast_chunk_id(embedding),"
            " pg_column_toast_chunk_id(content) IS NOT NULL FROM knowledge_knowledgeitem WHERE id = %s",
            [item.pk],
        )
        assert cursor.fetchone() == (True, None, True)
