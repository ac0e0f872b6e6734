"""What the OpenAPI schema says of the shared API plumbing, so that it tells the truth: a request body
read by an InputSerializer refuses every field it does not declare (``additionalProperties: false``), and
a StrictCharField's text holds no NUL (nor, for a name, a bidirectional override or a noncharacter)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension


class InputSerializerExtension(OpenApiSerializerExtension):
    target_class = "contextforge.api.validation.InputSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema

    def get_name(self, auto_schema, direction):
        return None  # the serializer's own component name


LONG_TEXT = 1000


class StrictCharFieldExtension(OpenApiSerializerFieldExtension):
    target_class = "contextforge.api.fields.StrictCharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        # Not on long texts: a pattern over up to 100,000 characters makes schema-driven generation too
        # slow to test (tests/schemathesis.toml lists the operations whose long text may hold a NUL).
        short = (self.target.max_length or LONG_TEXT) < LONG_TEXT
        if direction == "request" and "pattern" not in schema and self.target.schema_pattern and short:
            schema["pattern"] = self.target.schema_pattern
        return schema
