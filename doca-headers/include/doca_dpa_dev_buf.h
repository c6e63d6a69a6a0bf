/*
 * dpakit soft device: the DPA device API, memory reachable through mmaps.
 */
#ifndef DOCA_DPA_DEV_BUF_H
#define DOCA_DPA_DEV_BUF_H

#include <stdint.h>
#include <doca_types.h>
#include <doca_dpa_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pointer through which the kernel reads and writes host address `addr` of an mmap. */
doca_dpa_dev_uintptr_t doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_mmap_t mmap, uint64_t addr);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_BUF_H */
