/*
 * What the counter program's host and DPA code share: the kernel's argument block, which the
 * host writes into DPA memory (doca_dpa_mem_alloc + doca_dpa_h2d_memcpy).
 */
#ifndef COUNTER_H
#define COUNTER_H

#include <stdint.h>

struct counter_args {
	uint64_t consumer_comp; /* doca_dpa_dev_comch_consumer_completion_t */
	uint64_t consumer;      /* doca_dpa_dev_comch_consumer_t */
	uint64_t producer;      /* doca_dpa_dev_comch_producer_t */
	uint64_t producer_comp; /* doca_dpa_dev_completion_t */
	uint64_t total;         /* doca_dpa_dev_uintptr_t of the running total, in DPA memory */
	uint32_t cpu_consumer_id;
	uint32_t reserved;
};

#endif
