"""What the OpenAPI schema says beyond what the serializers and parameters
declare (issue 12 item 8): every bound the API enforces, so a client — or
schemathesis — reading the schema is never refused for a request the schema
allows (``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``).

* Text never holds a NUL (Django's fields and PostgreSQL refuse it): every
  free-text query parameter says so with a pattern.
* A reason or note must hold something besides spaces.
* A review gives its note once: as ``note`` or as ``reason``, not both.
"""

from __future__ import annotations

# Text with no NUL; and text with no NUL holding at least one character that is not a space.
NO_NUL = "^[^\\u0000]*$"
NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


def _no_nul(schema: dict) -> None:
    if schema.get("type") == "string" and not ({"enum", "pattern", "format"} & set(schema)):
        schema["pattern"] = NO_NUL
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        _no_nul(schema["items"])


def state_every_bound(result, generator, request, public):
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query":
                    _no_nul(parameter.get("schema", {}))
    schemas = result.get("components", {}).get("schemas", {})
    reason = schemas.get("ReasonRequest", {}).get("properties", {}).get("reason")
    if reason is not None:
        reason["pattern"] = NOT_BLANK
    review = schemas.get("ReviewInputRequest")
    if review is not None:
        for name in ("note", "reason"):
            field = review["properties"].get(name)
            if field is not None:
                field.update(minLength=1, pattern=NOT_BLANK)
        review["oneOf"] = [
            {"required": ["note"], "not": {"required": ["reason"]}},
            {"required": ["reason"], "not": {"required": ["note"]}},
        ]
    return result
