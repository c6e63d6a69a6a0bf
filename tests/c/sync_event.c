/*
 * A sync event between two CPU threads, written as DOCA's samples write programs: the main
 * thread creates the event with a CPU publisher and a CPU subscriber on the first device,
 * starts it, and a second thread waits on it and answers; each result is checked and logged.
 * Also checks that misuse is refused with DOCA's codes, and prints the SDK version. Exits
 * non-zero if anything differs.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_sync_event.h>
#include <doca_version.h>

DOCA_LOG_REGISTER(SYNC_EVENT_TEST);

#define ROUNDS 1000
#define MASK_ALL UINT64_MAX

static _Atomic int failures; /* both threads count */

#define CHECK(call, code)                                                                          \
	do {                                                                                       \
		doca_error_t got_ = (call);                                                        \
		if (got_ != (code)) {                                                              \
			DOCA_LOG_ERR("line %d: %s returned %s, expected %s", __LINE__, #call,      \
				     doca_error_get_name(got_), doca_error_get_name(code));        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

struct pair {
	struct doca_sync_event *ping; /* main -> peer */
	struct doca_sync_event *pong; /* peer -> main */
};

/* The peer: waits for each ping to pass its round, then answers with a pong. */
static void *peer(void *arg)
{
	struct pair *p = arg;
	uint64_t round, fetched = 0;

	for (round = 0; round < ROUNDS; round++) {
		CHECK(doca_sync_event_wait_gt_yield(p->ping, round, MASK_ALL), DOCA_SUCCESS);
		CHECK(doca_sync_event_update_add(p->pong, 1, &fetched), DOCA_SUCCESS);
		if (fetched != round) {
			DOCA_LOG_ERR("pong was %lu before round %lu", (unsigned long)fetched,
				     (unsigned long)round);
			failures++;
		}
	}
	return NULL;
}

static doca_error_t create_cpu_event(struct doca_dev *dev, struct doca_sync_event **event)
{
	doca_error_t result = doca_sync_event_create(event);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create a sync event: %s", doca_error_get_descr(result));
		return result;
	}
	result = doca_sync_event_add_publisher_location_cpu(*event, dev);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_add_subscriber_location_cpu(*event, dev);
	if (result == DOCA_SUCCESS)
		result = doca_sync_event_start(*event);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to set up a sync event: %s", doca_error_get_descr(result));
		doca_sync_event_destroy(*event);
	}
	return result;
}

int main(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev = NULL;
	struct doca_log_backend *sdk_log;
	struct doca_sync_event *idle;
	struct pair p;
	pthread_t thread;
	uint32_t n = 0;
	uint64_t value = 0, word = 7;
	char pci[DOCA_DEVINFO_PCI_ADDR_SIZE];

	if (doca_log_backend_create_standard() != DOCA_SUCCESS ||
	    doca_log_backend_create_with_file_sdk(stderr, &sdk_log) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	DOCA_LOG_INFO("DOCA SDK %s, runtime %s", doca_version(), doca_version_runtime());
	if (strcmp(doca_version(), doca_version_runtime()) != 0 || !DOCA_VERSION_LTE_CURRENT(2, 9, 0)) {
		DOCA_LOG_ERR("compile-time and run-time versions differ");
		failures++;
	}

	CHECK(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	if (n == 0)
		return EXIT_FAILURE;
	CHECK(doca_devinfo_get_pci_addr_str(list[0], pci), DOCA_SUCCESS);
	DOCA_LOG_INFO("using device %s (PCI address of %zu characters)", pci, strlen(pci));
	CHECK(doca_dev_open(list[0], &dev), DOCA_SUCCESS);
	CHECK(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
	if (dev == NULL)
		return EXIT_FAILURE;

	/* Misuse: operations need a started event, start needs both locations. */
	CHECK(doca_sync_event_create(&idle), DOCA_SUCCESS);
	CHECK(doca_sync_event_get(idle, &value), DOCA_ERROR_BAD_STATE);
	CHECK(doca_sync_event_start(idle), DOCA_ERROR_BAD_STATE);
	CHECK(doca_sync_event_add_publisher_location_cpu(idle, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_sync_event_add_publisher_location_remote_net(idle), DOCA_ERROR_NOT_SUPPORTED);
	CHECK(doca_sync_event_set_addr(idle, &word), DOCA_SUCCESS);
	CHECK(doca_sync_event_add_publisher_location_cpu(idle, dev), DOCA_SUCCESS);
	CHECK(doca_sync_event_add_publisher_location_cpu(idle, dev), DOCA_ERROR_BAD_STATE);
	CHECK(doca_sync_event_add_subscriber_location_cpu(idle, dev), DOCA_SUCCESS);
	CHECK(doca_sync_event_start(idle), DOCA_SUCCESS);
	CHECK(doca_sync_event_get(idle, &value), DOCA_SUCCESS);
	if (value != 7) {
		DOCA_LOG_ERR("an event kept in program memory reads %lu, not 7", (unsigned long)value);
		failures++;
	}
	CHECK(doca_sync_event_update_set(idle, 9), DOCA_SUCCESS);
	if (word != 9) {
		DOCA_LOG_ERR("update_set did not reach the program's memory");
		failures++;
	}
	CHECK(doca_dev_close(dev), DOCA_ERROR_IN_USE);
	CHECK(doca_sync_event_destroy(idle), DOCA_SUCCESS);
	CHECK(doca_sync_event_destroy(idle), DOCA_ERROR_INVALID_VALUE);

	/* Ping-pong with the second thread. */
	if (create_cpu_event(dev, &p.ping) != DOCA_SUCCESS || create_cpu_event(dev, &p.pong) != DOCA_SUCCESS)
		return EXIT_FAILURE;
	if (pthread_create(&thread, NULL, peer, &p) != 0)
		return EXIT_FAILURE;
	for (uint64_t round = 0; round < ROUNDS; round++) {
		CHECK(doca_sync_event_update_set(p.ping, round + 1), DOCA_SUCCESS);
		CHECK(doca_sync_event_wait_gt(p.pong, round, MASK_ALL), DOCA_SUCCESS);
	}
	pthread_join(thread, NULL);
	CHECK(doca_sync_event_get(p.pong, &value), DOCA_SUCCESS);
	if (value != ROUNDS) {
		DOCA_LOG_ERR("pong reads %lu after %d rounds", (unsigned long)value, ROUNDS);
		failures++;
	}
	CHECK(doca_sync_event_stop(p.ping), DOCA_SUCCESS);
	CHECK(doca_sync_event_update_add(p.ping, 1, NULL), DOCA_ERROR_BAD_STATE);
	CHECK(doca_sync_event_destroy(p.ping), DOCA_SUCCESS);
	CHECK(doca_sync_event_destroy(p.pong), DOCA_SUCCESS);
	CHECK(doca_dev_close(dev), DOCA_SUCCESS);

	if (failures) {
		DOCA_LOG_ERR("%d check(s) failed", failures);
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("sync event: %d rounds between two threads, every check passed", ROUNDS);
	return EXIT_SUCCESS;
}
