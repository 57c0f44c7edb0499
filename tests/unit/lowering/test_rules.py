"""The conversions' rule tables (qopt/lowering/rules.py): one rule per op class."""

from __future__ import annotations

import pytest

from qopt.dialects.aten import elementwise as el
from qopt.lowering import rules
from qopt.lowering.convert_to_coreml import get_rules as coreml_rules
from qopt.lowering.convert_to_coreml.lowering import RuleTable as CoremlRuleTable
from qopt.lowering.convert_to_vkc import get_rules as vkc_rules
from qopt.lowering.convert_to_vkc.lowering import RuleTable as VkcRuleTable


def _rule(lw: object, op: object) -> list[object]:
    return []


@pytest.mark.parametrize(
    ("table", "name"), [(VkcRuleTable, "convert-to-vkc"), (CoremlRuleTable, "convert-to-coreml")]
)
def test_a_class_ruled_twice_in_a_table_is_an_error(
    table: type[rules.RuleTable[object, object]], name: str
) -> None:
    family = table()
    family(el.AddOp, el.SubOp)(_rule)
    assert set(family) == {el.AddOp, el.SubOp}
    with pytest.raises(ValueError, match=rf"{name}: two rules for aten\.sub"):
        family.add(el.SubOp, _rule)


def test_a_class_ruled_by_two_families_is_an_error() -> None:
    first, second = VkcRuleTable(), VkcRuleTable()
    first.add(el.AddOp, _rule)
    second.add(el.MulOp, _rule)
    assert set(rules.merge_rules("convert-to-vkc", [first, second])) == {el.AddOp, el.MulOp}
    second.add(el.AddOp, _rule)
    with pytest.raises(ValueError, match=r"convert-to-vkc: two rule tables lower aten\.add"):
        rules.merge_rules("convert-to-vkc", [first, second])


def test_the_conversions_merge_their_families() -> None:
    assert el.AddOp in vkc_rules()
    assert el.AddOp in coreml_rules()
