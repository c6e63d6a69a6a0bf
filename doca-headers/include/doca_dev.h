/*
 * dpakit soft device: devices and representors.
 *
 * The soft device's topology decides which devices exist: by default the host side sees the
 * BlueField PF at 0000:b1:00.0 and the Arm side its own device at 0000:03:00.0 with a
 * representor of the host PF (see dpakit_soft.h).
 */
#ifndef DOCA_DEV_H
#define DOCA_DEV_H

#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_devinfo;
struct doca_devinfo_rep;
struct doca_dev;
struct doca_dev_rep;

/* Buffer sizes (including the terminating NUL) of the devinfo string queries. */
#define DOCA_DEVINFO_PCI_ADDR_SIZE 13
#define DOCA_DEVINFO_REP_PCI_ADDR_SIZE 13
#define DOCA_DEVINFO_IBDEV_NAME_SIZE 64
#define DOCA_DEVINFO_IFACE_NAME_SIZE 256
#define DOCA_DEVINFO_REP_VUID_SIZE 128
#define DOCA_DEVINFO_PCI_BDF_SIZE 8
#define DOCA_DEVINFO_REP_PCI_BDF_SIZE 8
#define DOCA_DEVINFO_VUID_SIZE 128
/* Byte sizes of the network address queries. */
#define DOCA_DEVINFO_IPV4_ADDR_SIZE 4
#define DOCA_DEVINFO_IPV6_ADDR_SIZE 16
#define DOCA_DEVINFO_MAC_ADDR_SIZE 6

/* Which representors doca_devinfo_rep_create_list returns (bit flags; 0 = all). */
enum doca_devinfo_rep_filter {
	DOCA_DEVINFO_REP_FILTER_ALL = 0,
	DOCA_DEVINFO_REP_FILTER_NET = (1 << 1),
	DOCA_DEVINFO_REP_FILTER_EMULATED = (1 << 2),
};

/* A snapshot of the local devices: an array of *nb_devs pointers, freed with destroy_list. */
DOCA_STABLE
doca_error_t doca_devinfo_create_list(struct doca_devinfo ***dev_list, uint32_t *nb_devs);

DOCA_STABLE
doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **dev_list);

/* Representors reachable from an (Arm-side) device, filtered by doca_devinfo_rep_filter bits. */
DOCA_STABLE
doca_error_t doca_devinfo_rep_create_list(struct doca_dev *dev, int filter,
					  struct doca_devinfo_rep ***dev_list_rep,
					  uint32_t *nb_devs_rep);

DOCA_STABLE
doca_error_t doca_devinfo_rep_destroy_list(struct doca_devinfo_rep **dev_list_rep);

DOCA_STABLE
doca_error_t doca_dev_open(struct doca_devinfo *devinfo, struct doca_dev **dev);

DOCA_STABLE
doca_error_t doca_dev_close(struct doca_dev *dev);

DOCA_STABLE
doca_error_t doca_dev_rep_open(struct doca_devinfo_rep *devinfo, struct doca_dev_rep **dev_rep);

DOCA_STABLE
doca_error_t doca_dev_rep_close(struct doca_dev_rep *dev);

/* The devinfo of an open device, for capability queries. */
DOCA_STABLE
struct doca_devinfo *doca_dev_as_devinfo(const struct doca_dev *dev);

/* Compares a device's PCI address with "BB:DD.F" or "DDDD:BB:DD.F"; *is_equal gets 1 or 0. */
DOCA_STABLE
doca_error_t doca_devinfo_is_equal_pci_addr(const struct doca_devinfo *devinfo,
					    const char *pci_addr_str, uint8_t *is_equal);

DOCA_STABLE
doca_error_t doca_devinfo_rep_is_equal_pci_addr(const struct doca_devinfo_rep *devinfo_rep,
						const char *pci_addr_str, uint8_t *is_equal);

/* The PCI address as "DDDD:BB:DD.F"; pci_addr_str holds DOCA_DEVINFO_PCI_ADDR_SIZE bytes. */
DOCA_STABLE
doca_error_t doca_devinfo_get_pci_addr_str(const struct doca_devinfo *devinfo, char *pci_addr_str);

/* The same for a representor; DOCA_DEVINFO_REP_PCI_ADDR_SIZE bytes. */
DOCA_STABLE
doca_error_t doca_devinfo_rep_get_pci_addr_str(const struct doca_devinfo_rep *devinfo_rep,
					       char *pci_addr_str);

DOCA_STABLE
doca_error_t doca_devinfo_rep_get_pci_func_type(const struct doca_devinfo_rep *devinfo_rep,
						enum doca_pci_func_type *pci_func_type);

/* Whether the device lists representors of every kind / emulated ones (*supported: 1 or 0). */
DOCA_STABLE
doca_error_t doca_devinfo_rep_cap_is_filter_all_supported(const struct doca_devinfo *devinfo,
							  uint8_t *filter_all_supported);

DOCA_STABLE
doca_error_t doca_devinfo_rep_cap_is_filter_emulated_supported(const struct doca_devinfo *devinfo,
							       uint8_t *filter_emulated_supported);

/* String queries write a NUL-terminated string into a buffer of `size` bytes. */
DOCA_STABLE
doca_error_t doca_devinfo_get_ibdev_name(const struct doca_devinfo *devinfo, char *ibdev_name,
					 uint32_t size);

DOCA_STABLE
doca_error_t doca_devinfo_get_iface_name(const struct doca_devinfo *devinfo, char *iface_name,
					 uint32_t size);

DOCA_STABLE
doca_error_t doca_devinfo_rep_get_vuid(const struct doca_devinfo_rep *devinfo_rep, char *rep_vuid,
				       uint32_t size);

DOCA_STABLE
doca_error_t doca_devinfo_rep_cap_is_filter_net_supported(const struct doca_devinfo *devinfo,
							  uint8_t *filter_net_supported);

DOCA_STABLE
doca_error_t doca_devinfo_get_pci_func_type(const struct doca_devinfo *devinfo,
					    enum doca_pci_func_type *pci_func_type);

/* The sub-function index of an SF device; NOT_SUPPORTED for a PF or VF. */
DOCA_STABLE
doca_error_t doca_devinfo_get_sf_index(const struct doca_devinfo *devinfo, uint32_t *sf_index);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DEV_H */
