"""Rule tables of the conversions to a target (convert-to-coreml, convert-to-vkc).

A conversion lowers each op with the rule registered for its class. Each family module
keeps one `RuleTable` (`RULES`), filled by decorating its rules
(`@RULES(aten.AddOp, aten.SubOp)`) or by `RULES.add(cls, rule)` for rules a factory
builds; the conversion's `get_rules()` merges its families with `merge_rules`. An op
class ruled twice, in one table or across the families, is an error naming the
conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from xdsl.ir import Operation

BuilderT = TypeVar("BuilderT")
"""The conversion's builder (its `Lowering`), a rule's first argument."""
ResultsT = TypeVar("ResultsT")
"""What a rule returns (the conversion's `Results`)."""
OpT = TypeVar("OpT", bound=Operation)
ValueT = TypeVar("ValueT")


class RuleTable(
    dict[type[Operation], Callable[[BuilderT, Any], ResultsT]], Generic[BuilderT, ResultsT]
):
    """One family's rules by op class (each conversion subclasses it with its builder and
    results types and its `pass_name`)."""

    pass_name: ClassVar[str] = "conversion"

    def __call__(
        self, *op_types: type[OpT]
    ) -> Callable[[Callable[[BuilderT, OpT], ResultsT]], Callable[[BuilderT, OpT], ResultsT]]:
        """A decorator registering its rule for every class of `op_types`."""

        def register(
            fn: Callable[[BuilderT, OpT], ResultsT],
        ) -> Callable[[BuilderT, OpT], ResultsT]:
            for op_type in op_types:
                self.add(op_type, fn)
            return fn

        return register

    def add(self, op_type: type[OpT], fn: Callable[[BuilderT, OpT], ResultsT]) -> None:
        if op_type in self:
            raise ValueError(f"{self.pass_name}: two rules for {op_type.name}")
        self[op_type] = fn


def merge_rules(
    pass_name: str, tables: Iterable[Mapping[type[Operation], ValueT]]
) -> dict[type[Operation], ValueT]:
    """Every table's rules in one dict (an op class in two tables is an error)."""
    merged: dict[type[Operation], ValueT] = {}
    for table in tables:
        for op_type, fn in table.items():
            if op_type in merged:
                raise ValueError(f"{pass_name}: two rule tables lower {op_type.name}")
            merged[op_type] = fn
    return merged


__all__ = ["RuleTable", "merge_rules"]
