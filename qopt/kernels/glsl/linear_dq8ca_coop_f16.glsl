#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// Cooperative decode GEMV variant of linear_dq8ca with f16 products and f32 sums, exact
// for symmetric int4 weights (`qopt.kernels.coop`; needs shaderFloat16): the kernel is
// include/dq8ca_coop.glsl.
#define PRODUCTS_F16 1
#include "dq8ca_coop.glsl"
