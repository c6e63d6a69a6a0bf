/*
 * The kernel-launch program's host side, written as DOCA 3.x's DPA samples are: a DPA context on
 * the first device with a DPA, a wait event the CPU publishes and the DPA subscribes to, a
 * completion event the other way round, and launches of the kernels dpacc built from
 * device/dpa_kernel_launch_dev.c (the app `dpa_sample_app`):
 *
 *   1. hello_world (no parameter) on one thread, held until a second thread raises the wait
 *      event past 4; it sets the completion event to 10;
 *   2. stamp on 8 threads with four arguments (64- and 32-bit), which each stamp a slot of a
 *      DPA-memory table; it adds 5 to the completion event;
 *   3. shuffle on one thread: memset, memcpy and memmove in a kernel;
 *   4. DOCA's rules: the thread count, the wait threshold, the events' locations.
 *
 * Every wait is bounded and checks the context's health. It prints "N checks, 0 wrong" and
 * exits 0 when all is as expected.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <doca_build_config.h>
#include <doca_dev.h>
#include <doca_dpa.h>
#include <doca_error.h>
#include <doca_sync_event.h>
#include <doca_version.h>

#include "../kernel_launch_common.h"

/* What dpacc made from the device code. */
extern struct doca_dpa_app *dpa_sample_app;
extern doca_dpa_func_t hello_world;
extern doca_dpa_func_t stamp;
extern doca_dpa_func_t shuffle;

#define WAIT_SEC 10

#define CHECK(call)                                                                                \
	do {                                                                                       \
		doca_error_t check_result_ = (call);                                               \
		if (check_result_ != DOCA_SUCCESS) {                                               \
			fprintf(stderr, "kernel launch: %s failed: %s\n", #call,                   \
				doca_error_get_descr(check_result_));                              \
			exit(EXIT_FAILURE);                                                        \
		}                                                                                  \
	} while (0)

static unsigned int checks, wrong;

static void expect(bool ok, const char *what)
{
	checks++;
	if (!ok) {
		wrong++;
		fprintf(stderr, "kernel launch: wrong: %s\n", what);
	}
}

