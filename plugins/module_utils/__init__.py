"""Shared code for the applyset.kubernetes collection."""
