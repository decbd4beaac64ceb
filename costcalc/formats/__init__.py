"""Translators from other projects' config files to ModelSpec fields."""
