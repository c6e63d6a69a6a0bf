/*
 * What the Comch example programs share: the clock, command-line helpers, opening a device and
 * a representor by PCI address, registered buffers, and progress helpers. Every program includes
 * it once, after DOCA_LOG_REGISTER (the helpers log through the program's source).
 */
#ifndef DPAKIT_EXAMPLES_COMCH_COMMON_H
#define DPAKIT_EXAMPLES_COMCH_COMMON_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_argp.h>
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_comch.h>
#include <doca_comch_consumer.h>
#include <doca_comch_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#define COMCH_STOP_TIMEOUT_SEC 5
#define COMCH_PAGE_SIZE 4096 /* consumer memory gets pages of its own */

static inline double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Flags ---- */

#define COMCH_MAX_NAME_LEN 120 /* what doca_comch_cap_get_max_name_len reports, with the NUL */
#define COMCH_MAX_TEXT_LEN 4096
#define COMCH_MAX_MSG_SIZE (1u << 20) /* the largest fast-path message the examples move */

/* The flags of the Comch examples; each program registers the ones it takes. */
struct comch_flags {
	char pci_addr[DOCA_DEVINFO_PCI_ADDR_SIZE];
	char rep_pci_addr[DOCA_DEVINFO_REP_PCI_ADDR_SIZE];
	char server_name[COMCH_MAX_NAME_LEN];
	char text[COMCH_MAX_TEXT_LEN];
	int count;
	int min_count; /* 1 for clients (they exchange at least one message), 0 for servers */
	int size;
};

static inline doca_error_t copy_flag(char *dst, size_t size, const char *value, const char *flag)
{
	if (strlen(value) >= size) {
		DOCA_LOG_ERR("--%s takes at most %zu characters", flag, size - 1);
		return DOCA_ERROR_INVALID_VALUE;
	}
	strcpy(dst, value);
	return DOCA_SUCCESS;
}

static inline doca_error_t pci_addr_flag(void *param, void *config)
{
	struct comch_flags *cfg = config;

	return copy_flag(cfg->pci_addr, sizeof(cfg->pci_addr), param, "pci-addr");
}

static inline doca_error_t rep_pci_flag(void *param, void *config)
{
	struct comch_flags *cfg = config;

	return copy_flag(cfg->rep_pci_addr, sizeof(cfg->rep_pci_addr), param, "rep-pci");
}

static inline doca_error_t server_name_flag(void *param, void *config)
{
	struct comch_flags *cfg = config;

	return copy_flag(cfg->server_name, sizeof(cfg->server_name), param, "server-name");
}

static inline doca_error_t text_flag(void *param, void *config)
{
	struct comch_flags *cfg = config;

	return copy_flag(cfg->text, sizeof(cfg->text), param, "text");
}

static inline doca_error_t count_flag(void *param, void *config)
{
	struct comch_flags *cfg = config;
	int count = *(int *)param;

	if (count < cfg->min_count) {
		DOCA_LOG_ERR("--count takes %s, not %d",
			     cfg->min_count > 0 ? "a positive count" : "a count of 0 or more", count);
		return DOCA_ERROR_INVALID_VALUE;
	}
	cfg->count = count;
	return DOCA_SUCCESS;
}

static inline doca_error_t size_flag(void *param, void *config)
{
	struct comch_flags *cfg = config;
	int size = *(int *)param;

	if (size < 1 || (unsigned int)size > COMCH_MAX_MSG_SIZE) {
		DOCA_LOG_ERR("--size takes 1 to %u bytes, not %d", COMCH_MAX_MSG_SIZE, size);
		return DOCA_ERROR_INVALID_VALUE;
	}
	cfg->size = size;
	return DOCA_SUCCESS;
}

static inline doca_error_t register_flag(const char *short_name, const char *long_name,
					 const char *arguments, const char *description,
					 enum doca_argp_type type, doca_argp_param_cb_t callback)
{
	struct doca_argp_param *param;
	doca_error_t result = doca_argp_param_create(&param);

	if (result != DOCA_SUCCESS)
		return result;
	doca_argp_param_set_short_name(param, short_name);
	doca_argp_param_set_long_name(param, long_name);
	doca_argp_param_set_arguments(param, arguments);
	doca_argp_param_set_description(param, description);
	doca_argp_param_set_type(param, type);
	doca_argp_param_set_callback(param, callback);
	result = doca_argp_register_param(param);
	if (result != DOCA_SUCCESS)
		doca_argp_param_destroy(param);
	return result;
}

/* ---- Devices ---- */

