/*
 * dpakit soft device: symbol markers of the DOCA API.
 *
 * DOCA marks every function STABLE, EXPERIMENTAL or DEPRECATED. Experimental and deprecated
 * functions warn at each use unless the program opts in with DOCA_ALLOW_EXPERIMENTAL_API or
 * DOCA_ALLOW_DEPRECATED_API, as with DOCA's own SDK.
 */
#ifndef DOCA_COMPAT_H
#define DOCA_COMPAT_H

/* What the program is built for (DOCA_ARCH_HOST, DOCA_ARCH_DPU, ...). */
#include <doca_config.h>

/*
 * DOCA programs call strlen, strcpy and memset relying on the SDK's headers to have declared
 * them: every header of the soft SDK includes this one (or doca_types.h), which brings
 * <string.h> in wherever the C library has one (freestanding device builds may have none).
 */
#ifdef __has_include
#if __has_include(<string.h>)
#include <string.h>
#endif
#else
#include <string.h>
#endif

#if defined(__GNUC__) || defined(__clang__)

#define DOCA_USED __attribute__((used))
#define DOCA_STABLE __attribute__((visibility("default"))) DOCA_USED

#ifdef DOCA_ALLOW_EXPERIMENTAL_API
#define DOCA_EXPERIMENTAL DOCA_STABLE __attribute__((section(".text.experimental")))
#else
#define DOCA_EXPERIMENTAL                                                                          \
	DOCA_STABLE __attribute__((section(".text.experimental")))                                 \
	__attribute__((deprecated("experimental DOCA API: define DOCA_ALLOW_EXPERIMENTAL_API to use it")))
#endif

#ifdef DOCA_ALLOW_DEPRECATED_API
#define DOCA_DEPRECATED DOCA_STABLE __attribute__((section(".text.deprecated")))
#else
#define DOCA_DEPRECATED                                                                            \
	DOCA_STABLE __attribute__((section(".text.deprecated")))                                   \
	__attribute__((deprecated("deprecated DOCA API: define DOCA_ALLOW_DEPRECATED_API to use it")))
#endif

#else /* other compilers: plain declarations */

#define DOCA_USED
#define DOCA_STABLE
#define DOCA_EXPERIMENTAL
#define DOCA_DEPRECATED

#endif

/* The version comes with every header (last: it uses the markers above). */
#if defined(__linux__) || defined(DOCA_DPA_DEVICE)
#include <doca_version.h>
#endif

#endif /* DOCA_COMPAT_H */
