"""Parsers of host tool outputs and files: small, typed, tolerant of the formats met in the field.

Each takes text and returns values; none runs anything or reads the profile.
"""
