"""Tool services the tests serve, each a `DynamicToolService` subclass."""
