/* Sessions: a leased Vulkan device (device.c: its pipelines are kept for the next
   session), the bundle's buffers and one recorded command buffer per method, run as qopt's Python runtime runs them
   (qopt/backends/vulkan/runtime.py and artifact.py): the same buffer sizes, descriptor
   layouts and ranges, uniform and texel views (and their fitting to the device's
   limits), specialization and push constants, dispatch order and barriers, so the
   outputs are bit-identical on the same device. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "internal.h"

typedef struct {
  VkBuffer handle;
  VkDeviceMemory memory;
  uint8_t *map;
  VkDeviceSize size; /* max(16, nbytes rounded up to 16), as runtime.Buffer */
} gbuf;

typedef struct {
  gbuf *buf;
  VkFormat format;
  uint32_t texels;
  VkBufferView view;
} texel_t;

typedef struct {
  int recorded;
  VkDescriptorPool pool;
  VkCommandBuffer cmd;
  VkFence fence;
  VkQueryPool query;
  size_t count;
  double record_seconds;
} program_t;

struct qvk_session {
  const qvk_bundle *b;
  qvk_device *dev;     /* leased (device.c): its modules and pipelines outlive the session */
  int reused;          /* the device was idle, another session's */
  size_t compiled_at;  /* dev->compiled when the lease began */
  texel_t *texels;
  size_t n_texels, cap_texels;
  gbuf *slots;
  gbuf *owned;  /* per bundle buffer (unused for slot buffers) */
  gbuf **bufs;  /* per bundle buffer: the device buffer it is */
  program_t *programs; /* per method */
  qvk_timings timings;
  size_t variant_dispatches;
};

#define VKFAIL(what, r) \
  qvk_fail(err, QVK_ERROR_DEVICE, "the Vulkan driver failed: %s returned %d", what, (int)(r))

const char *qvk_session_device_name(const qvk_session *s) { return s->dev->name; }
int qvk_session_reused(const qvk_session *s) { return s->reused; }
size_t qvk_session_pipelines_created(const qvk_session *s) { return s->dev->compiled - s->compiled_at; }
void *qvk_session_vulkan_instance(const qvk_session *s) { return (void *)s->dev->instance; }
void *qvk_session_vulkan_device(const qvk_session *s) { return (void *)s->dev->device; }
qvk_timings qvk_session_timings(const qvk_session *s) { return s->timings; }
qvk_device_props qvk_session_device_props(const qvk_session *s) { return s->dev->props; }
size_t qvk_session_variant_dispatches(const qvk_session *s) { return s->variant_dispatches; }
const char *qvk_session_variant_mode(const qvk_session *s) {
  return s->dev->variant_mode == QVK_VARIANTS_BASE ? "base" : s->dev->variant_mode == QVK_VARIANTS_ALL ? "all" : "auto";
}

/* ----- buffers ------------------------------------------------------------------------ */

static qvk_status memory_type(qvk_session *s, uint32_t bits, uint32_t *out, qvk_error *err) {
  VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int best = -1;
  for (uint32_t i = 0; i < s->dev->memory.memoryTypeCount; i++) {
    VkMemoryPropertyFlags flags = s->dev->memory.memoryTypes[i].propertyFlags;
    if (!(bits & (1u << i)) || (flags & want) != want) continue;
    if (flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) {
      *out = i;
      return QVK_OK;
    }
    if (best < 0) best = (int)i;
  }
  if (best < 0) {
    return qvk_fail(err, QVK_ERROR_DEVICE, "%s has no host-visible, host-coherent memory type", s->dev->name);
  }
  *out = (uint32_t)best;
  return QVK_OK;
}

