"""Readers and writers behind ``funcgrad.save`` / ``funcgrad.load`` (see ``funcgrad.serialization``)."""
