/* Vulkan devices, their shader modules and pipelines, reused within a process (the rules
   of the Python runtime's qopt/backends/vulkan/pool.py).

   A session leases a device (qvk_device_lease): the instance (and its validation
   messenger), the physical device, the VkDevice, its queue and command pool, what the
   runtime reads of the device's properties, one shader module per catalogue source and
   the compute pipelines keyed by (catalogue kernel, specialization values). A pipeline
   compile is the expensive part of a session (lavapipe runs LLVM there, 0.1-1 s each),
   so when the session ends (qvk_device_give_back, after it freed its buffers, views,
   descriptor pools, command buffers, fences and query pools) the device is parked idle,
   modules and pipelines kept, for the next session created with the same choice: the
   resolved device string (the argument, else $QOPT_VULKAN_DEVICE), validation on or off
   ($QOPT_VULKAN_VALIDATION) and the variant mode ($QOPT_VK_VARIANTS). A reused pipeline
   is the same catalogue kernel with the same specialization values, so a session computes
   on a reused device exactly what it computes on a fresh one.

   A lease is exclusive: a parked device is taken out of the idle table, so two live
   sessions never share one. At most one idle device per choice; a device is closed, not
   parked, when validation errors are pending, vkDeviceWaitIdle fails or it holds more than
   QVK_MAX_IDLE_PIPELINES pipelines. Validation messages go to the device whose messenger
   reported them (pUserData), and a lease starts with no error recorded. The idle table is
   behind a mutex. QOPT_VULKAN_REUSE=0 turns reuse off (every session opens and closes its
   own device); qvk_release_idle() closes the idle devices, and so does the process's exit
   (atexit, registered when the first device is parked; a library unloaded by dlclose runs
   it then). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "internal.h"

#define VKFAIL(what, r) \
  qvk_fail(err, QVK_ERROR_DEVICE, "the Vulkan driver failed: %s returned %d", what, (int)(r))

/* ----- validation messages ------------------------------------------------------------- */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user) {
  (void)types;
  qvk_device *d = user;
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    if (d->validation_errors++ == 0 && data != NULL && data->pMessage != NULL) {
      snprintf(d->validation_message, sizeof d->validation_message, "%s", data->pMessage);
    }
  }
  return VK_FALSE;
}

qvk_status qvk_device_check(qvk_device *d, const char *what, qvk_error *err) {
  if (d->validation_errors == 0) return QVK_OK;
  d->validation_errors = 0;
  d->had_errors = 1; /* reported to its session: the device is not parked */
  return qvk_fail(err, QVK_ERROR_DEVICE, "Vulkan validation errors while %s: %s", what,
                  d->validation_message);
}

/* ----- shader modules and pipelines ---------------------------------------------------- */

static qvk_status shader_module(qvk_device *d, const qvk_cat_kernel *k, VkShaderModule *out,
                                qvk_error *err) {
  VkShaderModule *m = &d->modules[k->source];
  if (*m == VK_NULL_HANDLE) {
    const qvk_cat_source *src = &qvk_cat_sources[k->source];
    VkShaderModuleCreateInfo info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = src->nbytes;
    info.pCode = src->words;
    VkResult r = vkCreateShaderModule(d->device, &info, NULL, m);
    if (r != VK_SUCCESS) {
      *m = VK_NULL_HANDLE;
      return VKFAIL("vkCreateShaderModule", r);
    }
  }
  *out = *m;
  return qvk_device_check(d, "creating a shader module", err);
}

