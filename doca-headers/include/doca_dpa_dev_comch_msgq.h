/*
 * dpakit soft device: the DPA device API for Comch MsgQ consumers and producers.
 */
#ifndef DOCA_DPA_DEV_COMCH_MSGQ_H
#define DOCA_DPA_DEV_COMCH_MSGQ_H

#include <stddef.h>
#include <stdint.h>
#include <doca_types.h>
#include <doca_dpa_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Posts num_msg more receives (credits): CPU producers may send that many more messages. */
void doca_dpa_dev_comch_consumer_ack(doca_dpa_dev_comch_consumer_t consumer, uint32_t num_msg);

/* Takes the next received message; non-zero when one was taken. */
int doca_dpa_dev_comch_consumer_get_completion(
	doca_dpa_dev_comch_consumer_completion_t consumer_comp_handle,
	doca_dpa_dev_comch_consumer_completion_element_t *comp_element);

/* The immediate data of an element and its length; valid until the element is acked. */
const uint8_t *
doca_dpa_dev_comch_consumer_get_completion_imm(doca_dpa_dev_comch_consumer_completion_element_t comp_element,
					       uint32_t *imm_length);

/* The id of the CPU producer that sent the element. */
uint32_t doca_dpa_dev_comch_consumer_get_completion_producer_id(
	doca_dpa_dev_comch_consumer_completion_element_t comp_element);

/* Releases num_comp elements; their immediate pointers become invalid. */
void doca_dpa_dev_comch_consumer_completion_ack(
	doca_dpa_dev_comch_consumer_completion_t consumer_comp_handle, uint64_t num_comp);

/* Re-arms the consumer completion so the next message triggers the attached thread. */
void doca_dpa_dev_comch_consumer_completion_request_notification(
	doca_dpa_dev_comch_consumer_completion_t consumer_comp_handle);

/* Sends imm_length (at most 32) bytes to a CPU consumer; flags are doca_dpa_dev_submit_flag. */
void doca_dpa_dev_comch_producer_post_send_imm_only(doca_dpa_dev_comch_producer_t producer,
						    uint32_t consumer_id, const uint8_t *imm,
						    uint32_t imm_length, uint32_t flags);

/* Copies length bytes between two mmaps, then sends an immediate to a CPU consumer. */
void doca_dpa_dev_comch_producer_dma_copy(doca_dpa_dev_comch_producer_t producer,
					  uint32_t consumer_id, doca_dpa_dev_mmap_t dst_mmap,
					  uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap,
					  uint64_t src_addr, size_t length, const uint8_t *imm,
					  uint32_t imm_length, uint32_t flags);

/* Non-zero when the CPU consumer has no receive posted. */
int doca_dpa_dev_comch_producer_is_consumer_empty(doca_dpa_dev_comch_producer_t producer,
						  uint32_t consumer_id);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_COMCH_MSGQ_H */
