"""The exceptions the compiled schema checks raise (core/review_schema.py,
core/rubric_schema.py): fastjsonschema's classes, defined once here so that
checking a reply imports nothing of fastjsonschema (whose import costs a good
part of a bare interpreter's start) and both checks raise the same class."""


class JsonSchemaValueException(ValueError):
    """A document the schema refuses (fastjsonschema's class, defined here)."""

    def __init__(
        self,
        message: str,
        value: object = None,
        name: str | None = None,
        definition: object = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.value = value
        self.name = name
        self.definition = definition
        self.rule = rule


class JsonSchemaValuesException(ValueError):
    """Named by the code for every failure at once; compiled to fail fast, it is never raised."""