static qvk_status make_buffer(qvk_session *s, int64_t nbytes, gbuf *g, qvk_error *err) {
  VkDeviceSize size = nbytes < 16 ? 16 : (VkDeviceSize)(nbytes + 15) / 16 * 16;
  g->size = size;
  VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
               VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(s->dev->device, &info, NULL, &g->handle);
  if (r != VK_SUCCESS) return VKFAIL("vkCreateBuffer", r);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(s->dev->device, g->handle, &req);
  VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  qvk_status st = memory_type(s, req.memoryTypeBits, &alloc.memoryTypeIndex, err);
  if (st) return st;
  r = vkAllocateMemory(s->dev->device, &alloc, NULL, &g->memory);
  if (r != VK_SUCCESS) {
    return qvk_fail(err, QVK_ERROR_DEVICE,
                    "cannot allocate %llu bytes of Vulkan memory on %s (vkAllocateMemory: %d)",
                    (unsigned long long)req.size, s->dev->name, (int)r);
  }
  r = vkBindBufferMemory(s->dev->device, g->handle, g->memory, 0);
  if (r != VK_SUCCESS) return VKFAIL("vkBindBufferMemory", r);
  void *map;
  r = vkMapMemory(s->dev->device, g->memory, 0, size, 0, &map);
  if (r != VK_SUCCESS) return VKFAIL("vkMapMemory", r);
  g->map = map;
  memset(g->map, 0, size);
  return QVK_OK;
}

static void free_buffer(qvk_session *s, gbuf *g) {
  if (g->map != NULL) vkUnmapMemory(s->dev->device, g->memory);
  if (g->handle != VK_NULL_HANDLE) vkDestroyBuffer(s->dev->device, g->handle, NULL);
  if (g->memory != VK_NULL_HANDLE) vkFreeMemory(s->dev->device, g->memory, NULL);
  memset(g, 0, sizeof *g);
}