static void destroy_pipe(qvk_device *d, qvk_pipe *p) {
  if (p->pipeline != VK_NULL_HANDLE) vkDestroyPipeline(d->device, p->pipeline, NULL);
  if (p->layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(d->device, p->layout, NULL);
  if (p->set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(d->device, p->set_layout, NULL);
  free(p->values);
  free(p);
}

/* The objects of pipeline `p` (its kernel and values set); QVK_OK or the failure. */
static qvk_status build_pipe(qvk_device *d, qvk_pipe *p, qvk_error *err) {
  const qvk_cat_kernel *k = p->cat;
  size_t n = k->n_bindings + k->n_uniforms + k->n_texels;
  VkDescriptorSetLayoutBinding bindings[64];
  if (n > 64) return qvk_fail(err, QVK_ERROR_BUNDLE, "kernel %s has too many bindings", k->name);
  uint32_t push_size = (uint32_t)(4 * k->n_push);
  if (push_size > d->max_push) {
    return qvk_fail(err, QVK_ERROR_DEVICE, "kernel %s: %u bytes of push constants, over %s's %u",
                    k->name, push_size, d->name, d->max_push);
  }
  VkShaderModule module = VK_NULL_HANDLE;
  qvk_status st = shader_module(d, k, &module, err);
  if (st) return st;
  for (size_t i = 0; i < n; i++) {
    bindings[i] = (VkDescriptorSetLayoutBinding){0};
    bindings[i].binding = (uint32_t)i;
    bindings[i].descriptorType = i < k->n_bindings ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                 : i < k->n_bindings + k->n_uniforms ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                                     : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo linfo = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  linfo.bindingCount = (uint32_t)n;
  linfo.pBindings = bindings;
  VkResult r = vkCreateDescriptorSetLayout(d->device, &linfo, NULL, &p->set_layout);
  if (r != VK_SUCCESS) {
    p->set_layout = VK_NULL_HANDLE;
    return VKFAIL("vkCreateDescriptorSetLayout", r);
  }
  VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
  VkPipelineLayoutCreateInfo pinfo = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pinfo.setLayoutCount = 1;
  pinfo.pSetLayouts = &p->set_layout;
  pinfo.pushConstantRangeCount = push_size ? 1 : 0;
  pinfo.pPushConstantRanges = push_size ? &range : NULL;
  r = vkCreatePipelineLayout(d->device, &pinfo, NULL, &p->layout);
  if (r != VK_SUCCESS) {
    p->layout = VK_NULL_HANDLE;
    return VKFAIL("vkCreatePipelineLayout", r);
  }
  VkSpecializationMapEntry *entries = calloc(k->n_spec ? k->n_spec : 1, sizeof *entries);
  if (entries == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  for (size_t i = 0; i < k->n_spec; i++) {
    entries[i] = (VkSpecializationMapEntry){(uint32_t)i, (uint32_t)(4 * i), 4};
  }
  VkSpecializationInfo spec = {(uint32_t)k->n_spec, entries, 4 * k->n_spec, p->values};
  VkComputePipelineCreateInfo cinfo = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cinfo.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cinfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cinfo.stage.module = module;
  cinfo.stage.pName = "main";
  cinfo.stage.pSpecializationInfo = k->n_spec ? &spec : NULL;
  cinfo.layout = p->layout;
  r = vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &cinfo, NULL, &p->pipeline);
  free(entries);
  if (r != VK_SUCCESS) {
    p->pipeline = VK_NULL_HANDLE;
    return VKFAIL("vkCreateComputePipelines", r);
  }
  char what[200];
  snprintf(what, sizeof what, "creating the pipeline of %s", k->name);
  return qvk_device_check(d, what, err);
}

qvk_status qvk_device_pipeline(qvk_device *d, const qvk_cat_kernel *k, const int32_t *values,
                               qvk_pipe **out, qvk_error *err) {
  for (size_t i = 0; i < d->n_pipes; i++) {
    qvk_pipe *p = d->pipes[i];
    if (p->cat == k && (k->n_spec == 0 || memcmp(p->values, values, k->n_spec * 4) == 0)) {
      *out = p;
      return QVK_OK;
    }
  }
  if (d->n_pipes == d->cap_pipes) {
    size_t cap = d->cap_pipes ? 2 * d->cap_pipes : 32;
    qvk_pipe **grown = realloc(d->pipes, cap * sizeof *grown);
    if (grown == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
    d->pipes = grown;
    d->cap_pipes = cap;
  }
  qvk_pipe *p = calloc(1, sizeof *p);
  if (p == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  p->cat = k;
  p->values = malloc(k->n_spec ? k->n_spec * 4 : 4);
  if (p->values == NULL) {
    free(p);
    return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  }
  if (k->n_spec) memcpy(p->values, values, k->n_spec * 4);
  qvk_status st = build_pipe(d, p, err);
  if (st) {
    destroy_pipe(d, p); /* never kept half-built: a later lookup must not find it */
    return st;
  }
  d->pipes[d->n_pipes++] = p;
  d->compiled++;
  *out = p;
  return QVK_OK;
}

/* ----- opening and closing --------------------------------------------------------------- */

static qvk_status select_device(qvk_device *d, const char *choice, qvk_error *err) {
  uint32_t count = 0;
  VkResult r = vkEnumeratePhysicalDevices(d->instance, &count, NULL);
  if (r != VK_SUCCESS) return VKFAIL("vkEnumeratePhysicalDevices", r);
  VkPhysicalDevice *all = calloc(count ? count : 1, sizeof *all);
  VkPhysicalDevice found[32];
  uint32_t families[32];
  char names[32][VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  size_t n = 0;
  if (all == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  vkEnumeratePhysicalDevices(d->instance, &count, all);
  for (uint32_t i = 0; i < count && n < 32; i++) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(all[i], &props);
    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nf, NULL);
    VkQueueFamilyProperties fams[64];
    if (nf > 64) nf = 64;
    vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nf, fams);
    for (uint32_t f = 0; f < nf; f++) {
      if ((fams[f].queueFlags & VK_QUEUE_COMPUTE_BIT) && fams[f].queueCount > 0) {
        found[n] = all[i];
        families[n] = f;
        memcpy(names[n], props.deviceName, sizeof names[n]);
        names[n][sizeof names[n] - 1] = '\0';
        n++;
        break;
      }
    }
  }
  free(all);
  if (n == 0) {
    return qvk_fail(err, QVK_ERROR_DEVICE,
                    "no compute-capable Vulkan device was found (on a machine without a GPU, "
                    "install Mesa's lavapipe: `apt-get install mesa-vulkan-drivers libvulkan1`)");
  }
  char list[800] = "";
  for (size_t i = 0; i < n; i++) {
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%zu: %.200s", i ? ", " : "", i, names[i]);
  }
  size_t pick = 0;
  if (choice != NULL && choice[0] != '\0') {
    const char *p = choice;
    while (*p == ' ') p++;
    int digits = *p != '\0';
    for (const char *q = p; *q && *q != ' '; q++) digits &= isdigit((unsigned char)*q) != 0;
    if (digits) {
      unsigned long long index = strtoull(p, NULL, 10);
      if (index >= n) {
        return qvk_fail(err, QVK_ERROR_DEVICE, "Vulkan device index %llu out of range (devices: %s)",
                        index, list);
      }
      pick = (size_t)index;
    } else {
      pick = n;
      for (size_t i = 0; i < n && pick == n; i++) {
        const char *hay = names[i];
        size_t hl = strlen(hay), nl = strlen(choice);
        for (size_t o = 0; nl <= hl && o + nl <= hl; o++) {
          size_t j = 0;
          while (j < nl && tolower((unsigned char)hay[o + j]) == tolower((unsigned char)choice[j])) j++;
          if (j == nl) {
            pick = i;
            break;
          }
        }
      }
      if (pick == n) {
        return qvk_fail(err, QVK_ERROR_DEVICE, "no Vulkan device name contains '%s' (devices: %s)",
                        choice, list);
      }
    }
  }
  d->pd = found[pick];
  d->family = families[pick];
  memcpy(d->name, names[pick], sizeof names[pick]);
  return QVK_OK;
}

static qvk_status open_instance(qvk_device *d, qvk_error *err) {
  const char *layer = "VK_LAYER_KHRONOS_validation";
  const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  if (d->validate) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *props = calloc(n ? n : 1, sizeof *props);
    int found = 0;
    if (props != NULL) {
      vkEnumerateInstanceLayerProperties(&n, props);
      for (uint32_t i = 0; i < n; i++) found |= strcmp(props[i].layerName, layer) == 0;
      free(props);
    }
    if (!found) {
      return qvk_fail(err, QVK_ERROR_DEVICE, "%s is not installed (Debian/Ubuntu: `apt-get install "
                      "vulkan-validationlayers`), and QOPT_VULKAN_VALIDATION asks for it", layer);
    }
  }
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "qopt";
  app.applicationVersion = 1;
  app.pEngineName = "qopt";
  app.engineVersion = 1;
  app.apiVersion = VK_MAKE_VERSION(1, 2, 0);
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = d->validate ? 1 : 0;
  info.ppEnabledLayerNames = d->validate ? &layer : NULL;
  info.enabledExtensionCount = d->validate ? 1 : 0;
  info.ppEnabledExtensionNames = d->validate ? &ext : NULL;
  VkResult r = vkCreateInstance(&info, NULL, &d->instance);
  if (r != VK_SUCCESS) {
    d->instance = VK_NULL_HANDLE;
    return qvk_fail(err, QVK_ERROR_DEVICE, "vkCreateInstance failed (%d): is a Vulkan driver "
                    "installed? (lavapipe: `apt-get install mesa-vulkan-drivers libvulkan1`)", (int)r);
  }
  if (d->validate) {
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(d->instance, "vkCreateDebugUtilsMessengerEXT");
    d->destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
        d->instance, "vkDestroyDebugUtilsMessengerEXT");
    if (create != NULL && d->destroy_messenger != NULL) {
      VkDebugUtilsMessengerCreateInfoEXT minfo = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
      minfo.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      minfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      minfo.pfnUserCallback = on_message;
      minfo.pUserData = d; /* messages are this device's, never another's */
      if (create(d->instance, &minfo, NULL, &d->messenger) != VK_SUCCESS) d->messenger = VK_NULL_HANDLE;
    }
  }
  return QVK_OK;
}

/* What the runtime reads of the chosen device, and the VkDevice, queue and command pool. */
static qvk_status open_device(qvk_device *d, qvk_error *err) {
  qvk_status st = open_instance(d, err);
  if (st) return st;
  st = select_device(d, d->choice, err);
  if (st) return st;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(d->pd, &props);
  if (VK_API_VERSION_MAJOR(props.apiVersion) == 1 && VK_API_VERSION_MINOR(props.apiVersion) < 2) {
    return qvk_fail(err, QVK_ERROR_DEVICE, "%s supports Vulkan %u.%u; qopt's kernels are SPIR-V "
                    "for Vulkan 1.2: update its driver or choose another device (--device)",
                    d->name, VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
  }
  for (int i = 0; i < 3; i++) d->max_groups[i] = props.limits.maxComputeWorkGroupCount[i];
  d->max_push = props.limits.maxPushConstantsSize;
  d->max_uniform = props.limits.maxUniformBufferRange;
  d->max_texel = props.limits.maxTexelBufferElements;
  d->timestamp_period = props.limits.timestampPeriod;
  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d->pd, &nf, NULL);
  VkQueueFamilyProperties fams[64];
  if (nf > 64) nf = 64;
  vkGetPhysicalDeviceQueueFamilyProperties(d->pd, &nf, fams);
  d->timestamp_bits = d->family < nf ? fams[d->family].timestampValidBits : 0;
  if (d->timestamp_bits == 0) d->timestamp_period = 0;
  VkFormatProperties fmt;
  vkGetPhysicalDeviceFormatProperties(d->pd, VK_FORMAT_R32G32B32A32_UINT, &fmt);
  d->texel_format = (fmt.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  vkGetPhysicalDeviceMemoryProperties(d->pd, &d->memory);
  /* runtime.device_props: what the kernel variants' choice reads */
  VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &sub;
  vkGetPhysicalDeviceProperties2(d->pd, &props2);
  VkPhysicalDeviceShaderFloat16Int8Features f16 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceFeatures2 features2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features2.pNext = &f16;
  vkGetPhysicalDeviceFeatures2(d->pd, &features2);
  d->props.device_type = (uint32_t)props.deviceType;
  d->props.subgroup_size = sub.subgroupSize;
  d->props.subgroup_stages = sub.supportedStages;
  d->props.subgroup_ops = sub.supportedOperations;
  d->props.shared_bytes = props.limits.maxComputeSharedMemorySize;
  d->props.float16 = f16.shaderFloat16 != 0;
  d->props.int8 = f16.shaderInt8 != 0;
  VkPhysicalDeviceFeatures features;
  vkGetPhysicalDeviceFeatures(d->pd, &features);
  if (!features.robustBufferAccess) {
    return qvk_fail(err, QVK_ERROR_DEVICE,
                    "%s lacks robustBufferAccess, which the native runtime requires (it bounds "
                    "every buffer access of a dispatch to its buffer: the guarantee that a bundle "
                    "cannot read or write outside its buffers): choose another device (--device)",
                    d->name);
  }
  VkPhysicalDeviceFeatures enabled = {0};
  enabled.robustBufferAccess = VK_TRUE;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qinfo = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qinfo.queueFamilyIndex = d->family;
  qinfo.queueCount = 1;
  qinfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo dinfo = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dinfo.queueCreateInfoCount = 1;
  dinfo.pQueueCreateInfos = &qinfo;
  dinfo.pEnabledFeatures = &enabled;
  /* shaderFloat16 where the device has it: the f16 kernel variants use it (and are chosen
     only there); the Python runtime enables the same */
  VkPhysicalDeviceShaderFloat16Int8Features f16_on = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  f16_on.shaderFloat16 = VK_TRUE;
  if (d->props.float16) dinfo.pNext = &f16_on;
  VkResult r = vkCreateDevice(d->pd, &dinfo, NULL, &d->device);
  if (r != VK_SUCCESS) {
    d->device = VK_NULL_HANDLE;
    return VKFAIL("vkCreateDevice", r);
  }
  vkGetDeviceQueue(d->device, d->family, 0, &d->queue);
  VkCommandPoolCreateInfo pinfo = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pinfo.queueFamilyIndex = d->family;
  pinfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  r = vkCreateCommandPool(d->device, &pinfo, NULL, &d->command_pool);
  if (r != VK_SUCCESS) {
    d->command_pool = VK_NULL_HANDLE;
    return VKFAIL("vkCreateCommandPool", r);
  }
  return qvk_device_check(d, "creating the device", err);
}

/* Destroy every Vulkan object of the device and free it (its sessions' objects are gone). */
static void close_device(qvk_device *d) {
  if (d == NULL) return;
  if (d->device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(d->device);
    for (size_t i = 0; i < d->n_pipes; i++) destroy_pipe(d, d->pipes[i]);
    if (d->modules != NULL) {
      for (size_t i = 0; i < qvk_cat_source_count; i++) {
        if (d->modules[i] != VK_NULL_HANDLE) vkDestroyShaderModule(d->device, d->modules[i], NULL);
      }
    }
    if (d->command_pool != VK_NULL_HANDLE) vkDestroyCommandPool(d->device, d->command_pool, NULL);
    vkDestroyDevice(d->device, NULL);
  }
  if (d->instance != VK_NULL_HANDLE) {
    if (d->messenger != VK_NULL_HANDLE) d->destroy_messenger(d->instance, d->messenger, NULL);
    vkDestroyInstance(d->instance, NULL);
  }
  free(d->pipes);
  free(d->modules);
  free(d->choice);
  free(d);
}

/* ----- the pool ---------------------------------------------------------------------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static qvk_device **idle;
static size_t n_idle, cap_idle;
static int exiting; /* the process is exiting: a device given back now is closed */

static int reuse_on(void) {
  const char *v = qvk_getenv("QOPT_VULKAN_REUSE");
  return !(v != NULL && strcmp(v, "0") == 0);
}

static int same_choice(const qvk_device *d, const char *choice, int validate, int mode) {
  return d->validate == validate && d->variant_mode == mode && strcmp(d->choice, choice) == 0;
}

static void at_exit(void) {
  pthread_mutex_lock(&pool_lock);
  exiting = 1;
  pthread_mutex_unlock(&pool_lock);
  qvk_release_idle();
}

static void register_exit(void) { atexit(at_exit); }

/* A library unloaded without exit (dlclose) whose atexit did not run: close what is idle. */
__attribute__((destructor)) static void at_unload(void) { at_exit(); }

void qvk_release_idle(void) {
  pthread_mutex_lock(&pool_lock);
  qvk_device **devices = idle;
  size_t n = n_idle;
  idle = NULL;
  n_idle = cap_idle = 0;
  pthread_mutex_unlock(&pool_lock);
  for (size_t i = 0; i < n; i++) close_device(devices[i]);
  free(devices);
}

qvk_status qvk_device_lease(const char *choice, qvk_device **out, int *reused, qvk_error *err) {
  *out = NULL;
  *reused = 0;
  if (choice == NULL || choice[0] == '\0') choice = qvk_getenv("QOPT_VULKAN_DEVICE");
  if (choice == NULL) choice = "";
  const char *validation = qvk_getenv("QOPT_VULKAN_VALIDATION");
  int validate = validation != NULL && validation[0] != '\0' && strcmp(validation, "0") != 0;
  int mode;
  qvk_status st = qvk_variant_mode(qvk_getenv("QOPT_VK_VARIANTS"), &mode, err);
  if (st) return st;
  if (reuse_on()) {
    qvk_device *found = NULL;
    pthread_mutex_lock(&pool_lock);
    for (size_t i = 0; i < n_idle && found == NULL; i++) {
      if (same_choice(idle[i], choice, validate, mode)) {
        found = idle[i];
        idle[i] = idle[--n_idle];
      }
    }
    pthread_mutex_unlock(&pool_lock);
    if (found != NULL) {
      found->validation_errors = 0;
      found->had_errors = 0;
      *out = found;
      *reused = 1;
      return QVK_OK;
    }
  }
  qvk_device *d = calloc(1, sizeof *d);
  if (d == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  d->choice = malloc(strlen(choice) + 1);
  d->modules = calloc(qvk_cat_source_count ? qvk_cat_source_count : 1, sizeof *d->modules);
  if (d->choice == NULL || d->modules == NULL) {
    close_device(d);
    return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  }
  memcpy(d->choice, choice, strlen(choice) + 1);
  d->validate = validate;
  d->variant_mode = mode;
  st = open_device(d, err);
  if (st) {
    close_device(d);
    return st;
  }
  *out = d;
  return QVK_OK;
}

void qvk_device_give_back(qvk_device *d, int idle_ok) {
  if (d == NULL) return;
  int keep = idle_ok && reuse_on() && d->device != VK_NULL_HANDLE && d->command_pool != VK_NULL_HANDLE &&
             d->validation_errors == 0 && !d->had_errors && d->n_pipes <= QVK_MAX_IDLE_PIPELINES;
  if (keep && vkResetCommandPool(d->device, d->command_pool,
                                 VK_COMMAND_POOL_RESET_RELEASE_RESOURCES_BIT) != VK_SUCCESS) {
    keep = 0;
  }
  if (keep) {
    pthread_once(&exit_once, register_exit);
    pthread_mutex_lock(&pool_lock);
    for (size_t i = 0; i < n_idle && keep; i++) {
      if (same_choice(idle[i], d->choice, d->validate, d->variant_mode)) keep = 0;
    }
    if (keep && !exiting && n_idle == cap_idle) {
      size_t cap = cap_idle ? 2 * cap_idle : 4;
      qvk_device **grown = realloc(idle, cap * sizeof *grown);
      if (grown != NULL) {
        idle = grown;
        cap_idle = cap;
      }
    }
    int parked = keep && !exiting && n_idle < cap_idle;
    if (parked) idle[n_idle++] = d;
    pthread_mutex_unlock(&pool_lock);
    if (parked) return;
  }
  close_device(d);
}
