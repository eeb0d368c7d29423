"""The registry's errors as Confluent's Schema Registry answers them: an
HTTP status and a JSON body ``{"error_code": N, "message": "..."}`` whose
``error_code`` clients switch on (confluent_kafka's SchemaRegistryError
carries it)."""
from __future__ import annotations

from headrace.errors import HeadraceError

# Confluent's error codes (docs/schema-registry.md lists when each is sent).
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMA_VERSION_SOFT_DELETED = 40406
SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_LEVEL_MODE_NOT_CONFIGURED = 40409
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
FORWARDING_ERROR = 50003
UNAUTHORIZED = 401
FORBIDDEN = 40301  # Confluent security plugin: "User is denied operation ..."


class RegistryError(HeadraceError):
    """An answer other than success: ``status`` (HTTP) and ``code``
    (Confluent's error_code) with a one-line message."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self) -> dict:
        return {"error_code": self.code, "message": self.message}


def not_found(code: int, message: str) -> RegistryError:
    return RegistryError(404, code, message)


def unprocessable(code: int, message: str) -> RegistryError:
    return RegistryError(422, code, message)


def subject_not_found(subject: str) -> RegistryError:
    return not_found(SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version) -> RegistryError:
    return not_found(VERSION_NOT_FOUND, f"Version {version} not found for subject '{subject}'.")


def schema_not_found(what: str = "Schema not found") -> RegistryError:
    return not_found(SCHEMA_NOT_FOUND, what)


def store_error(message: str) -> RegistryError:
    return RegistryError(500, STORE_ERROR, message)
