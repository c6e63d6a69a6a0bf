/*
 * dpakit soft device: the SDK's configuration, included by every header through
 * doca_compat.h.
 */
#ifndef DOCA_CONFIG_H
#define DOCA_CONFIG_H

#include <doca_build_config.h>

/* Host-side helper declarations; a DPA device build has none. */
#ifndef DOCA_DPA_DEVICE
#define DOCA_COMPAT_HELPERS
#endif

#endif /* DOCA_CONFIG_H */
