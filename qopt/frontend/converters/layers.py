"""Converters for the aten layers family."""

from __future__ import annotations

from qopt.frontend.converters.table import ConverterTable

CONVERTERS = ConverterTable()
