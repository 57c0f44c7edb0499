/* Kernel variants picked at load (qopt/kernels/variants.py): the mode from
   QOPT_VK_VARIANTS and the choice `choose` makes in Python, over the same data (the
   catalogue's qvk_cat_variants, generated from qopt.kernels.variants.variants()), so both
   runtimes run the same shader for every dispatch on the same device. */
#include <stdint.h>
#include <string.h>

#include "internal.h"

#define STAGE_COMPUTE 0x20u /* VK_SHADER_STAGE_COMPUTE_BIT */

qvk_status qvk_variant_mode(const char *value, int *mode, qvk_error *err) {
  const char *v = value ? value : "";
  size_t lo = 0, hi = strlen(v);
  while (lo < hi && (v[lo] == ' ' || v[lo] == '\t' || v[lo] == '\n')) lo++;
  while (hi > lo && (v[hi - 1] == ' ' || v[hi - 1] == '\t' || v[hi - 1] == '\n')) hi--;
  size_t n = hi - lo;
  if (n == 0 || (n == 4 && memcmp(v + lo, "auto", 4) == 0)) {
    *mode = QVK_VARIANTS_AUTO;
  } else if (n == 4 && memcmp(v + lo, "base", 4) == 0) {
    *mode = QVK_VARIANTS_BASE;
  } else if (n == 3 && memcmp(v + lo, "all", 3) == 0) {
    *mode = QVK_VARIANTS_ALL;
  } else {
    return qvk_fail(err, QVK_ERROR_ARGUMENT,
                    "QOPT_VK_VARIANTS='%.60s': not a variant mode; use auto (the default: "
                    "variants where they are preferred), base (never a variant) or all (every "
                    "variant the device runs)",
                    v);
  }
  return QVK_OK;
}

/* Needs.met */
static int needs_met(const qvk_cat_needs *n, const qvk_device_props *p) {
  if (n->subgroup_ops && !(p->subgroup_stages & STAGE_COMPUTE)) return 0;
  return (p->subgroup_ops & n->subgroup_ops) == n->subgroup_ops &&
         n->min_subgroup <= p->subgroup_size && p->subgroup_size <= n->max_subgroup &&
         p->shared_bytes >= n->shared_bytes && (p->float16 || !n->float16) &&
         (p->int8 || !n->int8);
}

int qvk_choose_variant(const qvk_cat_kernel *k, const qvk_device_props *props, const int64_t *P,
                       const int64_t *S, int mode, const qvk_cat_variant **out,
                       qvk_rule_ctx *ctx) {
  *out = NULL;
  if (mode == QVK_VARIANTS_BASE || props == NULL) return 0;
  for (size_t i = 0; i < qvk_cat_variant_count; i++) {
    const qvk_cat_variant *v = &qvk_cat_variants[i];
    if (&qvk_cat_kernels[v->base] != k || !needs_met(&v->needs, props)) continue;
    if (mode != QVK_VARIANTS_ALL && (props->device_type >= 32 || !((v->prefer >> props->device_type) & 1u))) {
      continue;
    }
    int64_t a = 0;
    if (v->applies(P, S, &a, ctx) != 0) return -1;
    if (a != 1) continue;
    *out = v;
    return 0;
  }
  return 0;
}

QVK_API qvk_status qvk_kernel_variant(const char *kernel, const qvk_device_props *props,
                                      const int64_t *push, size_t n_push, const int64_t *spec,
                                      size_t n_spec, const char *mode, const char **variant,
                                      qvk_error *err) {
  const qvk_cat_kernel *k = NULL;
  for (size_t i = 0; kernel != NULL && i < qvk_cat_kernel_count; i++) {
    if (strcmp(qvk_cat_kernels[i].name, kernel) == 0) k = &qvk_cat_kernels[i];
  }
  if (k == NULL) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_kernel_variant: no kernel %.100s in the catalogue",
                    kernel ? kernel : "(null)");
  }
  if (variant == NULL || n_push != k->n_push || n_spec != k->n_spec || (n_push && push == NULL) ||
      (n_spec && spec == NULL)) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT,
                    "qvk_kernel_variant: kernel %s takes %zu push constants and %zu "
                    "specialization values",
                    k->name, k->n_push, k->n_spec);
  }
  int m;
  qvk_status st = qvk_variant_mode(mode, &m, err);
  if (st) return st;
  const qvk_cat_variant *v = NULL;
  qvk_rule_ctx rule = {k->name, 0, ""};
  if (qvk_choose_variant(k, props, push, spec, m, &v, &rule) != 0) {
    return qvk_fail(err, QVK_ERROR_BUNDLE, "%s", rule.msg);
  }
  *variant = v ? v->name : NULL;
  return QVK_OK;
}
