"""Target backends: CoreML (`.mlpackage`) and Vulkan (SPIR-V kernels + runtime)."""
