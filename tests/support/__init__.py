"""Test support: stand-ins, tiny models, templates and mutations the tests share."""
