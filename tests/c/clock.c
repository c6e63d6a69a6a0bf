/*
 * doca_clock.h, written as DOCA's samples write programs: on the first device, checks the
 * three clock capabilities, reads every clock, takes cross-timestamps of a host clock with each
 * device clock, and checks that misuse is refused with DOCA's codes. Also checks what
 * doca_build_config.h says this program is built for (DOCA_ARCH_HOST from the host's prefix,
 * DOCA_ARCH_DPU from the Arm's: the program prints which) and that doca_event_invalid_handle
 * is what a PE's notification handle is not. Exits non-zero if anything differs.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_clock.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>
#include <doca_types.h>
#include <doca_version.h>

DOCA_LOG_REGISTER(CLOCK_TEST);

#if defined(DOCA_ARCH_DPU) == defined(DOCA_ARCH_HOST)
#error "doca_build_config.h defines exactly one of DOCA_ARCH_DPU and DOCA_ARCH_HOST"
#endif

static int failures;

#define CHECK(call, code)                                                                          \
	do {                                                                                       \
		doca_error_t got_ = (call);                                                        \
		if (got_ != (code)) {                                                              \
			DOCA_LOG_ERR("line %d: %s returned %s, expected %s", __LINE__, #call,      \
				     doca_error_get_name(got_), doca_error_get_name(code));        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			DOCA_LOG_ERR("line %d: %s does not hold", __LINE__, #cond);                 \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static int64_t ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* Reads a timespec clock twice and the host's matching clock between: in order. */
static void check_follows_host(struct doca_clock *clock, uint64_t type, clockid_t host)
{
	union doca_clock_timespec_t a, b;
	struct timespec mid;

	CHECK(doca_clock_get_timestamp(clock, type, &a), DOCA_SUCCESS);
	clock_gettime(host, &mid);
	CHECK(doca_clock_get_timestamp(clock, type, &b), DOCA_SUCCESS);
	EXPECT(ns(&a.ts) <= ns(&mid) && ns(&mid) <= ns(&b.ts));
}

int main(int argc, char **argv)
{
	struct doca_devinfo **list;
	struct doca_dev *dev = NULL;
	struct doca_clock *clock = NULL;
	struct doca_pe *pe = NULL;
	union doca_clock_timespec_t primary, nic, c1, c2;
	doca_notification_handle_t handle = doca_event_invalid_handle;
	uint64_t margin = UINT64_MAX;
	const uint64_t nic_clocks[] = {DOCA_CLOCK_NIC_FREE_RUNNING, DOCA_CLOCK_NIC_REAL_TIME,
				       DOCA_CLOCK_NIC_DPA_TIMER};
	uint32_t n = 0;
	size_t i;

	DOCA_LOG_INFO("DOCA %s, built for the %s", doca_version(),
#ifdef DOCA_ARCH_DPU
		      "BlueField Arm (DOCA_ARCH_DPU)"
#else
		      "host (DOCA_ARCH_HOST)"
#endif
	);
#ifdef DOCA_ARCH_DPU
	const char *side = "dpu";
#else
	const char *side = "host";
#endif
	/* The side the build was meant for, if the caller says. */
	if (argc > 1 && strcmp(argv[1], side) != 0) {
		DOCA_LOG_ERR("built for the %s side, expected the %s side", side, argv[1]);
		return EXIT_FAILURE;
	}
	CHECK(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	if (failures || n == 0)
		return EXIT_FAILURE;
	CHECK(doca_clock_cap_nic_free_running_is_supported(list[0]), DOCA_SUCCESS);
	CHECK(doca_clock_cap_nic_real_time_is_supported(list[0]), DOCA_SUCCESS);
	CHECK(doca_clock_cap_nic_dpa_timer_is_supported(list[0]), DOCA_SUCCESS);
	CHECK(doca_clock_cap_nic_dpa_timer_is_supported(NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_dev_open(list[0], &dev), DOCA_SUCCESS);
	CHECK(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
	if (failures)
		return EXIT_FAILURE;

	CHECK(doca_clock_create(NULL, &clock), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_create(dev, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_create(dev, &clock), DOCA_SUCCESS);
	if (failures)
		return EXIT_FAILURE;
	/* The device stays open while a clock reads it. */
	CHECK(doca_dev_close(dev), DOCA_ERROR_IN_USE);

	check_follows_host(clock, DOCA_CLOCK_HOST_REAL_TIME, CLOCK_REALTIME);
	check_follows_host(clock, DOCA_CLOCK_HOST_MONOTONIC, CLOCK_MONOTONIC);
	check_follows_host(clock, DOCA_CLOCK_HOST_MONOTONIC_RAW, CLOCK_MONOTONIC_RAW);
	/* The device's free-running clock and DPA timer do not go back. */
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_FREE_RUNNING, &c1), DOCA_SUCCESS);
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_FREE_RUNNING, &c2), DOCA_SUCCESS);
	EXPECT(ns(&c2.ts) >= ns(&c1.ts));
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_DPA_TIMER, &c1), DOCA_SUCCESS);
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_DPA_TIMER, &c2), DOCA_SUCCESS);
	EXPECT(ns(&c2.ts) >= ns(&c1.ts));
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_HOST_COUNTER_CYCLES, &c1), DOCA_SUCCESS);
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_HOST_COUNTER_CYCLES, &c2), DOCA_SUCCESS);
	EXPECT(c2.counter >= c1.counter);

	for (i = 0; i < sizeof(nic_clocks) / sizeof(nic_clocks[0]); i++) {
		CHECK(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_REAL_TIME, nic_clocks[i],
						    &primary, &nic, &margin),
		      DOCA_SUCCESS);
		EXPECT(margin < 1000000000ULL); /* read together: well within a second */
		EXPECT(ns(&nic.ts) > 0 && ns(&primary.ts) > 0);
	}
	/* The second clock of a cross-timestamp is the device's; clock types are the documented. */
	CHECK(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_NIC_REAL_TIME, DOCA_CLOCK_HOST_REAL_TIME,
					    &primary, &nic, &margin),
	      DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_REAL_TIME, DOCA_CLOCK_NIC_REAL_TIME,
					    &primary, &nic, NULL),
	      DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_get_timestamp(clock, 0x4, &c1), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_REAL_TIME | DOCA_CLOCK_HOST_MONOTONIC, &c1),
	      DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_get_timestamp(clock, DOCA_CLOCK_HOST_MONOTONIC, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_clock_get_timestamp(NULL, DOCA_CLOCK_HOST_MONOTONIC, &c1), DOCA_ERROR_INVALID_VALUE);

	/* doca_event_invalid_handle stands for no handle: a PE's handle is a real one. */
	CHECK(doca_pe_create(&pe), DOCA_SUCCESS);
	if (pe != NULL) {
		CHECK(doca_pe_get_notification_handle(pe, &handle), DOCA_SUCCESS);
		EXPECT(handle != doca_event_invalid_handle);
		CHECK(doca_pe_destroy(pe), DOCA_SUCCESS);
	}

	CHECK(doca_clock_destroy(clock), DOCA_SUCCESS);
	CHECK(doca_clock_destroy(clock), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_dev_close(dev), DOCA_SUCCESS);
	if (failures) {
		DOCA_LOG_ERR("%d check(s) failed", failures);
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("every clock check passed");
	return EXIT_SUCCESS;
}