static void expect_error(doca_error_t got, doca_error_t want, const char *what)
{
	checks++;
	if (got != want) {
		wrong++;
		fprintf(stderr, "kernel launch: %s answered %s, not %s\n", what, doca_error_get_name(got),
			doca_error_get_name(want));
	}
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct doca_dev *open_dpa_device(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev = NULL;
	uint32_t n;

	CHECK(doca_devinfo_create_list(&list, &n));
	for (uint32_t i = 0; i < n && dev == NULL; i++) {
		if (doca_dpa_cap_is_supported(list[i]) == DOCA_SUCCESS)
			CHECK(doca_dev_open(list[i], &dev));
	}
	CHECK(doca_devinfo_destroy_list(list));
	if (dev == NULL) {
		fprintf(stderr, "kernel launch: no device with a DPA\n");
		exit(EXIT_FAILURE);
	}
	return dev;
}

/* An event the CPU publishes and the DPA subscribes to, or the other way round. */
static struct doca_sync_event *make_event(struct doca_dev *dev, struct doca_dpa *dpa, bool to_dpa)
{
	struct doca_sync_event *ev;

	CHECK(doca_sync_event_create(&ev));
	if (to_dpa) {
		CHECK(doca_sync_event_add_publisher_location_cpu(ev, dev));
		CHECK(doca_sync_event_add_subscriber_location_dpa(ev, dpa));
	} else {
		CHECK(doca_sync_event_add_publisher_location_dpa(ev, dpa));
		CHECK(doca_sync_event_add_subscriber_location_cpu(ev, dev));
	}
	CHECK(doca_sync_event_start(ev));
	return ev;
}

/* Waits, at most WAIT_SEC, for `ev` to exceed `after`; fails if the DPA context fails. */
static uint64_t wait_above(struct doca_dpa *dpa, struct doca_sync_event *ev, uint64_t after, const char *what)
{
	const double deadline = now_sec() + WAIT_SEC;
	uint64_t value = 0;

	for (;;) {
		CHECK(doca_sync_event_get(ev, &value));
		if (value > after)
			return value;
		if (doca_dpa_peek_at_last_error(dpa) != DOCA_SUCCESS) {
			fprintf(stderr, "kernel launch: the DPA context failed while waiting for %s\n", what);
			exit(EXIT_FAILURE);
		}
		if (now_sec() > deadline) {
			fprintf(stderr, "kernel launch: %s stayed at %lu for %d s\n", what, (unsigned long)value,
				WAIT_SEC);
			exit(EXIT_FAILURE);
		}
		usleep(1000);
	}
}

struct releaser {
	struct doca_sync_event *wait_ev;
};

/* Raises the wait event past the launch's threshold a moment after the launch. */
static void *release_launch(void *arg)
{
	struct releaser *r = arg;

	usleep(100 * 1000);
	CHECK(doca_sync_event_update_set(r->wait_ev, 5));
	return NULL;
}

int main(void)
{
	struct doca_dev *dev = open_dpa_device();
	struct doca_dpa *dpa;
	struct doca_sync_event *wait_ev, *comp_ev, *marks;
	doca_dpa_dev_sync_event_t marks_handle;
	doca_dpa_dev_uintptr_t table;
	struct slot slots[STAMP_THREADS];
	unsigned int max_threads = 0;
	unsigned long long max_run_time = 0;
	uint64_t value = 0;
	pthread_t thread;
	struct releaser releaser;

#ifdef DOCA_ARCH_DPU
	printf("kernel launch: built for the BlueField Arm (DOCA %s)\n", DOCA_VERSION_STRING);
#else
	printf("kernel launch: built for the host (DOCA %s)\n", DOCA_VERSION_STRING);
#endif
	CHECK(doca_dpa_create(dev, &dpa));
	CHECK(doca_dpa_set_app(dpa, dpa_sample_app));
	CHECK(doca_dpa_start(dpa));
	CHECK(doca_dpa_get_max_threads_per_kernel(dpa, &max_threads));
	CHECK(doca_dpa_get_kernel_max_run_time(dpa, &max_run_time));
	expect(max_threads >= STAMP_THREADS, "max threads per kernel");
	expect(max_run_time > 0, "kernel max run time");

	wait_ev = make_event(dev, dpa, true);
	comp_ev = make_event(dev, dpa, false);
	marks = make_event(dev, dpa, false);
	CHECK(doca_sync_event_get_dpa_handle(marks, dpa, &marks_handle));

	/* 1. A kernel with no parameter, held by the wait event. */
	CHECK(doca_dpa_kernel_launch_update_set(dpa, wait_ev, 4, comp_ev, 10, 1, &hello_world));
	usleep(20 * 1000);
	CHECK(doca_sync_event_get(comp_ev, &value));
	expect(value == 0, "hello_world ran before the wait event reached its threshold");
	releaser.wait_ev = wait_ev;
	if (pthread_create(&thread, NULL, release_launch, &releaser) != 0) {
		fprintf(stderr, "kernel launch: cannot start a thread\n");
		return EXIT_FAILURE;
	}
	value = wait_above(dpa, comp_ev, 9, "hello_world's completion");
	expect(value == 10, "hello_world set the completion event to 10");
	pthread_join(thread, NULL);

	/* 2. Eight threads, four arguments of both widths, no wait event. */
	CHECK(doca_dpa_mem_alloc(dpa, sizeof(slots), &table));
	memset(slots, 0, sizeof(slots));
	CHECK(doca_dpa_h2d_memcpy(dpa, table, slots, sizeof(slots)));
	CHECK(doca_dpa_kernel_launch_update_add(dpa, NULL, 0, comp_ev, 5, STAMP_THREADS, &stamp, table,
						(uint32_t)STAMP_BASE, marks_handle, STAMP_MAGIC));
	value = wait_above(dpa, comp_ev, 14, "stamp's completion");
	expect(value == 15, "stamp added 5 to the completion event");
	CHECK(doca_sync_event_get(marks, &value));
	expect(value == STAMP_THREADS, "every thread of stamp marked once");
	CHECK(doca_dpa_d2h_memcpy(dpa, slots, table, sizeof(slots)));
	for (unsigned int rank = 0; rank < STAMP_THREADS; rank++) {
		expect(slots[rank].value == STAMP_BASE + rank, "a slot holds base + its rank");
		expect(slots[rank].magic == STAMP_MAGIC, "a slot holds the 64-bit argument after the 32-bit one");
		expect(slots[rank].threads == STAMP_THREADS, "a thread sees the launch's thread count");
		expect(slots[rank].elapsed_ok == 1, "the thread's counters moved forward");
	}

	/* 3. The C library functions a kernel may call. */
	{
		enum { LEN = 100 };
		uint8_t bytes[2 * LEN + 1];
		doca_dpa_dev_uintptr_t buf;
		bool ok = true;

		CHECK(doca_dpa_mem_alloc(dpa, sizeof(bytes), &buf));
		memset(bytes, 0, sizeof(bytes));
		CHECK(doca_dpa_h2d_memcpy(dpa, buf, bytes, sizeof(bytes)));
		CHECK(doca_dpa_kernel_launch_update_add(dpa, NULL, 0, comp_ev, 1, 1, &shuffle, buf,
							(uint32_t)LEN, (uint32_t)0xab));
		value = wait_above(dpa, comp_ev, 15, "shuffle's completion");
		CHECK(doca_dpa_d2h_memcpy(dpa, bytes, buf, sizeof(bytes)));
		/* memset then memcpy made 2 * LEN bytes of 0xab, the first then 1; memmove shifted
		 * them up by one. */
		ok = bytes[0] == 1 && bytes[1] == 1;
		for (unsigned int i = 2; i <= 2 * LEN; i++)
			ok = ok && bytes[i] == 0xab;
		expect(ok, "memset, memcpy and memmove in a kernel");
		CHECK(doca_dpa_mem_free(dpa, buf));
	}

	/* 4. DOCA's rules. */
	expect_error(doca_dpa_kernel_launch_update_set(dpa, NULL, 0, comp_ev, 1, 0, &hello_world),
		     DOCA_ERROR_INVALID_VALUE, "a launch on 0 threads");
	expect_error(doca_dpa_kernel_launch_update_set(dpa, NULL, 0, comp_ev, 1, max_threads + 1, &hello_world),
		     DOCA_ERROR_INVALID_VALUE, "a launch on too many threads");
	expect_error(doca_dpa_kernel_launch_update_set(dpa, wait_ev, 255, comp_ev, 1, 1, &hello_world),
		     DOCA_ERROR_INVALID_VALUE, "a wait threshold of 255");
	expect_error(doca_dpa_kernel_launch_update_set(dpa, comp_ev, 1, NULL, 0, 1, &hello_world),
		     DOCA_ERROR_INVALID_VALUE, "waiting for an event the DPA does not subscribe to");
	expect_error(doca_dpa_kernel_launch_update_set(dpa, NULL, 0, wait_ev, 1, 1, &hello_world),
		     DOCA_ERROR_INVALID_VALUE, "completing an event the DPA does not publish");
	expect_error(doca_dpa_kernel_launch_update_set(NULL, NULL, 0, comp_ev, 1, 1, &hello_world),
		     DOCA_ERROR_INVALID_VALUE, "a NULL DPA context");
	expect_error(doca_dpa_kernel_launch_update_set(dpa, NULL, 0, comp_ev, 1, 1, NULL),
		     DOCA_ERROR_INVALID_VALUE, "a NULL kernel");
	{
		/* A DPA thread passes its kernel one argument: stamp takes four. */
		struct doca_dpa_thread *t;

		CHECK(doca_dpa_thread_create(dpa, &t));
		expect_error(doca_dpa_thread_set_func_arg(t, &stamp, 0), DOCA_ERROR_INVALID_VALUE,
			     "a DPA thread running a kernel of four parameters");
		CHECK(doca_dpa_thread_set_func_arg(t, &hello_world, 0));
		CHECK(doca_dpa_thread_destroy(t));
	}
	CHECK(doca_dpa_peek_at_last_error(dpa));

	CHECK(doca_dpa_mem_free(dpa, table));
	CHECK(doca_sync_event_stop(marks));
	CHECK(doca_sync_event_destroy(marks));
	CHECK(doca_sync_event_stop(comp_ev));
	CHECK(doca_sync_event_destroy(comp_ev));
	CHECK(doca_sync_event_stop(wait_ev));
	CHECK(doca_sync_event_destroy(wait_ev));
	CHECK(doca_dpa_destroy(dpa));
	CHECK(doca_dev_close(dev));

	printf("kernel launch: %u checks, %u wrong\n", checks, wrong);
	return wrong == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
