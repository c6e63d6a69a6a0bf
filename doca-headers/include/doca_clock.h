/*
 * dpakit soft device: doca_clock.h, reading the device's (NIC and DPA) clocks and the host's,
 * alone or two at once (a cross-timestamp with its error margin).
 *
 * On the soft device the NIC's free-running clock is the host's CLOCK_MONOTONIC_RAW, its
 * real-time clock the host's CLOCK_REALTIME, and the DPA timer the host's CLOCK_MONOTONIC
 * (the clock DPA kernels read); see docs/soft-device.md.
 */
#ifndef DOCA_CLOCK_H_
#define DOCA_CLOCK_H_

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_clock;
struct doca_dev;
struct doca_devinfo;

/* Clock types (uint64_t): the device's, read as a timespec ... */
#define DOCA_CLOCK_NIC_FREE_RUNNING 0x1
#define DOCA_CLOCK_NIC_REAL_TIME 0x2
#define DOCA_CLOCK_NIC_DPA_TIMER 0x100
/* ... and the host's: a cycle counter (the TSC on x86, CNTVCT_EL0 on Arm), then timespecs. */
#define DOCA_CLOCK_HOST_COUNTER_CYCLES 0x10000
#define DOCA_CLOCK_HOST_REAL_TIME 0x20000
#define DOCA_CLOCK_HOST_MONOTONIC 0x40000
#define DOCA_CLOCK_HOST_MONOTONIC_RAW 0x80000

/* One reading: `counter` for DOCA_CLOCK_HOST_COUNTER_CYCLES, `ts` for every other clock. */
union doca_clock_timespec_t {
	struct timespec ts;
	uint64_t counter;
};

/* Whether the device has the clock: DOCA_SUCCESS if it does, else DOCA_ERROR_NOT_SUPPORTED. */
DOCA_EXPERIMENTAL doca_error_t doca_clock_cap_nic_free_running_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_clock_cap_nic_real_time_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_clock_cap_nic_dpa_timer_is_supported(const struct doca_devinfo *devinfo);

/* A clock reader of an open device, and its end. */
DOCA_EXPERIMENTAL doca_error_t doca_clock_create(const struct doca_dev *dev, struct doca_clock **clock);
DOCA_EXPERIMENTAL doca_error_t doca_clock_destroy(struct doca_clock *clock);

/* Reads one clock. */
DOCA_EXPERIMENTAL doca_error_t doca_clock_get_timestamp(const struct doca_clock *clock,
							 uint64_t clock_type,
							 union doca_clock_timespec_t *clock_ts);

/*
 * Reads any clock and a device (NIC_*) clock together; error_margin_nsecs bounds how far apart
 * the two readings were taken (0: exactly together).
 */
DOCA_EXPERIMENTAL doca_error_t doca_clock_get_crosstimestamp(const struct doca_clock *clock,
							      uint64_t primary_clock_type,
							      uint64_t nic_clock_type,
							      union doca_clock_timespec_t *primary_clock_ts,
							      union doca_clock_timespec_t *nic_clock_ts,
							      uint64_t *error_margin_nsecs);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_CLOCK_H_ */