/*
 * Opens the device at pci_addr if fits() accepts it; `role` names what the device must host in
 * the message when it does not ("a Comch server (give the Arm-side device)").
 */
static inline doca_error_t open_device(const char *pci_addr, doca_error_t (*fits)(const struct doca_devinfo *),
				       const char *role, struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t n;
	doca_error_t result = doca_devinfo_create_list(&list, &n);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot list devices: %s", doca_error_get_descr(result));
		return result;
	}
	*dev = NULL;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		result = fits(list[i]);
		if (result != DOCA_SUCCESS) {
			DOCA_LOG_ERR("device %s cannot host %s: %s", pci_addr, role, doca_error_get_descr(result));
			break;
		}
		result = doca_dev_open(list[i], dev);
		if (result != DOCA_SUCCESS)
			DOCA_LOG_ERR("cannot open device %s: %s", pci_addr, doca_error_get_descr(result));
		break;
	}
	if (result == DOCA_ERROR_NOT_FOUND)
		DOCA_LOG_ERR("no device at PCI address %s", pci_addr);
	doca_devinfo_destroy_list(list);
	return result;
}

/* Opens the network representor of dev at pci_addr. */
static inline doca_error_t open_representor(struct doca_dev *dev, const char *pci_addr,
					    struct doca_dev_rep **rep)
{
	struct doca_devinfo_rep **list;
	uint32_t n;
	doca_error_t result = doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &list, &n);

	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot list representors: %s", doca_error_get_descr(result));
		return result;
	}
	*rep = NULL;
	result = DOCA_ERROR_NOT_FOUND;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t equal = 0;

		if (doca_devinfo_rep_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		result = doca_dev_rep_open(list[i], rep);
		if (result != DOCA_SUCCESS)
			DOCA_LOG_ERR("cannot open representor %s: %s", pci_addr, doca_error_get_descr(result));
		break;
	}
	if (result == DOCA_ERROR_NOT_FOUND)
		DOCA_LOG_ERR("the device has no network representor at PCI address %s", pci_addr);
	doca_devinfo_rep_destroy_list(list);
	return result;
}

/* Whether buffers of `size` bytes fit what the device's producers and consumers take. */
static inline bool size_supported(struct doca_dev *dev, size_t size)
{
	uint32_t producer_max = 0, consumer_max = 0;

	if (doca_comch_producer_cap_get_max_buf_size(doca_dev_as_devinfo(dev), &producer_max) != DOCA_SUCCESS ||
	    doca_comch_consumer_cap_get_max_buf_size(doca_dev_as_devinfo(dev), &consumer_max) != DOCA_SUCCESS)
		return false;
	return size <= producer_max && size <= consumer_max;
}

/* ---- Memory ---- */

/* `num` buffers of `size` bytes over memory of their own, registered on a device. */
struct buffers {
	uint8_t *mem;
	size_t size; /* bytes per buffer */
	uint32_t num;
	struct doca_mmap *mmap;
	struct doca_buf_inventory *inventory;
	struct doca_buf **bufs;
};

