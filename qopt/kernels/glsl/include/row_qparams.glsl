// The scale and zero point of one row from its mn = min(min(x), 0) and mx = max(max(x), 0),
// as choose_qparams_rows.glsl, quantize_rows_dynamic.glsl and rms_norm_rows.glsl (QUANT)
// compute them (the kernel declares the spec constant MAPPING):
// MAPPING_ASYMMETRIC: scale = max((mx - mn) / (qmax - qmin), eps),
//   zp = clamp(qmin - roundEven(mn / scale), qmin, qmax);
// MAPPING_SYMMETRIC: scale = max(max(-mn, mx) / ((qmax - qmin) / 2), eps);
// MAPPING_SYMMETRIC_NO_CLIPPING_ERR: scale = max(max(mn / qmin, mx / qmax), eps);
// symmetric zp = int((qmax + qmin + 1) / 2). All in f32 (quant.choose_qparams).
void row_qparams(float row_mn, float row_mx, int qmin, int qmax, float eps,
                 out float scale_out_v, out int zp_out_v) {
  precise float mn = row_mn, mx = row_mx;
  precise float scale;
  int zp;
  if (MAPPING == MAPPING_ASYMMETRIC) {
    scale = max((mx - mn) / float(qmax - qmin), eps);
    zp = int(clamp(float(qmin) - roundEven(mn / scale), float(qmin), float(qmax)));
  } else {
    if (MAPPING == MAPPING_SYMMETRIC) {
      scale = max(-mn, mx) / (float(qmax - qmin) / 2.0);
    } else {
      precise float smin = mn / float(qmin), smax = mx / float(qmax);
      scale = smin > smax ? smin : smax;
    }
    scale = max(scale, eps);
    zp = int(float(qmax + qmin + 1) / 2.0);
  }
  scale_out_v = scale;
  zp_out_v = zp;
}
