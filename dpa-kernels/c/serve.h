/*
 * dpakit: the receive loop every message-serving C kernel shares, the twin of the Rust kernels'
 * `serve` (dpa-kernels/src/serve.rs): the same calls in the same order, so a C kernel and its
 * Rust twin behave alike message for message.
 *
 * Freestanding: only DOCA's device API and dpakit_abi.h. A C kernel cannot panic; where a Rust
 * kernel would (an argument or local storage that is null or misaligned), which fails its DPA
 * context, a C kernel logs at CRIT and finishes its thread.
 */
#ifndef DPAKIT_SERVE_H
#define DPAKIT_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_comch_msgq.h>
#include <dpakit_abi.h>

#define DPAKIT_INLINE static inline __attribute__((always_inline))

/* Messages one activation of dpakit_serve answers at most (dpakit_dev::serve::BATCH). */
#define DPAKIT_SERVE_BATCH 64

/* Whether `addr` is a non-null address aligned to `align` (a power of two). */
DPAKIT_INLINE int dpakit_can_hold(uint64_t addr, uint64_t align)
{
	return addr != 0 && (addr & (align - 1)) == 0;
}

/* Logs why `kernel` cannot go on and finishes its thread. */
DPAKIT_INLINE void dpakit_fail(const char *kernel, const char *why)
{
	DOCA_DPA_DEV_LOG_CRIT("%s: %s; finishing the thread\n", kernel, why);
	doca_dpa_dev_thread_finish();
}

/*
 * The thread argument as a pointer to its block of `align`-byte alignment, or NULL after
 * finishing the thread when it cannot be one (the caller returns at once).
 */
DPAKIT_INLINE const void *dpakit_arg(const char *kernel, uint64_t arg, uint64_t align)
{
	if (!dpakit_can_hold(arg, align)) {
		dpakit_fail(kernel,
			    "thread argument is not the device address of its block (null or misaligned)");
		return NULL;
	}
	return (const void *)(uintptr_t)arg;
}

/* Acks every completion waiting on a DPA completion context. */
DPAKIT_INLINE void dpakit_drain(doca_dpa_dev_completion_t completion)
{
	doca_dpa_dev_completion_element_t element;
	uint64_t n = 0;

	while (doca_dpa_dev_get_completion(completion, &element))
		n++;
	if (n > 0)
		doca_dpa_dev_completion_ack(completion, n);
}

/* The immediate of a received message, its length capped at 32 bytes (0 when there is none). */
DPAKIT_INLINE const uint8_t *dpakit_imm(doca_dpa_dev_comch_consumer_completion_element_t element,
					uint32_t *len)
{
	uint32_t n = 0;
	const uint8_t *imm = doca_dpa_dev_comch_consumer_get_completion_imm(element, &n);

	if (imm == NULL || n == 0) {
		*len = 0;
		return imm;
	}
	*len = n < DPAKIT_MAX_IMM_DATA_LEN ? n : DPAKIT_MAX_IMM_DATA_LEN;
	return imm;
}

/* The immediate of a received message as a message, zero-filled past what arrived. */
DPAKIT_INLINE struct dpakit_imm_message
dpakit_message(doca_dpa_dev_comch_consumer_completion_element_t element)
{
	struct dpakit_imm_message msg = {0};
	uint8_t *bytes = (uint8_t *)&msg;
	uint32_t len;
	const uint8_t *imm = dpakit_imm(element, &len);

	for (uint32_t i = 0; i < len; i++)
		bytes[i] = imm[i];
	return msg;
}

/*
 * Answers one message: exactly one send (or copy with immediate) through `producer` to
 * `path->cpu_consumer_id` with `flags`. `ctx` is the kernel's argument block.
 */
typedef void (*dpakit_reply_fn)(const void *ctx, const struct dpakit_msgq_path_args *path,
				doca_dpa_dev_comch_consumer_completion_element_t element,
				uint32_t flags);

/*
 * Serves the messages waiting on `path`, at most DPAKIT_SERVE_BATCH of them (other threads get
 * their turn; one still waiting triggers the thread again at once), then re-arms and
 * reschedules.
 *
 * A reply needs a receive posted on the CPU consumer: with none, the message stays queued and
 * re-arming with it waiting triggers the thread again, so it is answered on a later activation.
 * Each reply goes out before its completion is acked (the immediate dies with the ack), then the
 * consumer gets its credit back. With a dpakit_serve_state in the thread's local storage only
 * one reply in `report_every` reports a completion (the others carry OPTIMIZE_REPORTS); without
 * one, every reply reports. Reports are released right after each reporting reply.
 */
DPAKIT_INLINE void dpakit_serve(const char *kernel, const void *ctx,
				const struct dpakit_msgq_path_args *path, dpakit_reply_fn reply)
{
	uint64_t storage = doca_dpa_dev_thread_get_local_storage();
	struct dpakit_serve_state *state = NULL;

	if (storage != 0) {
		if (!dpakit_can_hold(storage, _Alignof(struct dpakit_serve_state))) {
			dpakit_fail(kernel, "thread local storage is not the device address of its "
					    "block (misaligned)");
			return;
		}
		state = (struct dpakit_serve_state *)(uintptr_t)storage;
	}

	for (uint32_t served = 0; served < DPAKIT_SERVE_BATCH; served++) {
		doca_dpa_dev_comch_consumer_completion_element_t element;
		int reports = 1;
		uint32_t flags;

		if (doca_dpa_dev_comch_producer_is_consumer_empty(path->producer,
								  path->cpu_consumer_id))
			break;
		if (!doca_dpa_dev_comch_consumer_get_completion(path->consumer_completion, &element))
			break;
		if (state != NULL) {
			state->sends += 1;
			reports = state->report_every <= 1 || state->sends % state->report_every == 0;
		}
		/* A reporting send reports even when the path asked for OPTIMIZE_REPORTS: without
		 * one in every queue's worth, the producer's send queue overflows. */
		flags = reports ? path->submit_flags & ~DPAKIT_SUBMIT_FLAG_OPTIMIZE_REPORTS
				: path->submit_flags | DPAKIT_SUBMIT_FLAG_OPTIMIZE_REPORTS;
		reply(ctx, path, element, flags);
		doca_dpa_dev_comch_consumer_completion_ack(path->consumer_completion, 1);
		doca_dpa_dev_comch_consumer_ack(path->consumer, 1);
		if (reports)
			dpakit_drain(path->producer_completion);
	}
	doca_dpa_dev_comch_consumer_completion_request_notification(path->consumer_completion);
	doca_dpa_dev_thread_reschedule();
}

#endif /* DPAKIT_SERVE_H */
