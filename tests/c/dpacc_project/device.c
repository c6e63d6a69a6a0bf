/*
 * The counter program's DPA code: a thread kernel that adds each number the host sends to a
 * total kept in DPA memory and answers with the total so far, and two RPCs (post the DPA
 * consumer's credits; read the total). Built by dpacc for the DPA, or by the soft SDK's dpacc
 * for the soft device.
 */
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_comch_msgq.h>

#include "counter.h"

__dpa_global__ void counter_kernel(uint64_t arg)
{
	const struct counter_args *args = (const struct counter_args *)(uintptr_t)arg;
	volatile uint64_t *total = (volatile uint64_t *)(uintptr_t)args->total;
	doca_dpa_dev_comch_consumer_completion_element_t element;
	doca_dpa_dev_completion_element_t report;

	/* Answer only while the host has a receive posted; the rest waits for the next activation. */
	while (!doca_dpa_dev_comch_producer_is_consumer_empty(args->producer, args->cpu_consumer_id) &&
	       doca_dpa_dev_comch_consumer_get_completion(args->consumer_comp, &element)) {
		uint32_t len = 0;
		const uint8_t *imm = doca_dpa_dev_comch_consumer_get_completion_imm(element, &len);
		uint64_t value = 0;

		for (uint32_t i = 0; i < len && i < sizeof(value); i++)
			value |= (uint64_t)imm[i] << (8 * i);
		*total += value;
		uint64_t answer = *total;

		doca_dpa_dev_comch_producer_post_send_imm_only(args->producer, args->cpu_consumer_id,
							       (uint8_t *)&answer, sizeof(answer),
							       DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
		doca_dpa_dev_comch_consumer_completion_ack(args->consumer_comp, 1);
		doca_dpa_dev_comch_consumer_ack(args->consumer, 1);
		while (doca_dpa_dev_get_completion(args->producer_comp, &report))
			doca_dpa_dev_completion_ack(args->producer_comp, 1);
	}
	doca_dpa_dev_comch_consumer_completion_request_notification(args->consumer_comp);
	doca_dpa_dev_thread_reschedule();
}

__dpa_rpc__ uint64_t counter_credits(uint64_t consumer, uint64_t count)
{
	doca_dpa_dev_comch_consumer_ack((doca_dpa_dev_comch_consumer_t)consumer, (uint32_t)count);
	return 0;
}

__dpa_rpc__ uint64_t counter_read(uint64_t total)
{
	return *(volatile uint64_t *)(uintptr_t)total;
}