static qvk_status texel_view(qvk_session *s, gbuf *g, VkFormat format, uint32_t texels,
                             VkBufferView *out, qvk_error *err) {
  for (size_t i = 0; i < s->n_texels; i++) {
    texel_t *t = &s->texels[i];
    if (t->buf == g && t->format == format && t->texels == texels) {
      *out = t->view;
      return QVK_OK;
    }
  }
  if (s->n_texels == s->cap_texels) {
    size_t cap = s->cap_texels ? 2 * s->cap_texels : 16;
    texel_t *grown = realloc(s->texels, cap * sizeof *grown);
    if (grown == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
    s->texels = grown;
    s->cap_texels = cap;
  }
  VkBufferViewCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  info.buffer = g->handle;
  info.format = format;
  info.offset = 0;
  info.range = (VkDeviceSize)texels * (format == VK_FORMAT_R32G32B32A32_UINT ? 16 : 4);
  VkBufferView view;
  VkResult r = vkCreateBufferView(s->dev->device, &info, NULL, &view);
  if (r != VK_SUCCESS) return VKFAIL("vkCreateBufferView", r);
  s->texels[s->n_texels++] = (texel_t){g, format, texels, view};
  *out = view;
  return QVK_OK;
}

/* ----- recording ---------------------------------------------------------------------- */

typedef struct {
  qvk_pipe *pipe;
  const qvk_step_rec *step;
  gbuf *bufs[64];
  uint32_t groups[3]; /* the bundle's, or the variant's own (its workgroup rule) */
  VkDeviceSize uniform_range[8];
  VkBufferView texel_views[8];
} resolved_t;

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage,
                    VkPipelineStageFlags dst_stage, VkAccessFlags src, VkAccessFlags dst) {
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = src;
  mb.dstAccessMask = dst;
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

static qvk_status resolve(qvk_session *s, const qvk_step_rec *step, resolved_t *out, qvk_error *err) {
  const qvk_bundle *b = s->b;
  const qvk_kernel_rec *kr = &b->kernels[step->kernel];
  const qvk_cat_kernel *k = kr->cat;
  int32_t values[256];
  if (k->n_spec > 256 || k->n_bindings > 64 || k->n_uniforms > 8 || k->n_texels > 8) {
    return qvk_fail(err, QVK_ERROR_BUNDLE, "kernel %s is larger than this runtime handles", k->name);
  }
  if (k->n_spec) memcpy(values, kr->spec, 4 * k->n_spec);
  out->step = step;
  for (size_t j = 0; j < k->n_bindings; j++) out->bufs[j] = s->bufs[step->buffers[j]];
  /* runtime._fit_uniforms: a uniform block over this device's range is read through
     its storage buffer instead (flag 0, one vec4) */
  for (size_t u = 0; u < k->n_uniforms; u++) {
    const qvk_cat_uniform *view = &k->uniforms[u];
    if (values[view->flag] == 1 && 16 * (int64_t)values[view->vec4s] > (int64_t)s->dev->max_uniform) {
      values[view->flag] = 0;
      values[view->vec4s] = 1;
    }
  }
  /* runtime._fit_texels */
  for (size_t t = 0; t < k->n_texels; t++) {
    const qvk_cat_texel *view = &k->texels[t];
    if (values[view->flag] != 1) continue;
    gbuf *g = out->bufs[view->binding];
    if (!s->dev->texel_format || g->size / 16 > s->dev->max_texel) values[view->flag] = 0;
  }
  /* the device's variant of the kernel (variants.c; runtime.Program._record): picked now,
     never stored in the bundle; its own shader and workgroup rule, the base's interface */
  int64_t P[256], S[256];
  for (size_t j = 0; j < k->n_push; j++) {
    P[j] = k->push[j].kind == QVK_PUSH_I32 ? (int64_t)(int32_t)step->push[j] : (int64_t)step->push[j];
  }
  for (size_t j = 0; j < k->n_spec; j++) S[j] = values[j];
  const qvk_cat_variant *variant = NULL;
  qvk_rule_ctx rule = {k->name, 0, ""};
  if (qvk_choose_variant(k, &s->dev->props, P, S, s->dev->variant_mode, &variant, &rule) != 0) {
    return qvk_fail(err, QVK_ERROR_BUNDLE, "%s", rule.msg);
  }
  memcpy(out->groups, step->groups, sizeof out->groups);
  qvk_status st;
  if (variant != NULL) {
    int64_t W[3];
    rule.kernel = variant->kernel.name;
    if (variant->kernel.workgroups(P, S, W, &rule) != 0) {
      return qvk_fail(err, QVK_ERROR_BUNDLE, "%s", rule.msg);
    }
    for (int g = 0; g < 3; g++) {
      if (W[g] < 0 || W[g] > 65535) {
        return qvk_fail(err, QVK_ERROR_BUNDLE, "dispatch of %s: %" PRId64 " workgroups",
                        variant->kernel.name, W[g]);
      }
      out->groups[g] = (uint32_t)W[g];
    }
    st = qvk_device_pipeline(s->dev, &variant->kernel, values, &out->pipe, err);
    s->variant_dispatches++;
  } else {
    st = qvk_device_pipeline(s->dev, k, values, &out->pipe, err);
  }
  if (st) return st;
  for (int g = 0; g < 3; g++) {
    if (out->groups[g] > s->dev->max_groups[g]) {
      return qvk_fail(err, QVK_ERROR_DEVICE, "dispatch of %s: (%u, %u, %u) workgroups exceed "
                      "this device's (%u, %u, %u)", k->name, out->groups[0], out->groups[1],
                      out->groups[2], s->dev->max_groups[0], s->dev->max_groups[1], s->dev->max_groups[2]);
    }
  }
  /* runtime._uniform_ranges */
  for (size_t u = 0; u < k->n_uniforms; u++) {
    const qvk_cat_uniform *view = &k->uniforms[u];
    gbuf *g = out->bufs[view->binding];
    int64_t nbytes = 16 * (int64_t)values[view->vec4s];
    if (values[view->flag] == 1) {
      if (nbytes > (int64_t)s->dev->max_uniform) {
        return qvk_fail(err, QVK_ERROR_DEVICE,
                        "dispatch of %s: reads %s (%" PRId64 " bytes) through a uniform buffer, "
                        "over this device's maxUniformBufferRange (%u bytes): run the program on "
                        "a device with a larger range",
                        k->name, k->bindings[view->binding].name, nbytes, s->dev->max_uniform);
      }
      if ((VkDeviceSize)nbytes > g->size) {
        return qvk_fail(err, QVK_ERROR_BUNDLE,
                        "dispatch of %s: a %" PRId64 "-byte uniform view of %s over a %llu-byte "
                        "buffer",
                        k->name, nbytes, k->bindings[view->binding].name,
                        (unsigned long long)g->size);
      }
    }
    VkDeviceSize range = (VkDeviceSize)(nbytes < 0 ? 0 : nbytes);
    if (g->size < range) range = g->size;
    if (s->dev->max_uniform < range) range = s->dev->max_uniform;
    out->uniform_range[u] = range;
  }
  /* runtime._texel_views */
  for (size_t t = 0; t < k->n_texels; t++) {
    gbuf *g = out->bufs[k->texels[t].binding];
    VkFormat fmt = s->dev->texel_format ? VK_FORMAT_R32G32B32A32_UINT : VK_FORMAT_R32_UINT;
    VkDeviceSize texels = s->dev->texel_format ? g->size / 16 : g->size / 4;
    if (texels > s->dev->max_texel) texels = s->dev->max_texel;
    if (texels < 1) texels = 1;
    st = texel_view(s, g, fmt, (uint32_t)texels, &out->texel_views[t], err);
    if (st) return st;
  }
  return QVK_OK;
}

static qvk_status record(qvk_session *s, size_t m, qvk_error *err) {
  const qvk_bundle *b = s->b;
  program_t *p = &s->programs[m];
  double start = qvk_now();
  size_t lo = b->methods[m].steps[0], n = b->methods[m].steps[1] - lo;
  resolved_t *res = calloc(n ? n : 1, sizeof *res);
  VkDescriptorSet *sets = calloc(n ? n : 1, sizeof *sets);
  VkDescriptorSetLayout *layouts = calloc(n ? n : 1, sizeof *layouts);
  qvk_status st = QVK_OK;
  if (res == NULL || sets == NULL || layouts == NULL) {
    st = qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
    goto done;
  }
  uint32_t n_storage = 0, n_uniform = 0, n_texel = 0;
  for (size_t i = 0; i < n; i++) {
    if ((st = resolve(s, &b->steps[lo + i], &res[i], err))) goto done;
    const qvk_cat_kernel *k = res[i].pipe->cat;
    n_storage += (uint32_t)k->n_bindings;
    n_uniform += (uint32_t)k->n_uniforms;
    n_texel += (uint32_t)k->n_texels;
    layouts[i] = res[i].pipe->set_layout;
  }
  VkDescriptorPoolSize sizes[3];
  uint32_t n_sizes = 0;
  sizes[n_sizes++] = (VkDescriptorPoolSize){VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n_storage ? n_storage : 1};
  if (n_uniform) sizes[n_sizes++] = (VkDescriptorPoolSize){VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, n_uniform};
  if (n_texel) sizes[n_sizes++] = (VkDescriptorPoolSize){VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, n_texel};
  VkDescriptorPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool.maxSets = n ? (uint32_t)n : 1;
  pool.poolSizeCount = n_sizes;
  pool.pPoolSizes = sizes;
  VkResult r = vkCreateDescriptorPool(s->dev->device, &pool, NULL, &p->pool);
  if (r != VK_SUCCESS) {
    st = VKFAIL("vkCreateDescriptorPool", r);
    goto done;
  }
  if (n) {
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = p->pool;
    alloc.descriptorSetCount = (uint32_t)n;
    alloc.pSetLayouts = layouts;
    r = vkAllocateDescriptorSets(s->dev->device, &alloc, sets);
    if (r != VK_SUCCESS) {
      st = VKFAIL("vkAllocateDescriptorSets", r);
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      const qvk_cat_kernel *k = res[i].pipe->cat;
      VkWriteDescriptorSet writes[80];
      VkDescriptorBufferInfo infos[80];
      size_t w = 0;
      for (size_t j = 0; j < k->n_bindings + k->n_uniforms; j++, w++) {
        int uniform = j >= k->n_bindings;
        gbuf *g = uniform ? res[i].bufs[k->uniforms[j - k->n_bindings].binding] : res[i].bufs[j];
        infos[w] = (VkDescriptorBufferInfo){g->handle, 0,
                                            uniform ? res[i].uniform_range[j - k->n_bindings] : g->size};
        writes[w] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[w].dstSet = sets[i];
        writes[w].dstBinding = (uint32_t)j;
        writes[w].descriptorCount = 1;
        writes[w].descriptorType = uniform ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[w].pBufferInfo = &infos[w];
      }
      for (size_t t = 0; t < k->n_texels; t++, w++) {
        writes[w] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[w].dstSet = sets[i];
        writes[w].dstBinding = (uint32_t)(k->n_bindings + k->n_uniforms + t);
        writes[w].descriptorCount = 1;
        writes[w].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
        writes[w].pTexelBufferView = &res[i].texel_views[t];
      }
      vkUpdateDescriptorSets(s->dev->device, (uint32_t)w, writes, 0, NULL);
    }
  }
  if (s->dev->timestamp_period > 0) {
    VkQueryPoolCreateInfo q = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = (uint32_t)n + 1;
    r = vkCreateQueryPool(s->dev->device, &q, NULL, &p->query);
    if (r != VK_SUCCESS) {
      st = VKFAIL("vkCreateQueryPool", r);
      goto done;
    }
  }
  VkFenceCreateInfo finfo = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  r = vkCreateFence(s->dev->device, &finfo, NULL, &p->fence);
  if (r != VK_SUCCESS) {
    st = VKFAIL("vkCreateFence", r);
    goto done;
  }
  VkCommandBufferAllocateInfo cinfo = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cinfo.commandPool = s->dev->command_pool;
  cinfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cinfo.commandBufferCount = 1;
  r = vkAllocateCommandBuffers(s->dev->device, &cinfo, &p->cmd);
  if (r != VK_SUCCESS) {
    st = VKFAIL("vkAllocateCommandBuffers", r);
    goto done;
  }
  VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(p->cmd, &begin);
  VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  if (p->query != VK_NULL_HANDLE) {
    vkCmdResetQueryPool(p->cmd, p->query, 0, (uint32_t)n + 1);
    vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->query, 0);
  }
  barrier(p->cmd, VK_PIPELINE_STAGE_HOST_BIT, compute, VK_ACCESS_HOST_WRITE_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  for (size_t i = 0; i < n; i++) {
    if (i) {
      barrier(p->cmd, compute, compute, VK_ACCESS_SHADER_WRITE_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    }
    qvk_pipe *pp = res[i].pipe;
    vkCmdBindPipeline(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pp->pipeline);
    vkCmdBindDescriptorSets(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pp->layout, 0, 1, &sets[i], 0, NULL);
    if (pp->cat->n_push) {
      vkCmdPushConstants(p->cmd, pp->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         (uint32_t)(4 * pp->cat->n_push), res[i].step->push);
    }
    const uint32_t *g = res[i].groups;
    if (g[0] && g[1] && g[2]) vkCmdDispatch(p->cmd, g[0], g[1], g[2]);
    if (p->query != VK_NULL_HANDLE) {
      vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->query, (uint32_t)i + 1);
    }
  }
  barrier(p->cmd, compute, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
  r = vkEndCommandBuffer(p->cmd);
  if (r != VK_SUCCESS) {
    st = VKFAIL("vkEndCommandBuffer", r);
    goto done;
  }
  if ((st = qvk_device_check(s->dev, "recording a command buffer", err))) goto done;
  p->count = n;
  p->recorded = 1;
  p->record_seconds = qvk_now() - start;
done:
  free(res);
  free(sets);
  free(layouts);
  return st;
}

static void free_program(qvk_session *s, program_t *p) {
  if (p->cmd != VK_NULL_HANDLE) vkFreeCommandBuffers(s->dev->device, s->dev->command_pool, 1, &p->cmd);
  if (p->fence != VK_NULL_HANDLE) vkDestroyFence(s->dev->device, p->fence, NULL);
  if (p->query != VK_NULL_HANDLE) vkDestroyQueryPool(s->dev->device, p->query, NULL);
  if (p->pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(s->dev->device, p->pool, NULL);
  memset(p, 0, sizeof *p);
}

static void write_initial(qvk_session *s) {
  const qvk_bundle *b = s->b;
  for (size_t i = 0; i < b->n_states; i++) {
    gbuf *g = s->bufs[b->states[i].buffer];
    if (b->states[i].initial < 0) {
      memset(g->map, 0, g->size);
    } else {
      const qvk_constant_rec *c = &b->constants[b->states[i].initial];
      memcpy(g->map, c->bytes, c->nbytes);
    }
  }
}

void qvk_session_destroy(qvk_session *s) {
  if (s == NULL) return;
  qvk_device *d = s->dev;
  int idle_ok = 0;
  if (d != NULL) {
    idle_ok = vkDeviceWaitIdle(d->device) == VK_SUCCESS;
    if (s->programs != NULL) {
      for (size_t m = 0; m < s->b->n_methods; m++) free_program(s, &s->programs[m]);
    }
    for (size_t i = 0; i < s->n_texels; i++) vkDestroyBufferView(d->device, s->texels[i].view, NULL);
    if (s->owned != NULL) {
      for (size_t i = 0; i < s->b->n_buffers; i++) free_buffer(s, &s->owned[i]);
    }
    if (s->slots != NULL) {
      for (size_t i = 0; i < s->b->n_slots; i++) free_buffer(s, &s->slots[i]);
    }
    qvk_device_give_back(d, idle_ok); /* parked for the next session, or closed */
  }
  free(s->texels);
  free(s->owned);
  free(s->slots);
  free(s->bufs);
  free(s->programs);
  free(s);
}

qvk_status qvk_session_create(const qvk_bundle *b, const char *device, qvk_session **out,
                              qvk_error *err) {
  if (b == NULL || out == NULL) return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_session_create: NULL argument");
  *out = NULL;
  qvk_session *s = calloc(1, sizeof *s);
  if (s == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  s->b = b;
  s->timings.gpu_seconds = -1;
  qvk_status st = qvk_device_lease(device, &s->dev, &s->reused, err);
  if (st == QVK_OK) {
    s->compiled_at = s->dev->compiled;
    s->slots = calloc(b->n_slots ? b->n_slots : 1, sizeof *s->slots);
    s->owned = calloc(b->n_buffers ? b->n_buffers : 1, sizeof *s->owned);
    s->bufs = calloc(b->n_buffers ? b->n_buffers : 1, sizeof *s->bufs);
    s->programs = calloc(b->n_methods ? b->n_methods : 1, sizeof *s->programs);
    if (!s->slots || !s->owned || !s->bufs || !s->programs) {
      st = qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
    }
  }
  for (size_t i = 0; st == QVK_OK && i < b->n_slots; i++) {
    st = make_buffer(s, b->slots[i] > 4 ? b->slots[i] : 4, &s->slots[i], err);
  }
  for (size_t i = 0; st == QVK_OK && i < b->n_buffers; i++) {
    const qvk_buffer_rec *r = &b->buffers[i];
    if (r->kind == KIND_SLOT) {
      s->bufs[i] = &s->slots[r->slot];
      continue;
    }
    if (r->kind == KIND_CONSTANT) {
      const qvk_constant_rec *c = &b->constants[r->constant];
      st = make_buffer(s, (int64_t)c->nbytes, &s->owned[i], err);
      if (st == QVK_OK && c->nbytes) memcpy(s->owned[i].map, c->bytes, c->nbytes);
    } else {
      st = make_buffer(s, r->nbytes > 4 ? r->nbytes : 4, &s->owned[i], err);
    }
    s->bufs[i] = &s->owned[i];
  }
  /* every pipeline now, as the Python runtime does when it opens the device */
  for (size_t i = 0; st == QVK_OK && i < b->n_kernels; i++) {
    qvk_pipe *p;
    st = qvk_device_pipeline(s->dev, b->kernels[i].cat, b->kernels[i].spec, &p, err);
  }
  if (st != QVK_OK) {
    qvk_session_destroy(s);
    return st;
  }
  write_initial(s);
  *out = s;
  return QVK_OK;
}

qvk_status qvk_session_reset(qvk_session *s, qvk_error *err) {
  if (s == NULL) return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_session_reset: NULL session");
  write_initial(s);
  return QVK_OK;
}

qvk_status qvk_session_read_state(qvk_session *s, const char *name, void *out, size_t nbytes,
                                  qvk_error *err) {
  const qvk_bundle *b = s->b;
  for (size_t i = 0; i < b->n_states; i++) {
    const qvk_state_rec *st = &b->states[i];
    if (name == NULL || strcmp(st->name, name) != 0) continue;
    size_t need = (size_t)st->numel * qvk_dtype_size(st->dtype);
    if (nbytes < need) {
      return qvk_fail(err, QVK_ERROR_ARGUMENT, "state %s needs %zu bytes, got a %zu-byte buffer",
                      name, need, nbytes);
    }
    qvk_from_abi(s->bufs[st->buffer]->map, st->dtype, st->numel, out);
    return QVK_OK;
  }
  char list[600] = "";
  for (size_t i = 0; i < b->n_states; i++) {
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", b->states[i].name);
  }
  return qvk_fail(err, QVK_ERROR_ARGUMENT, "the program has no state named '%s' (its states: %s)",
                  name ? name : "(null)", b->n_states ? list : "none");
}

static void shape_text(char *buf, size_t cap, int rank, const int64_t *shape, int declared) {
  size_t used = 0;
  used += (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < rank && used < cap; d++) {
    if (declared && shape[d] < 0) {
      used += (size_t)snprintf(buf + used, cap - used, "%s?", d ? ", " : "");
    } else {
      used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64, d ? ", " : "", shape[d]);
    }
  }
  if (used < cap) snprintf(buf + used, cap - used, "]");
}

static const char *index_message(const char *what, size_t step, const char *kernel, char *buf,
                                 size_t cap) {
  if (strcmp(kernel, "assert_true") == 0) {
    snprintf(buf, cap, "%s: a run-time check recorded at export failed (Vulkan step %zu); the "
             "inputs are outside what the program was exported for", what, step);
  } else {
    snprintf(buf, cap, "%s: an index was out of range (Vulkan step %zu, kernel %s); check the "
             "inputs (token ids must be below the vocabulary size)", what, step, kernel);
  }
  return buf;
}

qvk_status qvk_session_run(qvk_session *s, size_t m, const qvk_tensor *inputs,
                           void *const *outputs, qvk_error *err) {
  if (s == NULL) return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_session_run: NULL session");
  const qvk_bundle *b = s->b;
  if (m >= b->n_methods) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_session_run: method %zu of %zu", m, b->n_methods);
  }
  double start = qvk_now();
  const qvk_method_rec *method = &b->methods[m];
  char where[500];
  if (b->n_methods == 1) snprintf(where, sizeof where, "the Vulkan program");
  else snprintf(where, sizeof where, "method %s", method->name);
  size_t n_in = method->inputs[1] - method->inputs[0];
  if (n_in && inputs == NULL) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "%s takes %zu input(s), got none", where, n_in);
  }
  for (size_t i = 0; i < n_in; i++) {
    const qvk_tensor_rec *t = &b->inputs[method->inputs[0] + i];
    int ok = inputs[i].rank == t->rank;
    for (int d = 0; ok && d < t->rank; d++) ok = t->shape[d] < 0 || t->shape[d] == inputs[i].shape[d];
    if (!ok) {
      char got[200], want[200];
      shape_text(got, sizeof got, inputs[i].rank > QVK_MAX_RANK ? 0 : inputs[i].rank, inputs[i].shape, 0);
      shape_text(want, sizeof want, t->rank, t->shape, 1);
      return qvk_fail(err, QVK_ERROR_ARGUMENT, "input %zu of %s has shape %s, expected %s", i, where,
                      got, want);
    }
  }
  /* inputs: every value checked before any is written */
  for (size_t i = 0; i < n_in; i++) {
    const qvk_tensor_rec *t = &b->inputs[method->inputs[0] + i];
    qvk_status st = qvk_to_abi(&inputs[i], t->dtype, t->numel, i, where, NULL, err);
    if (st) return st;
  }
  for (size_t i = 0; i < n_in; i++) {
    const qvk_tensor_rec *t = &b->inputs[method->inputs[0] + i];
    qvk_status st = qvk_to_abi(&inputs[i], t->dtype, t->numel, i, where, s->bufs[t->buffer]->map, err);
    if (st) return st;
  }
  program_t *p = &s->programs[m];
  if (!p->recorded) {
    free_program(s, p);
    qvk_status st = record(s, m, err);
    if (st) {
      free_program(s, p);
      return st;
    }
  }
  size_t lo = method->steps[0], hi = method->steps[1];
  for (size_t i = lo; i < hi; i++) {
    const qvk_step_rec *step = &b->steps[i];
    for (size_t j = 0; j < step->n_buffers; j++) {
      if (b->buffers[step->buffers[j]].kind == KIND_STATUS) memset(s->bufs[step->buffers[j]]->map, 0, 4);
    }
  }
  VkResult r = vkResetFences(s->dev->device, 1, &p->fence);
  if (r != VK_SUCCESS) return VKFAIL("vkResetFences", r);
  VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &p->cmd;
  double t0 = qvk_now();
  r = vkQueueSubmit(s->dev->queue, 1, &submit, p->fence);
  if (r != VK_SUCCESS) return VKFAIL("vkQueueSubmit", r);
  r = vkWaitForFences(s->dev->device, 1, &p->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) return VKFAIL("vkWaitForFences", r);
  s->timings.submit_seconds = qvk_now() - t0;
  qvk_status vst = qvk_device_check(s->dev, "running a command buffer", err);
  if (vst) return vst;
  s->timings.gpu_seconds = -1;
  if (p->query != VK_NULL_HANDLE) {
    size_t n = p->count + 1;
    uint64_t *ticks = calloc(n, sizeof *ticks);
    if (ticks != NULL &&
        vkGetQueryPoolResults(s->dev->device, p->query, 0, (uint32_t)n, n * 8, ticks, 8,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
      double total = 0;
      uint64_t mask = s->dev->timestamp_bits >= 64 ? UINT64_MAX : ((uint64_t)1 << s->dev->timestamp_bits) - 1;
      for (size_t i = 1; i < n; i++) total += (double)((ticks[i] - ticks[i - 1]) & mask);
      s->timings.gpu_seconds = total * s->dev->timestamp_period * 1e-9;
    }
    free(ticks);
  }
  for (size_t i = lo; i < hi; i++) {
    const qvk_step_rec *step = &b->steps[i];
    for (size_t j = 0; j < step->n_buffers; j++) {
      const qvk_buffer_rec *rec = &b->buffers[step->buffers[j]];
      if (rec->kind != KIND_STATUS) continue;
      uint32_t word;
      memcpy(&word, s->bufs[step->buffers[j]]->map, 4);
      if (word != 0) {
        char msg[900];
        index_message(rec->what, i - lo, b->kernels[step->kernel].cat->name, msg, sizeof msg);
        return qvk_fail(err, QVK_ERROR_INDEX, "%s", msg);
      }
    }
  }
  for (size_t i = method->outputs[0]; i < method->outputs[1]; i++) {
    const qvk_tensor_rec *t = &b->outputs[i];
    void *dst = outputs != NULL ? outputs[i - method->outputs[0]] : NULL;
    if (dst == NULL && t->numel > 0) {
      return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_session_run: no buffer for output %zu",
                      i - method->outputs[0]);
    }
  }
  for (size_t i = method->outputs[0]; i < method->outputs[1]; i++) {
    const qvk_tensor_rec *t = &b->outputs[i];
    qvk_from_abi(s->bufs[t->buffer]->map, t->dtype, t->numel, outputs[i - method->outputs[0]]);
  }
  s->timings.record_seconds = p->record_seconds;
  s->timings.dispatches = p->count;
  s->timings.wall_seconds = qvk_now() - start;
  return QVK_OK;
}
