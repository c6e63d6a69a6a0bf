/*
 * dpakit soft device: memory maps.
 *
 * An mmap registers a memory range with the devices that may reach it. Configure it (memrange,
 * permissions, devices) while it is not started; buffers and DPA handles need a started mmap.
 */
#ifndef DOCA_MMAP_H
#define DOCA_MMAP_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_mmap;
struct doca_dev;
struct doca_dpa;
struct doca_devinfo;

/* Called when an mmap that was given memory with a free callback no longer needs it. */
typedef void (*doca_mmap_memrange_free_cb_t)(void *addr, size_t len, void *cookie);

DOCA_STABLE
doca_error_t doca_mmap_create(struct doca_mmap **mmap);

/* Fails with IN_USE while buffers point into the mmap. */
DOCA_STABLE
doca_error_t doca_mmap_destroy(struct doca_mmap *mmap);

/* Once per mmap, before start. The memory stays the caller's: keep it alive until destroy. */
DOCA_STABLE
doca_error_t doca_mmap_set_memrange(struct doca_mmap *mmap, void *addr, size_t len);

/* Covers DPA device memory [dpa_addr, dpa_addr + len) allocated with doca_dpa_mem_alloc. */
DOCA_EXPERIMENTAL
doca_error_t doca_mmap_set_dpa_memrange(struct doca_mmap *mmap, struct doca_dpa *dpa,
					uint64_t dpa_addr, size_t len);

/* doca_access_flag bits. */
DOCA_STABLE
doca_error_t doca_mmap_set_permissions(struct doca_mmap *mmap, uint32_t access_mask);

DOCA_STABLE
doca_error_t doca_mmap_add_dev(struct doca_mmap *mmap, struct doca_dev *dev);

DOCA_STABLE
doca_error_t doca_mmap_start(struct doca_mmap *mmap);

/*
 * Returns a started mmap to configuration: permissions and devices may change, then start it
 * again. NOT_PERMITTED while buffers point into it, BAD_STATE if it is not started. DPA handles
 * taken from it end here. Destroy does not need it first.
 */
DOCA_STABLE
doca_error_t doca_mmap_stop(struct doca_mmap *mmap);

DOCA_STABLE
doca_error_t doca_mmap_get_memrange(const struct doca_mmap *mmap, void **addr, size_t *len);

/*
 * The handle DPA kernels use for this mmap, valid on DPAs of `dev`. The mmap must be started
 * (NOT_PERMITTED otherwise) and `dev` added to it (NOT_FOUND otherwise).
 */
DOCA_EXPERIMENTAL
doca_error_t doca_mmap_dev_get_dpa_handle(struct doca_mmap *mmap, const struct doca_dev *dev,
					  doca_dpa_dev_mmap_t *dpa_mmap_handle);

/* Most devices doca_mmap_add_dev may add; before start. */
DOCA_STABLE
doca_error_t doca_mmap_set_max_num_devices(struct doca_mmap *mmap, uint32_t max_num_devices);

/*
 * Exports for another process or an RDMA peer, and mmaps made from such exports. The soft device
 * shares Comch buffers between processes by itself and models neither: the exports and
 * doca_mmap_create_from_export answer DOCA_ERROR_NOT_SUPPORTED, the capabilities 0.
 */
DOCA_STABLE
doca_error_t doca_mmap_export_pci(struct doca_mmap *mmap, const struct doca_dev *dev,
				  const void **export_desc, size_t *export_desc_len);

DOCA_STABLE
doca_error_t doca_mmap_export_rdma(struct doca_mmap *mmap, const struct doca_dev *dev,
				   const void **export_desc, size_t *export_desc_len);

DOCA_STABLE
doca_error_t doca_mmap_create_from_export(const union doca_data *user_data, const void *export_desc,
					  size_t export_desc_len, struct doca_dev *dev,
					  struct doca_mmap **mmap);


DOCA_STABLE
doca_error_t doca_mmap_cap_is_export_pci_supported(const struct doca_devinfo *devinfo,
						   uint8_t *mmap_export);

DOCA_STABLE
doca_error_t doca_mmap_cap_is_create_from_export_pci_supported(const struct doca_devinfo *devinfo,
							       uint8_t *from_export);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_MMAP_H */
