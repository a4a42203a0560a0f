"""Spyre CI Relay: upstream change events in, selected spyre test runs out."""