static inline void buffers_destroy(struct buffers *b)
{
	for (uint32_t i = 0; b->bufs != NULL && i < b->num; i++)
		if (b->bufs[i] != NULL)
			doca_buf_dec_refcount(b->bufs[i], NULL);
	if (b->inventory != NULL && doca_buf_inventory_destroy(b->inventory) != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot destroy a buffer inventory");
	if (b->mmap != NULL && doca_mmap_destroy(b->mmap) != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot destroy an mmap");
	free(b->bufs);
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

/* `num` buffers of `size` bytes in page-aligned memory, registered on `dev` with `access`. */
static inline doca_error_t buffers_create(struct doca_dev *dev, uint32_t access, uint32_t num, size_t size,
					  struct buffers *b)
{
	size_t len = ((num * size + COMCH_PAGE_SIZE - 1) / COMCH_PAGE_SIZE) * COMCH_PAGE_SIZE;
	void *mem = NULL;
	doca_error_t result;

	memset(b, 0, sizeof(*b));
	b->bufs = calloc(num, sizeof(*b->bufs));
	if (b->bufs == NULL || posix_memalign(&mem, COMCH_PAGE_SIZE, len) != 0) {
		DOCA_LOG_ERR("out of memory for %u buffers of %zu bytes", num, size);
		free(b->bufs);
		b->bufs = NULL;
		return DOCA_ERROR_NO_MEMORY;
	}
	memset(mem, 0, len);
	b->mem = mem;
	b->size = size;
	b->num = num;
	result = doca_mmap_create(&b->mmap);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_set_memrange(b->mmap, b->mem, len);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_set_permissions(b->mmap, access);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_add_dev(b->mmap, dev);
	if (result == DOCA_SUCCESS)
		result = doca_mmap_start(b->mmap);
	if (result == DOCA_SUCCESS)
		result = doca_buf_inventory_create(num, &b->inventory);
	if (result == DOCA_SUCCESS)
		result = doca_buf_inventory_start(b->inventory);
	for (uint32_t i = 0; i < num && result == DOCA_SUCCESS; i++)
		result = doca_buf_inventory_buf_get_by_addr(b->inventory, b->mmap, b->mem + i * size, size,
							    &b->bufs[i]);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot register %u buffers of %zu bytes: %s", num, size,
			     doca_error_get_descr(result));
		buffers_destroy(b);
	}
	return result;
}

/* Posts a receive (again); a stopping consumer refuses it, and the task is ours to free. */
static inline void post_receive(struct doca_comch_consumer_task_post_recv *task)
{
	struct doca_task *t = doca_comch_consumer_task_post_recv_as_task(task);

	doca_buf_reset_data_len(doca_comch_consumer_task_post_recv_get_buf(task));
	if (doca_task_submit(t) != DOCA_SUCCESS)
		doca_task_free(t);
}

/* ---- Start-up ---- */

/*
 * Starts the program's logging and parses its flags into cfg (register_flags registers the
 * program's share of struct comch_flags). On failure whatever it started is undone and the
 * reason logged (a bad flag: by the parser); on success the program ends with
 * doca_argp_destroy().
 */
static inline doca_error_t comch_parse_flags(const char *program, struct comch_flags *cfg,
					     doca_error_t (*register_flags)(void), int argc, char **argv)
{
	doca_error_t result = doca_log_backend_create_standard();

	if (result != DOCA_SUCCESS)
		return result;
	result = doca_argp_init(program, cfg);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("cannot start the argument parser: %s", doca_error_get_descr(result));
		return result;
	}
	result = register_flags();
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("cannot register the flags: %s", doca_error_get_descr(result));
	else
		result = doca_argp_start(argc, argv);
	if (result != DOCA_SUCCESS)
		doca_argp_destroy();
	return result;
}

/* ---- Progress ---- */

/* Sleeps on the PE's notification handle until work arrives or timeout_ms passes. */
static inline void sleep_on_pe(struct doca_pe *pe, doca_notification_handle_t handle, int timeout_ms)
{
	struct pollfd pfd = {.fd = handle, .events = POLLIN};

	if (doca_pe_request_notification(pe) != DOCA_SUCCESS)
		return;
	(void)poll(&pfd, 1, timeout_ms);
	doca_pe_clear_notification(pe, handle);
}

/*
 * Progresses until done(state) holds, or false once now_sec() passes deadline: polling while
 * events come, sleeping on the PE's notification handle once none came for spin_usec.
 */
static inline bool progress_until(struct doca_pe *pe, doca_notification_handle_t handle, int spin_usec,
				  bool (*done)(const void *state), const void *state, double deadline)
{
	double idle_since = now_sec();

	while (!done(state)) {
		double now;

		if (doca_pe_progress(pe)) {
			idle_since = now_sec();
			continue;
		}
		now = now_sec();
		if (now > deadline)
			return false;
		if (now - idle_since > spin_usec / 1e6)
			sleep_on_pe(pe, handle, 10);
	}
	return true;
}

/* Stops a context (if it is not IDLE already) and progresses until it is. */
static inline doca_error_t stop_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	enum doca_ctx_states st = DOCA_CTX_STATE_IDLE;
	double deadline = now_sec() + COMCH_STOP_TIMEOUT_SEC;
	doca_error_t result;

	if (doca_ctx_get_state(ctx, &st) == DOCA_SUCCESS && st == DOCA_CTX_STATE_IDLE)
		return DOCA_SUCCESS;
	result = doca_ctx_stop(ctx);
	if (result != DOCA_SUCCESS && result != DOCA_ERROR_IN_PROGRESS)
		return result;
	while (doca_ctx_get_state(ctx, &st) == DOCA_SUCCESS && st != DOCA_CTX_STATE_IDLE) {
		if (now_sec() > deadline)
			return DOCA_ERROR_TIME_OUT;
		doca_pe_progress(pe);
	}
	return DOCA_SUCCESS;
}

#endif /* DPAKIT_EXAMPLES_COMCH_COMMON_H */
