"""numpy semantics of the `quant` dialect, bit-exact with torch on integer results:
each op reads its attributes and calls the one implementation in
`qopt.numerics.quant`."""

from __future__ import annotations

from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from qopt.dialects import quant
from qopt.dialects.tensors import dtype_of, shape_of
from qopt.numerics.quant import choose_qparams, dequantize, dequantize_codebook, quantize


@register_impls
class QuantFunctions(InterpreterFunctions):
    @impl(quant.QuantizeOp)
    def run_quantize(
        self, interpreter: Interpreter, op: quant.QuantizeOp, args: PythonValues
    ) -> PythonValues:
        x, scale, *zp = args
        return (
            quantize(
                x,
                scale,
                zp[0] if zp else None,
                op.block_size.get_values(),
                op.qmin.value.data,
                op.qmax.value.data,
                dtype_of(op.output),
                op.compute_dtype(),
                zero_point_before_rounding=op.zero_point_before_rounding is not None,
            ),
        )

    @impl(quant.DequantizeOp)
    def run_dequantize(
        self, interpreter: Interpreter, op: quant.DequantizeOp, args: PythonValues
    ) -> PythonValues:
        q, scale, *zp = args
        return (
            dequantize(
                q,
                scale,
                zp[0] if zp else None,
                op.block_size.get_values(),
                dtype_of(op.output),
                op.compute_dtype(),
            ),
        )

    @impl(quant.ChooseQParamsOp)
    def run_choose_qparams(
        self, interpreter: Interpreter, op: quant.ChooseQParamsOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        scale, zp = choose_qparams(
            x,
            op.block_size.get_values(),
            op.qmin.value.data,
            op.qmax.value.data,
            op.mapping.data,
            op.eps.value.data,
            dtype_of(op.scale),
            dtype_of(op.zero_point),
        )
        return scale.reshape(shape_of(op.scale)), zp.reshape(shape_of(op.zero_point))

    @impl(quant.DequantizeCodebookOp)
    def run_dequantize_codebook(
        self,
        interpreter: Interpreter,
        op: quant.DequantizeCodebookOp,
        args: PythonValues,
    ) -> PythonValues:
        codes, codebook = args
        return (
            dequantize_codebook(codes, codebook, op.block_size.get_values(), dtype_of(op.output)),
        )
