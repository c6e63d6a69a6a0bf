/*
 * dpakit soft device: the SDK version.
 *
 * The soft SDK follows DOCA 3.0.0's names and signatures, and reports that version at compile
 * time (the macros) and at run time (doca_version_runtime, answered by the library a program
 * is linked against). The comparison macros compare (major, minor, patch) triples with the
 * version the program is compiled against.
 */
#ifndef DOCA_VERSION_H
#define DOCA_VERSION_H

#include <stddef.h>
#include <doca_compat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version, as numbers (major and minor 0-255, patch 0-9999) and as "major.minor.pppp". */
#define DOCA_VERSION_MAJOR 3
#define DOCA_VERSION_MINOR 0
#define DOCA_VERSION_PATCH 0
#define DOCA_VERSION_STRING "3.0.0000"

/* One number per exact version (patch counted as is), and the current one. */
#define DOCA_VERSION_CALC_EXACT(major, minor, patch)                                              \
	((size_t)(((major) << 24) | ((minor) << 16) | (patch)))
#define DOCA_VERSION_EXACT DOCA_VERSION_CALC_EXACT(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)

/* One number per official release (patch in thousands), and the current one. */
#define DOCA_VERSION_CALC(major, minor, patch)                                                    \
	((size_t)(((major) << 24) | ((minor) << 16) | ((patch) * 1000)))
#define DOCA_VERSION_OFFICIAL DOCA_VERSION_CALC(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)

/* Non-zero when (major, minor, patch) is the current release, or an earlier or equal one. */
#define DOCA_VERSION_EQ_CURRENT(major, minor, patch)                                              \
	(DOCA_VERSION_CALC(major, minor, patch) == DOCA_VERSION_OFFICIAL)
#define DOCA_VERSION_LTE_CURRENT(major, minor, patch)                                             \
	(DOCA_VERSION_CALC(major, minor, patch) <= DOCA_VERSION_OFFICIAL)

/* The spellings of DOCA 1.x, for programs that still use them. */
#define DOCA_VER_MAJOR DOCA_VERSION_MAJOR
#define DOCA_VER_MINOR DOCA_VERSION_MINOR
#define DOCA_VER_PATCH DOCA_VERSION_PATCH
#define DOCA_VER_STRING DOCA_VERSION_STRING
#define DOCA_VERSION_NUM(major, minor, patch) DOCA_VERSION_CALC_EXACT(major, minor, patch)
#define DOCA_CURRENT_VERSION_NUM DOCA_VERSION_EXACT

/* The version the program was compiled against. */
static inline const char *doca_version(void)
{
	return DOCA_VERSION_STRING;
}

/* The version of the library the program runs with (the soft device's). */
DOCA_EXPERIMENTAL
const char *doca_version_runtime(void);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_VERSION_H */
