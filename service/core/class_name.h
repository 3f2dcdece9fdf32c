/* core/class_name — the one rule for a part of a device class name (`cpu:AMD_EPYC:512`,
 * `NVIDIA_GeForce_RTX_3090`): letters, digits, '.', '_' and '-' kept, every run of other
 * characters between kept ones written as one '_', leading and trailing ones dropped. Device
 * discovery (measure/device.c) names its classes with it and `ktune import` the class of a Kernel
 * Tuner cache's device_name (cli/cli_import_external.c), so the two agree; the Python client's
 * class_part (clients/python/ktune/device.py) is the same rule. Pure. */
#ifndef KT_CORE_CLASS_NAME_H
#define KT_CORE_CLASS_NAME_H

#include <stddef.h>

/* Writes the part of in (NULL: "") into out (cap > 0; at most cap - 1 characters, NUL-terminated)
 * and returns its length (0 when in keeps no character). */
size_t kt_class_name_part(const char *in, char *out, size_t cap);

#endif
