/* The kernel catalogue the runtime carries: generated at build time from qopt's
   Python tables by runtime/gen_catalogue.py (qvk_catalogue.c in the build tree). */
#ifndef QVK_CATALOGUE_H
#define QVK_CATALOGUE_H

#include <stddef.h>
#include <stdint.h>

enum { QVK_CAT_F32 = 0, QVK_CAT_I32 = 1, QVK_CAT_U32 = 2 };
enum { QVK_PUSH_I32 = 0, QVK_PUSH_U32 = 1, QVK_PUSH_F32 = 2 };

typedef struct {
  const char *name;
  int dtype;
  int writes;
  int is_status;
} qvk_cat_binding;

typedef struct {
  const char *name;
  int kind;
} qvk_cat_push;

typedef struct {
  const char *name;
  int32_t def;
  long long lo, hi;
  int has_bounds;
} qvk_cat_spec;

typedef struct {
  int binding, flag, vec4s;
} qvk_cat_uniform;

typedef struct {
  int binding, flag;
} qvk_cat_texel;

/* The kernels' rules (KernelSpec.extents / workgroups), translated into C from their
   Python source by runtime/gen_rules.py: each reads the push constants P (integers:
   u32 zero-extended, i32 sign-extended; float ones are never read) and every
   specialization value S (defaults filled in), writes one count per binding (extents:
   the words the dispatch can touch) or per dimension (workgroups: the most it needs),
   and returns 0, or -1 with ctx->msg set (the Python rule's ValueError text). */
typedef struct {
  const char *kernel;
  int failed;
  char msg[512];
} qvk_rule_ctx;
typedef int (*qvk_rule_fn)(const int64_t *push, const int64_t *spec, int64_t *out,
                           qvk_rule_ctx *ctx);

typedef struct {
  const char *glsl;
  const uint32_t *words;
  size_t nbytes;
} qvk_cat_source;

typedef struct {
  const char *name;
  const char *glsl;
  size_t source;
  const qvk_cat_binding *bindings;
  size_t n_bindings;
  const qvk_cat_push *push;
  size_t n_push;
  const qvk_cat_spec *spec;
  size_t n_spec;
  const qvk_cat_uniform *uniforms;
  size_t n_uniforms;
  const qvk_cat_texel *texels;
  size_t n_texels;
  int local_size[3];
  qvk_rule_fn extents;    /* n_bindings counts */
  qvk_rule_fn workgroups; /* 3 counts */
} qvk_cat_kernel;

/* A kernel variant (qopt.kernels.variants): `kernel` is the variant as a kernel (its
   base's interface, its own source, local size and workgroup rule), picked at load for a
   dispatch of kernel `base` by choose_variant (variants.c) from the device's properties,
   `needs`, `prefer` (bit t: preferred on VkPhysicalDeviceType t) and `applies` (one
   value, 1: this dispatch can take it). Never looked up by name: a bundle names bases. */
typedef struct {
  uint32_t subgroup_ops, min_subgroup, max_subgroup, shared_bytes;
  int float16, int8;
} qvk_cat_needs;

typedef struct {
  const char *name;
  size_t base;
  qvk_cat_kernel kernel;
  qvk_cat_needs needs;
  uint32_t prefer;
  qvk_rule_fn applies;
} qvk_cat_variant;

typedef struct {
  long long max_tensor_elements;
  long long max_tensor_rank;
  long long max_device_bytes;
  long long max_dispatches;
  long long max_manifest_bytes;
  long long max_graph_nodes;
} qvk_cat_limits;

extern const char qvk_cat_qopt_version[];
extern const qvk_cat_source qvk_cat_sources[];
extern const size_t qvk_cat_source_count;
extern const qvk_cat_kernel qvk_cat_kernels[];
extern const size_t qvk_cat_kernel_count;
extern const qvk_cat_variant qvk_cat_variants[];
extern const size_t qvk_cat_variant_count;
extern const qvk_cat_limits qvk_cat_default_limits;

#endif
