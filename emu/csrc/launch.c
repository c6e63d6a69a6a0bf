/*
 * doca_dpa_kernel_launch_update_set / _add on the soft device. Both are variadic: the C side asks
 * the Rust side how many arguments the kernel takes and which are 32-bit, reads each with its
 * width, and hands them over with the rest of the call.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <doca_dpa.h>
#include <doca_sync_event.h>

/* Both validate what they are given and return the DOCA error code; defined in Rust
 * (capi::dpa_launch). */
doca_error_t dpakit_soft_internal_launch_args(struct doca_dpa *dpa, doca_dpa_func_t *func, bool add,
					      uint32_t *num_args, uint32_t *narrow_args);
doca_error_t dpakit_soft_internal_launch(struct doca_dpa *dpa, struct doca_sync_event *wait_event,
					 uint64_t wait_threshold, struct doca_sync_event *comp_event,
					 uint64_t comp_count, unsigned int num_threads,
					 doca_dpa_func_t *func, bool add, const uint64_t *args,
					 uint32_t num_args);

#define KERNEL_MAX_ARGS 16u

static doca_error_t launch(struct doca_dpa *dpa, struct doca_sync_event *wait_event,
			   uint64_t wait_threshold, struct doca_sync_event *comp_event,
			   uint64_t comp_count, unsigned int num_threads, doca_dpa_func_t *func,
			   bool add, va_list ap)
{
	uint64_t args[KERNEL_MAX_ARGS] = {0};
	uint32_t num_args = 0, narrow = 0;
	doca_error_t result;

	result = dpakit_soft_internal_launch_args(dpa, func, add, &num_args, &narrow);
	if (result != DOCA_SUCCESS)
		return result;
	if (num_args > KERNEL_MAX_ARGS)
		num_args = KERNEL_MAX_ARGS;
	for (uint32_t i = 0; i < num_args; i++) {
		if (narrow & (1u << i))
			args[i] = va_arg(ap, unsigned int);
		else
			args[i] = va_arg(ap, uint64_t);
	}
	return dpakit_soft_internal_launch(dpa, wait_event, wait_threshold, comp_event, comp_count,
					   num_threads, func, add, args, num_args);
}

doca_error_t doca_dpa_kernel_launch_update_set(struct doca_dpa *dpa, struct doca_sync_event *wait_event,
					       uint64_t wait_threshold, struct doca_sync_event *comp_event,
					       uint64_t comp_count, unsigned int num_threads,
					       doca_dpa_func_t *func, ...)
{
	doca_error_t result;
	va_list ap;

	va_start(ap, func);
	result = launch(dpa, wait_event, wait_threshold, comp_event, comp_count, num_threads, func,
			false, ap);
	va_end(ap);
	return result;
}

doca_error_t doca_dpa_kernel_launch_update_add(struct doca_dpa *dpa, struct doca_sync_event *wait_event,
					       uint64_t wait_threshold, struct doca_sync_event *comp_event,
					       uint64_t comp_count, unsigned int num_threads,
					       doca_dpa_func_t *func, ...)
{
	doca_error_t result;
	va_list ap;

	va_start(ap, func);
	result = launch(dpa, wait_event, wait_threshold, comp_event, comp_count, num_threads, func,
			true, ap);
	va_end(ap);
	return result;
}
