/* .npy files (format versions 1.0 to 3.0, little-endian, C order): read bounded and
   checked, written atomically by the caller. */
#ifndef QVK_NPY_H
#define QVK_NPY_H

#include "qvk.h"

/* Read `path` into `tensor` (data malloc'd into *owned). 0 on success, else -1 with
   `message` set. */
int npy_read(const char *path, qvk_tensor *tensor, void **owned, char *message, size_t cap);
/* Write `data` (numel elements of dtype) as an .npy file at `path`. 0 or -1 (errno). */
int npy_write(const char *path, qvk_dtype dtype, int rank, const int64_t *shape, const void *data);

#endif
