"""Converters for the aten shape family."""

from __future__ import annotations

from qopt.frontend.converters.table import ConverterTable

CONVERTERS = ConverterTable()
