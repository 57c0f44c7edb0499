"""Converters for the aten reduction family."""

from __future__ import annotations

from qopt.frontend.converters.table import ConverterTable

CONVERTERS = ConverterTable()
