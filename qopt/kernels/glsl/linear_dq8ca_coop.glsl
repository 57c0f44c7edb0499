#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Cooperative decode GEMV variant of linear_dq8ca with int32 products (`qopt.kernels.coop`):
// the kernel is include/dq8ca_coop.glsl.
#define PRODUCTS_F16 0
#include "dq8ca_coop.glsl"
